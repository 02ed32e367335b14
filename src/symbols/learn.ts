// Learning one script's map in the background, through the page that ran it: its text is streamed
// (a scanner keeps only the last sourceMappingURL line and the Debug ID), then its map is decoded
// from a data: URL or fetched under the fetch rule and the size cap, else taken from a response the
// daemon captured, and parsed under the map bounds. The outcome says what to remember of the script;
// SourceMaps (source-maps.ts) queues the scripts and keeps the outcomes.
import { lookup } from 'node:dns/promises'
import type { Context, SourceMapFailure } from '../events/index.js'
import { withTimeout } from '../util/with-timeout.js'
import type { CapturedLookup } from './captured.js'
import type { MapCache } from './map-cache.js'
import { contentId, type MapStore } from './map-store.js'
import {
  checkFetchUrl,
  decodeDataUrl,
  isPrivateHost,
  mapHeaderOf,
  sameOrigin,
  ScriptScanner,
  shownUrl,
} from './script-refs.js'
import { MapError, MapTextScanner, parseSourceMap, type MapLimits, type ParsedMap } from './source-map.js'

/** Loads a URL the way the page would (its frame, cookies and network); the collector implements it over CDP. */
export interface ResourceLoader {
  /** Streams the body's text to onChunk (false stops the read); resolves once the body ended or was stopped. */
  fetch(url: string, onChunk: (text: string) => boolean, timeoutMs: number): Promise<FetchOutcome>
}
export type FetchOutcome =
  | { ok: true; status: number; headers: Record<string, string> }
  /** `gone`: the page (target) went away meanwhile: nothing is known about the URL itself. */
  | { ok: false; reason: 'not_found' | 'fetch_failed' | 'timeout'; message: string; gone?: boolean }

/** The page whose frames named the scripts: its URL (the same-origin rule) and its context (the event's). */
export interface PageInfo {
  url?: string
  context: Context
}

/** What learning needs of the SourceMaps instance. */
export interface LearnContext {
  store: MapStore
  cache: MapCache
  limits: MapLimits
  maxMapBytes: number
  timeoutMs: number
  captured?: CapturedLookup
  resolveHost?: (host: string) => Promise<string[]>
  /** Parses a stored map into the cache (once). */
  load(id: string): Promise<ParsedMap | undefined>
  closed(): boolean
  /** Counts one load through the page. */
  fetched(): void
}

export type LearnOutcome =
  /** A map covers the script now; `inMemory`: its cache id, when the disk store had no room for it. */
  | { kind: 'mapped'; inMemory?: string }
  /** The script names no map (nothing to report). */
  | { kind: 'none' }
  /** The page went away before its script or map could be read: asked again by the next error. */
  | { kind: 'retry' }
  | { kind: 'failed'; reason: SourceMapFailure; message: string; mapUrl?: string }

const DNS_TIMEOUT_MS = 2000
const pause = () => new Promise<void>(resolve => setImmediate(resolve))
const failed = (reason: SourceMapFailure, message: string, mapUrl?: string): LearnOutcome => ({
  kind: 'failed',
  reason,
  message,
  ...(mapUrl !== undefined ? { mapUrl } : {}),
})

/** One script: its refs, then its map (in the order source-maps.ts states). */
export async function learnScript(
  ctx: LearnContext,
  url: string,
  page: PageInfo,
  loader: ResourceLoader,
): Promise<LearnOutcome> {
  const max = ctx.maxMapBytes
  const refused = await refusal(ctx, new URL(url), page.url)
  if (refused) return failed(refused.reason, `script ${refused.message}`)
  // The longest comment line kept: an inline map of up to max bytes, base64-encoded.
  const scanner = new ScriptScanner(Math.ceil((max * 4) / 3) + 1024)
  let scriptBytes = 0
  ctx.fetched()
  const script = await loader.fetch(
    url,
    chunk => {
      scanner.push(chunk)
      scriptBytes += chunk.length
      return scriptBytes <= 4 * max
    },
    ctx.timeoutMs,
  )
  let headers = script.ok ? script.headers : undefined
  if (!script.ok) headers = (await ctx.captured?.(url))?.headers
  const refs = scanner.finish()
  if (refs.debugId) await ctx.store.noteScriptDebugId(url, refs.debugId)
  // Uploads win: by the Debug ID the script carries first, then by its URL. Nothing is fetched.
  const upload = (refs.debugId && ctx.store.uploadedByDebugId(refs.debugId)) || ctx.store.uploadedByUrl(url)
  if (upload) {
    await ctx.load(upload.id)
    return { kind: 'mapped' }
  }
  if (!script.ok && !headers)
    return script.gone ? { kind: 'retry' } : failed(script.reason, `script: ${script.message}`)
  const ref = mapHeaderOf(headers) ?? refs.mapRef
  if (!ref) {
    if (scanner.tooLarge) return failed('too_large', `the inline map is over ${max} bytes`)
    if (scriptBytes > 4 * max)
      return failed('too_large', `the script is over ${4 * max} characters; its map comment was not read`)
    return { kind: 'none' }
  }
  let mapUrl: string
  try {
    mapUrl = /^data:/i.test(ref) ? ref : new URL(ref, url).href
  } catch {
    return failed('refused_url', `the map reference ${JSON.stringify(shownUrl(ref))} is not a URL`)
  }
  const text = await mapText(ctx, url, mapUrl, page, loader)
  if (text === 'gone') return { kind: 'retry' }
  if (typeof text !== 'string') return failed(text.reason, text.message, mapUrl)
  let parsed: ParsedMap
  try {
    parsed = await parseSourceMap(text, ctx.limits, pause)
  } catch (err) {
    if (!(err instanceof MapError)) throw err
    return failed(err.reason, err.message, mapUrl)
  }
  if (refs.debugId && parsed.debugId && parsed.debugId !== refs.debugId)
    return failed('debug_id_mismatch', `the script's Debug ID is ${refs.debugId}, the map's ${parsed.debugId}`, mapUrl)
  const bytes = Buffer.from(text)
  const entry = { url, map_url: shownUrl(mapUrl), ...(parsed.debugId ? { debug_id: parsed.debugId } : {}) }
  const stored = ctx.closed() ? undefined : await ctx.store.putFetched(bytes, entry)
  const id = stored?.id ?? contentId(bytes)
  ctx.cache.put(id, parsed)
  return stored ? { kind: 'mapped' } : { kind: 'mapped', inMemory: id }
}

/** A map's text: decoded from a data: URL, fetched through the page, else a captured response. */
async function mapText(
  ctx: LearnContext,
  scriptUrl: string,
  mapUrl: string,
  page: PageInfo,
  loader: ResourceLoader,
): Promise<string | 'gone' | { reason: SourceMapFailure; message: string }> {
  const max = ctx.maxMapBytes
  if (/^data:/i.test(mapUrl)) {
    const text = decodeDataUrl(mapUrl)
    if (text === undefined) return { reason: 'bad_json', message: 'the data: URL could not be decoded as UTF-8 text' }
    return text.length > max ? { reason: 'too_large', message: `the inline map is over ${max} bytes` } : text
  }
  const refused = await refusal(ctx, new URL(mapUrl), page.url ?? scriptUrl)
  if (refused) return refused
  const chunks: string[] = []
  let size = 0
  // Read as it arrives: a map that could only be refused once parsed stops the read there instead.
  const scanner = new MapTextScanner(ctx.limits.maxBytes)
  let refusedBy: MapError | undefined
  ctx.fetched()
  const got = await loader.fetch(
    mapUrl,
    chunk => {
      size += chunk.length
      if (size > max) return false
      try {
        scanner.push(chunk)
      } catch (err) {
        if (!(err instanceof MapError)) throw err
        refusedBy = err
        return false
      }
      chunks.push(chunk)
      return true
    },
    ctx.timeoutMs,
  )
  if (refusedBy) return { reason: refusedBy.reason, message: refusedBy.message }
  if (size > max) return { reason: 'too_large', message: `the map is over ${max} bytes (--sourcemap-max-bytes)` }
  if (got.ok) return chunks.join('')
  const captured = await ctx.captured?.(mapUrl)
  if (captured?.body !== undefined && captured.status >= 200 && captured.status < 300) return captured.body
  return got.gone ? 'gone' : { reason: got.reason, message: got.message }
}

/** The fetch rule (script-refs.ts), with host names resolved: a name of a private address counts as one. */
async function refusal(
  ctx: LearnContext,
  url: URL,
  pageUrl: string | undefined,
): Promise<{ reason: SourceMapFailure; message: string } | undefined> {
  const rule = checkFetchUrl(url, pageUrl)
  if (rule || sameOrigin(url, pageUrl) || isPrivateHost(url.hostname) || /^[\d.]+$|:/.test(url.hostname)) return rule
  const resolve = ctx.resolveHost ?? (host => lookup(host, { all: true }).then(a => a.map(x => x.address)))
  const addresses = await withTimeout(resolve(url.hostname), DNS_TIMEOUT_MS).catch(() => [] as string[])
  const inside = addresses.find(a => isPrivateHost(a))
  return inside
    ? {
        reason: 'private_address',
        message: `${url.host} resolves to ${inside}, a private address outside the page's origin`,
      }
    : undefined
}
