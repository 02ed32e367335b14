// Network envelopes -> HAR 1.2. Pure: no I/O, no clock. Envelopes may come in any order and any mix
// of categories; only network_* and page_* events are used.
//
// Join rule: network_request opens an exchange keyed by (session_id, request_id); the next
// network_response or network_loading_failed with that key completes it. Chromium reuses the
// request id across a redirect chain, so a second network_request with the same key (is_redirect)
// closes the open hop (its redirectURL is the new hop's URL) and opens the next one: each hop is one
// entry. Responses or failures without a captured request (in flight before the window or attach)
// still become one entry each, built from what they carry.
import type { Envelope, EventData, TelemetryEvent } from '../events/index.js'
import type { Har, HarEntry, HarNameValue, HarPage, HarTimings } from './types.js'

export interface ToHarOptions {
  creator?: { name: string; version: string }
  comment?: string
}

type RequestData = EventData<'network_request'>
type ResponseData = EventData<'network_response'>
type FailedData = EventData<'network_loading_failed'>

interface Exchange {
  key: string
  request?: { seq: number; ts: number; data: RequestData }
  response?: { seq: number; ts: number; data: ResponseData; truncated: boolean }
  failed?: { seq: number; ts: number; data: FailedData }
  /** Set when a later hop of the same request id followed this one. */
  redirectedTo?: { ts: number; url: string }
}

interface PageState {
  page: HarPage
  startUs: number
  targetKey: string
}

const DEFAULT_CREATOR = { name: 'browser-telemetry', version: '0.1.0' }

export function toHar(envelopes: readonly Envelope[], opts: ToHarOptions = {}): Har {
  const sorted = [...envelopes].sort((a, b) => a.seq - b.seq)
  const exchanges: Exchange[] = []
  const open = new Map<string, Exchange>()
  const pages: PageState[] = []
  const pageByLoader = new Map<string, PageState>()
  const pageByNav = new Map<string, PageState>()
  const currentPage = new Map<string, PageState>()
  const pageOfExchange = new Map<Exchange, PageState>()

  const pageFor = (ctx: {
    loader_id?: string
    target_id?: string
    session_id?: string
    nav_seq?: number
  }): PageState | undefined => {
    const target = targetKeyOf(ctx)
    return (
      (ctx.loader_id !== undefined ? pageByLoader.get(ctx.loader_id) : undefined) ??
      (ctx.nav_seq !== undefined ? pageByNav.get(`${target}\u0000${ctx.nav_seq}`) : undefined) ??
      currentPage.get(target)
    )
  }

  const start = (key: string, ex: Exchange, ctx: Parameters<typeof pageFor>[0]): void => {
    exchanges.push(ex)
    open.set(key, ex)
    const p = pageFor(ctx)
    if (p) pageOfExchange.set(ex, p)
  }

  for (const { seq, event } of sorted) {
    switch (event.type) {
      case 'page_navigation': {
        const d = event.data
        if (d.parent_frame_id !== undefined || (d.target_type !== undefined && d.target_type !== 'page')) break
        const targetKey = targetKeyOf(d)
        const state: PageState = {
          page: {
            startedDateTime: isoOfUs(event.ts),
            id: `page_${pages.length + 1}`,
            title: d.url ?? '',
            pageTimings: { onContentLoad: -1, onLoad: -1 },
            ...(d.target_id !== undefined ? { _targetId: d.target_id } : {}),
          },
          startUs: event.ts,
          targetKey,
        }
        pages.push(state)
        currentPage.set(targetKey, state)
        if (d.loader_id !== undefined) pageByLoader.set(d.loader_id, state)
        // The document request usually precedes page_navigation (it was sent before the commit):
        // attach already-open exchanges of the same loader to this page.
        for (const ex of exchanges) {
          if (d.loader_id !== undefined && ex.request?.data.loader_id === d.loader_id) pageOfExchange.set(ex, state)
        }
        break
      }
      case 'page_dom_content_loaded':
      case 'page_load': {
        const d = event.data
        const state =
          (d.loader_id !== undefined ? pageByLoader.get(d.loader_id) : undefined) ?? currentPage.get(targetKeyOf(d))
        if (!state) break
        if (d.nav_seq !== undefined) pageByNav.set(`${state.targetKey}\u0000${d.nav_seq}`, state)
        const ms = round3((event.ts - state.startUs) / 1000)
        const field = event.type === 'page_load' ? 'onLoad' : 'onContentLoad'
        if (state.page.pageTimings[field] === -1 && ms >= 0) state.page.pageTimings[field] = ms
        break
      }
      case 'network_request': {
        const d = event.data
        const key = exchangeKey(d)
        const prev = open.get(key)
        if (prev && !prev.response && !prev.failed) prev.redirectedTo = { ts: event.ts, url: d.url ?? '' }
        start(key, { key, request: { seq, ts: event.ts, data: d } }, d)
        break
      }
      case 'network_response': {
        const d = event.data
        const key = exchangeKey(d)
        const ex = open.get(key)
        const response = { seq, ts: event.ts, data: d, truncated: event.truncated === true }
        if (ex && !ex.response && !ex.failed) ex.response = response
        else start(key, { key, response }, d)
        break
      }
      case 'network_loading_failed': {
        const d = event.data
        const key = exchangeKey(d)
        const ex = open.get(key)
        const failed = { seq, ts: event.ts, data: d }
        if (ex && !ex.response && !ex.failed) ex.failed = failed
        else start(key, { key, failed }, d)
        break
      }
      default:
        break
    }
  }

  const entries = exchanges.map(ex => toEntry(ex, pageOfExchange.get(ex)?.page.id))
  entries.sort((a, b) => a.startedDateTime.localeCompare(b.startedDateTime) || a._seq[0]! - b._seq[0]!)
  return {
    log: {
      version: '1.2',
      creator: opts.creator ?? DEFAULT_CREATOR,
      pages: pages.map(p => p.page),
      entries,
      ...(opts.comment !== undefined ? { comment: opts.comment } : {}),
    },
  }
}

/** Only the network_* and page_* events matter to a HAR; a reader can ask the API for just those. */
export const HAR_CATEGORIES = ['network', 'page'] as const

function toEntry(ex: Exchange, pageref: string | undefined): HarEntry {
  const req = ex.request?.data
  const res = ex.response?.data
  const fail = ex.failed?.data
  const startUs = ex.request?.ts ?? ex.response?.ts ?? ex.failed!.ts
  const endUs = ex.response?.ts ?? ex.failed?.ts ?? ex.redirectedTo?.ts
  // HAR requires a URI; a failure of a request in flight before attach carries none.
  const url = req?.url ?? res?.url ?? fail?.url ?? 'about:blank'
  const reqHeaders = headerList(req?.headers)
  const postData = req?.post_data
  const reqContentType = headerValue(req?.headers, 'content-type')
  const resHeaders = headerList(res?.headers)
  const body = res?.body
  const declaredLength = Number(headerValue(res?.headers, 'content-length'))
  const capturedBytes = body !== undefined ? utf8ByteLength(body) : undefined

  const comments: string[] = []
  if (!ex.request) comments.push('request not captured (in flight before the window or the debugger attached)')
  if (!ex.response && !ex.failed && ex.redirectedTo)
    comments.push('redirect response not captured; redirectURL from the next hop')
  else if (!ex.response && !ex.failed) comments.push('no response captured in this window')

  const totalMs = endUs !== undefined ? Math.max(0, round3((endUs - startUs) / 1000)) : 0
  // What is captured is when the request was sent and when its body finished (or it failed), so
  // the whole exchange is reported as wait; the phases nobody observed are -1 as HAR 1.2 says.
  const timings: HarTimings = { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: totalMs, receive: 0 }

  const entry: HarEntry = {
    ...(pageref !== undefined ? { pageref } : {}),
    startedDateTime: isoOfUs(startUs),
    time: totalMs,
    request: {
      method: req?.method ?? res?.method ?? 'GET',
      url,
      httpVersion: '',
      cookies: [],
      headers: reqHeaders,
      queryString: queryOf(url),
      ...(postData !== undefined ? { postData: { mimeType: reqContentType ?? '', text: postData } } : {}),
      headersSize: -1,
      bodySize: postData !== undefined ? utf8ByteLength(postData) : 0,
    },
    response: {
      status: res?.status ?? 0,
      statusText: res?.status_text ?? '',
      httpVersion: '',
      cookies: [],
      headers: resHeaders,
      content: {
        size: Number.isInteger(declaredLength) && declaredLength >= 0 ? declaredLength : (capturedBytes ?? 0),
        mimeType: res?.mime_type ?? headerValue(res?.headers, 'content-type') ?? '',
        ...(body !== undefined ? { text: body } : {}),
        ...(body !== undefined && ex.response?.truncated ? { comment: 'body truncated at capture' } : {}),
      },
      redirectURL: ex.redirectedTo?.url ?? headerValue(res?.headers, 'location') ?? '',
      headersSize: -1,
      bodySize: Number.isInteger(declaredLength) && declaredLength >= 0 ? declaredLength : -1,
      ...(fail ? { _error: fail.canceled ? `${fail.error_text} (canceled)` : fail.error_text } : {}),
    },
    cache: {},
    timings,
    ...(comments.length > 0 ? { comment: comments.join('; ') } : {}),
    _requestId: (req ?? res ?? fail)!.request_id,
    _seq: [ex.request?.seq, ex.response?.seq, ex.failed?.seq].filter((s): s is number => s !== undefined),
  }
  const resourceType = req?.resource_type ?? res?.resource_type ?? fail?.resource_type
  // DevTools names resource types in lowercase ("document", "xhr", "fetch"); CDP capitalises them.
  if (resourceType !== undefined)
    entry._resourceType = resourceType === 'SignedExchange' ? 'signed-exchange' : resourceType.toLowerCase()
  const sessionId = req?.session_id ?? res?.session_id ?? fail?.session_id
  if (sessionId !== undefined) entry._sessionId = sessionId
  return entry
}

function exchangeKey(d: { session_id?: string; request_id: string }): string {
  return `${d.session_id ?? ''}\u0000${d.request_id}`
}

function targetKeyOf(d: { target_id?: string; session_id?: string }): string {
  return d.target_id ?? d.session_id ?? ''
}

/** Chromium joins repeated headers with "\n"; HAR lists each value as its own name/value pair. */
export function headerList(headers: Record<string, string> | undefined): HarNameValue[] {
  if (!headers) return []
  const out: HarNameValue[] = []
  for (const [name, value] of Object.entries(headers)) {
    for (const v of value.split('\n')) out.push({ name, value: v })
  }
  return out
}

function headerValue(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v.split('\n')[0]
  return undefined
}

function queryOf(url: string): HarNameValue[] {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  return [...parsed.searchParams].map(([name, value]) => ({ name, value }))
}

/** Unix microseconds -> ISO 8601 with milliseconds (HAR's startedDateTime). */
export function isoOfUs(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString()
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000
}

/** Narrowing helper for callers that filter a mixed stream before converting. */
export function isHarRelevant(event: TelemetryEvent): boolean {
  return (
    event.category === 'network' ||
    event.type === 'page_navigation' ||
    event.type === 'page_load' ||
    event.type === 'page_dom_content_loaded'
  )
}

/**
 * UTF-8 byte length of a string without Buffer, so this converter also runs in the browser
 * (the session viewer's HAR export bundles it). Lone surrogates count 3 bytes, as TextEncoder writes U+FFFD.
 */
export function utf8ByteLength(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4
      i++
    } else n += 3
  }
  return n
}
