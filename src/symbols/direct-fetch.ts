// The daemon's own loads of scripts and maps that may not go through the page (fetch-rule.ts): plain
// node:http(s) GETs without cookies or credentials. The host name is resolved in the socket's
// `lookup`, and refused there unless every address is public, so the address checked is the one
// connected to; a name that does not resolve, or not within 2 s, is refused too. Redirects are
// followed by hand, each hop put through the rule again, at most 5. One deadline covers the whole
// load; the body is decoded (gzip, deflate, br) and streamed to the caller, who stops it at the cap.
import http from 'node:http'
import https from 'node:https'
import { lookup as systemLookup } from 'node:dns/promises'
import { isIP, type LookupFunction } from 'node:net'
import type { Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { withTimeout } from '../util/with-timeout.js'
import { fetchRoute, isPublicAddress } from './fetch-rule.js'
import type { FetchOutcome, ResourceLoader } from './learn.js'
import { shownUrl } from './script-refs.js'

export interface DirectFetchOptions {
  /** Host name to addresses (default: the system resolver); tests pin it. */
  resolveHost?: (host: string) => Promise<string[]>
  /**
   * The address actually dialled for a checked one (default: itself). Tests only: it lets a
   * public-looking address stand for a local test server, after the rule has judged it.
   */
  dial?: (address: string) => string
  dnsTimeoutMs?: number
}

export const MAX_REDIRECTS = 5
export const DNS_TIMEOUT_MS = 2000

/** Why a connection was not made: carried on the socket's error to the outcome. */
class Refused extends Error {
  constructor(readonly outcome: Extract<FetchOutcome, { ok: false }>) {
    super(outcome.message)
  }
}

type Hop = { next: string } | FetchOutcome

export function directLoader(opts: DirectFetchOptions = {}): ResourceLoader {
  const resolve = opts.resolveHost ?? (host => systemLookup(host, { all: true }).then(a => a.map(x => x.address)))
  const dial = opts.dial ?? (a => a)
  const dnsMs = opts.dnsTimeoutMs ?? DNS_TIMEOUT_MS

  /** The addresses of a name, all public, or a refusal (no address, a private one, too slow). */
  async function checked(host: string): Promise<string[]> {
    let addresses: string[]
    try {
      addresses = await withTimeout(resolve(host), dnsMs)
    } catch (err) {
      if ((err as Error).name === 'TimeoutError')
        throw new Refused({ ok: false, reason: 'timeout', message: `${host} did not resolve within ${dnsMs} ms` })
      const code = (err as { code?: string }).code ?? 'failed'
      throw new Refused({ ok: false, reason: 'fetch_failed', message: `${host} did not resolve (${code})` })
    }
    if (addresses.length === 0)
      throw new Refused({ ok: false, reason: 'fetch_failed', message: `${host} did not resolve (no address)` })
    const inside = addresses.find(a => !isPublicAddress(a))
    if (inside !== undefined)
      throw new Refused({
        ok: false,
        reason: 'private_address',
        message: `${host} resolves to ${inside}, a private address`,
      })
    return addresses
  }

  const lookup: LookupFunction = (host, options, callback) => {
    checked(host).then(
      addresses => {
        const entries = addresses.map(a => ({ address: dial(a), family: isIP(a) === 6 ? 6 : 4 }))
        if (options.all) callback(null, entries)
        else callback(null, entries[0]!.address, entries[0]!.family)
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    )
  }

  return {
    async fetch(url, onChunk, timeoutMs): Promise<FetchOutcome> {
      const ctl = new AbortController()
      const timer = setTimeout(() => ctl.abort(), timeoutMs)
      try {
        let current = url
        for (let hop = 0; ; hop++) {
          // The whole rule again for every hop, without a page: the daemon's fetch never uses one.
          const route = fetchRoute(new URL(current), undefined)
          if (route.via === 'refused') {
            if (hop === 0) return { ok: false, ...route.refusal }
            const message = `redirected to ${shownUrl(current)}: ${route.refusal.message}`
            return { ok: false, reason: route.refusal.reason, message }
          }
          const got = await once(new URL(current), onChunk, ctl.signal, lookup)
          if (!('next' in got)) return got
          if (hop >= MAX_REDIRECTS)
            return { ok: false, reason: 'fetch_failed', message: `more than ${MAX_REDIRECTS} redirects` }
          current = got.next
        }
      } catch (err) {
        if (err instanceof Refused) return err.outcome
        if (ctl.signal.aborted) return { ok: false, reason: 'timeout', message: `not loaded within ${timeoutMs} ms` }
        const code = (err as { code?: string }).code
        return { ok: false, reason: 'fetch_failed', message: code ?? (err as Error).message }
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/** One GET: a redirect's target, or the outcome (the body streamed to onChunk). */
function once(url: URL, onChunk: (text: string) => boolean, signal: AbortSignal, lookup: LookupFunction): Promise<Hop> {
  return new Promise<Hop>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'GET',
      headers: { accept: '*/*', 'accept-encoding': 'gzip, deflate, br', 'user-agent': 'browser-telemetry' },
      agent: false,
      lookup,
      signal,
    })
    req.on('error', err => reject(err.cause instanceof Refused ? err.cause : err))
    req.on('response', res => {
      const status = res.statusCode ?? 0
      const location = res.headers.location
      if (status >= 300 && status < 400 && location) {
        res.destroy()
        try {
          return resolve({ next: new URL(location, url).href })
        } catch {
          return resolve({
            ok: false,
            reason: 'fetch_failed',
            message: `HTTP ${status} to a location that is not a URL`,
          })
        }
      }
      if (status < 200 || status >= 300) {
        res.destroy()
        const reason = status === 404 || status === 410 ? 'not_found' : 'fetch_failed'
        return resolve({ ok: false, reason, message: `HTTP ${status}` })
      }
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(res.headers))
        if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v
      const body = decoded(res, headers['content-encoding'])
      const decoder = new TextDecoder()
      let stopped = false
      body.on('data', (chunk: Buffer) => {
        if (stopped) return
        const text = decoder.decode(chunk, { stream: true })
        if (text !== '' && !onChunk(text)) {
          stopped = true
          res.destroy()
          resolve({ ok: true, status, headers })
        }
      })
      body.on('end', () => {
        if (stopped) return
        const rest = decoder.decode()
        if (rest !== '') onChunk(rest)
        resolve({ ok: true, status, headers })
      })
      body.on('error', err => {
        if (!stopped) reject(err)
      })
      res.on('error', err => {
        if (!stopped) reject(err)
      })
    })
    req.end()
  })
}

function decoded(res: http.IncomingMessage, encoding: string | undefined): Readable {
  const e = encoding?.trim().toLowerCase()
  if (e === 'gzip' || e === 'x-gzip') return res.pipe(createGunzip())
  if (e === 'deflate') return res.pipe(createInflate())
  if (e === 'br') return res.pipe(createBrotliDecompress())
  return res
}
