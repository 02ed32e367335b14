// Network envelopes -> HAR 1.2. Pure: no I/O, no clock. Envelopes may come in any order and any mix
// of categories; only network_* and page_* events are used. Each exchange of the shared join
// (exchanges.ts: one per request hop) is one entry.
import type { Envelope, TelemetryEvent } from '../events/index.js'
import { headerValue } from '../util/headers.js'
import { ExchangeJoin, firstOf, type Exchange } from './exchanges.js'
import { SocketJoin, socketEntry, type SocketExchange } from './websockets.js'
import type { Har, HarEntry, HarNameValue, HarPage, HarTimings } from './types.js'

export interface ToHarOptions {
  creator?: { name: string; version: string }
  comment?: string
}

interface PageState {
  page: HarPage
  startUs: number
  targetKey: string
}

const DEFAULT_CREATOR = { name: 'browser-telemetry', version: '0.1.0' }

export function toHar(envelopes: readonly Envelope[], opts: ToHarOptions = {}): Har {
  const sorted = [...envelopes].sort((a, b) => a.seq - b.seq)
  const join = new ExchangeJoin()
  const sockets = new SocketJoin()
  const pageOfSocket = new Map<SocketExchange, PageState>()
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

  const belongs = <K>(
    pages: Map<K, PageState>,
    begun: K | undefined,
    ctx: Parameters<typeof pageFor>[0] | undefined,
  ) => {
    const p = begun !== undefined && ctx ? pageFor(ctx) : undefined
    if (begun !== undefined && p) pages.set(begun, p)
  }

  for (const envelope of sorted) {
    const { event } = envelope
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
        for (const ex of join.exchanges) {
          if (d.loader_id !== undefined && ex.request?.event.data.loader_id === d.loader_id)
            pageOfExchange.set(ex, state)
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
      // An exchange or a socket belongs to the page current when it began.
      case 'network_request':
      case 'network_response':
      case 'network_loading_failed':
        belongs(pageOfExchange, join.add(envelope), event.data)
        break
      case 'network_websocket_created':
      case 'network_websocket_handshake':
      case 'network_websocket_frame':
      case 'network_websocket_closed':
      case 'network_websocket_error': {
        const begun = sockets.add(envelope)
        belongs(pageOfSocket, begun, begun?.ctx)
        break
      }
      default:
        break
    }
  }

  const entries = join.exchanges.map(ex => toEntry(ex, pageOfExchange.get(ex)?.page.id))
  for (const s of sockets.sockets) entries.push(socketEntry(s, pageOfSocket.get(s)?.page.id, { headerList, isoOfUs }))
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
  const req = ex.request?.event.data
  const res = ex.response?.event.data
  const fail = ex.failure?.event.data
  const startUs = firstOf(ex).ts
  const endUs = ex.response?.event.ts ?? ex.failure?.event.ts ?? ex.redirectedTo?.ts
  // HAR requires a URI; a failure of a request in flight before attach carries none.
  const url = req?.url ?? res?.url ?? fail?.url ?? 'about:blank'
  const reqHeaders = headerList(req?.headers)
  const postData = req?.post_data
  const reqContentType = firstValue(headerValue(req?.headers, 'content-type'))
  const resHeaders = headerList(res?.headers)
  const body = res?.body
  const declaredLength = Number(firstValue(headerValue(res?.headers, 'content-length')))
  const capturedBytes = body !== undefined ? utf8ByteLength(body) : undefined

  const comments: string[] = []
  if (!ex.request) comments.push('request not captured (in flight before the window or the debugger attached)')
  if (!ex.response && !ex.failure && ex.redirectedTo)
    comments.push('redirect response not captured; redirectURL from the next hop')
  else if (!ex.response && !ex.failure) comments.push('no response captured in this window')

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
        mimeType: res?.mime_type ?? firstValue(headerValue(res?.headers, 'content-type')) ?? '',
        ...(body !== undefined ? { text: body } : {}),
        ...(body !== undefined && ex.response?.event.truncated === true
          ? { comment: 'body truncated at capture' }
          : {}),
      },
      redirectURL: ex.redirectedTo?.url ?? firstValue(headerValue(res?.headers, 'location')) ?? '',
      headersSize: -1,
      bodySize: Number.isInteger(declaredLength) && declaredLength >= 0 ? declaredLength : -1,
      ...(fail ? { _error: fail.canceled ? `${fail.error_text} (canceled)` : fail.error_text } : {}),
    },
    cache: {},
    timings,
    ...(comments.length > 0 ? { comment: comments.join('; ') } : {}),
    _requestId: (req ?? res ?? fail)!.request_id,
    _seq: [ex.request?.seq, ex.response?.seq, ex.failure?.seq].filter((s): s is number => s !== undefined),
  }
  const resourceType = req?.resource_type ?? res?.resource_type ?? fail?.resource_type
  // DevTools names resource types in lowercase ("document", "xhr", "fetch"); CDP capitalises them.
  if (resourceType !== undefined)
    entry._resourceType = resourceType === 'SignedExchange' ? 'signed-exchange' : resourceType.toLowerCase()
  const sessionId = req?.session_id ?? res?.session_id ?? fail?.session_id
  if (sessionId !== undefined) entry._sessionId = sessionId
  return entry
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

/** Chromium joins repeated headers with "\n": the first of them. */
function firstValue(v: string | undefined): string | undefined {
  return v?.split('\n')[0]
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
