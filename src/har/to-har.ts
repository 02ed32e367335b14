// Network envelopes -> HAR 1.2. Pure: no I/O, no clock. Envelopes may come in any order and any mix
// of categories; only network_* and page_* events are used. Each exchange of the shared join
// (exchanges.ts: one per request hop) is one entry. One idea: HAR entries from the join, field by
// field as HAR 1.2 defines them; the join itself and WebSocket frames live beside it.
import type { Envelope, TelemetryEvent } from '../events/index.js'
import { headerValue } from '../util/headers.js'
import { urlTitle } from '../util/url-title.js'
import { ExchangeJoin, exchangeKey, firstOf, type Exchange } from './exchanges.js'
import { harUri } from './uri.js'
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
  const builder = new HarBuilder()
  for (const e of [...envelopes].sort((a, b) => a.seq - b.seq)) builder.add(e)
  const { entries, pages } = builder.finish()
  entries.sort((a, b) => a.startedDateTime.localeCompare(b.startedDateTime) || a._seq[0]! - b._seq[0]!)
  return {
    log: {
      version: '1.2',
      creator: opts.creator ?? DEFAULT_CREATOR,
      pages,
      entries,
      ...(opts.comment !== undefined ? { comment: opts.comment } : {}),
    },
  }
}

/** How much a streamed export (HarBuilder in stream mode) may hold while it waits for exchanges to complete. */
export interface HarStreamBounds {
  /** Stored bytes of the envelopes of exchanges and sockets not yet written; past it the oldest go out early. */
  maxHeldBytes: number
  /** Pages kept (they are written last, with their load timings); later navigations open no page. */
  maxPages: number
  /** A completed exchange whose page may still be announced waits this long (event time, µs) at most. */
  settleUs: number
}

interface HttpHeld {
  kind: 'http'
  ex: Exchange
  /** Stored bytes of its envelopes (the memory bound counts these). */
  bytes: number
  /** Event time it was over (response, failure or the next redirect hop). */
  doneUs?: number
}
interface SocketHeld {
  kind: 'ws'
  s: SocketExchange
  bytes: number
  doneUs?: number
}
type Held = HttpHeld | SocketHeld

/**
 * The converter, incremental: add() envelopes in seq order. Without bounds (toHar) everything is held
 * until finish(). With bounds (a streamed export of any length), ready() hands out the entries whose
 * exchange is over, in the order the exchanges began, so only open exchanges and sockets (and the
 * pages) are held; when even those pass maxHeldBytes the oldest is written as it is (an exchange
 * without its response; a socket's messages so far, the rest continuing in a later entry).
 */
export class HarBuilder {
  private readonly join: ExchangeJoin
  private readonly sockets: SocketJoin
  private readonly held: Held[] = []
  private head = 0
  private bytesHeld = 0
  private nowUs = 0
  private readonly heldOf = new Map<Exchange | SocketExchange, Held>()
  /** The open exchange per key: the one a response or failure completes. */
  private readonly openHttp = new Map<string, HttpHeld>()
  private readonly out: HarEntry[] = []
  private readonly pageOfSocket = new Map<SocketExchange, PageState>()
  private readonly pages: PageState[] = []
  private readonly pageByLoader = new Map<string, PageState>()
  private readonly pageByNav = new Map<string, PageState>()
  private readonly currentPage = new Map<string, PageState>()
  private readonly pageOfExchange = new Map<Exchange, PageState>()
  /** Navigations that opened no page (maxPages reached). */
  pagesNotKept = 0
  /** Exchanges and sockets written before they were over (maxHeldBytes reached). */
  writtenEarly = 0

  constructor(private readonly bounds?: HarStreamBounds) {
    this.join = new ExchangeJoin({ retain: false })
    this.sockets = new SocketJoin({ retain: false })
  }

  private pageFor(ctx: {
    loader_id?: string
    target_id?: string
    session_id?: string
    nav_seq?: number
  }): PageState | undefined {
    const target = targetKeyOf(ctx)
    return (
      (ctx.loader_id !== undefined ? this.pageByLoader.get(ctx.loader_id) : undefined) ??
      (ctx.nav_seq !== undefined ? this.pageByNav.get(`${target}\u0000${ctx.nav_seq}`) : undefined) ??
      this.currentPage.get(target)
    )
  }

  private hold(item: Held): void {
    this.held.push(item)
    this.heldOf.set(item.kind === 'http' ? item.ex : item.s, item)
  }

  add(envelope: Envelope, bytes = 0): void {
    const { event } = envelope
    this.nowUs = event.ts
    switch (event.type) {
      case 'page_navigation': {
        const d = event.data
        if (d.parent_frame_id !== undefined || (d.target_type !== undefined && d.target_type !== 'page')) break
        if (this.pages.length >= (this.bounds?.maxPages ?? Infinity)) {
          this.pagesNotKept++
          break
        }
        const targetKey = targetKeyOf(d)
        const state: PageState = {
          page: {
            startedDateTime: isoOfUs(event.ts),
            id: `page_${this.pages.length + 1}`,
            title: urlTitle(d.url ?? ''),
            pageTimings: { onContentLoad: -1, onLoad: -1 },
            ...(d.target_id !== undefined ? { _targetId: d.target_id } : {}),
          },
          startUs: event.ts,
          targetKey,
        }
        this.pages.push(state)
        this.currentPage.set(targetKey, state)
        if (d.loader_id !== undefined) this.pageByLoader.set(d.loader_id, state)
        // The document request usually precedes page_navigation (it was sent before the commit):
        // attach the exchanges of the same loader still held to this page.
        for (let i = this.head; i < this.held.length; i++) {
          const h = this.held[i]!
          if (h.kind === 'http' && d.loader_id !== undefined && h.ex.request?.event.data.loader_id === d.loader_id)
            this.pageOfExchange.set(h.ex, state)
        }
        break
      }
      case 'page_dom_content_loaded':
      case 'page_load': {
        const d = event.data
        const state =
          (d.loader_id !== undefined ? this.pageByLoader.get(d.loader_id) : undefined) ??
          this.currentPage.get(targetKeyOf(d))
        if (!state) break
        if (d.nav_seq !== undefined) this.pageByNav.set(`${state.targetKey}\u0000${d.nav_seq}`, state)
        const ms = round3((event.ts - state.startUs) / 1000)
        const field = event.type === 'page_load' ? 'onLoad' : 'onContentLoad'
        if (state.page.pageTimings[field] === -1 && ms >= 0) state.page.pageTimings[field] = ms
        break
      }
      // An exchange or a socket belongs to the page current when it began.
      case 'network_request':
      case 'network_response':
      case 'network_response_incomplete':
      case 'network_loading_failed': {
        const key = exchangeKey(event.data)
        const prev = this.openHttp.get(key)
        const begun = this.join.add(envelope)
        let item = prev
        if (begun) {
          const p = this.pageFor(event.data)
          if (p) this.pageOfExchange.set(begun, p)
          item = { kind: 'http', ex: begun, bytes: 0 }
          this.hold(item)
          this.openHttp.set(key, item)
          // A new hop of the same request id closes the one before it (a redirect).
          if (prev && event.type === 'network_request') prev.doneUs ??= event.ts
        }
        if (item) {
          item.bytes += bytes
          this.bytesHeld += bytes
          if (
            item.ex.response ||
            item.ex.failure ||
            (item.ex.incomplete && item.ex.incomplete.event.data.reason !== 'failed')
          ) {
            item.doneUs ??= event.ts
            this.openHttp.delete(key)
          }
        }
        break
      }
      case 'network_websocket_created':
      case 'network_websocket_handshake':
      case 'network_websocket_frame':
      case 'network_websocket_closed':
      case 'network_websocket_error': {
        const begun = this.sockets.add(envelope)
        if (begun) {
          const p = this.pageFor(begun.ctx)
          if (p) this.pageOfSocket.set(begun, p)
          this.hold({ kind: 'ws', s: begun, bytes: 0 })
        }
        const touched = this.sockets.touched
        const item = touched ? this.heldOf.get(touched) : undefined
        if (item) {
          item.bytes += bytes
          this.bytesHeld += bytes
          if (touched!.endUs !== undefined) item.doneUs ??= event.ts
        }
        break
      }
      default:
        break
    }
    if (this.bounds) this.release(this.bounds)
  }

  private done(h: Held, bounds: HarStreamBounds): boolean {
    if (h.doneUs === undefined) return false
    if (h.kind === 'ws') return true
    const loader = h.ex.request?.event.data.loader_id
    return (
      loader === undefined ||
      this.pageOfExchange.has(h.ex) ||
      this.pageByLoader.has(loader) ||
      this.nowUs - h.doneUs >= bounds.settleUs
    )
  }

  private entryOf(h: Held): HarEntry {
    if (h.kind === 'http') return toEntry(h.ex, this.pageOfExchange.get(h.ex)?.page.id)
    return socketEntry(h.s, this.pageOfSocket.get(h.s)?.page.id, { headerList, isoOfUs })
  }

  private forgetItem(h: Held): void {
    this.bytesHeld -= h.bytes
    if (h.kind === 'http') {
      this.heldOf.delete(h.ex)
      this.pageOfExchange.delete(h.ex)
      if (this.openHttp.get(h.ex.key) === h) this.openHttp.delete(h.ex.key)
    } else {
      this.heldOf.delete(h.s)
      this.pageOfSocket.delete(h.s)
    }
  }

  private release(bounds: HarStreamBounds): void {
    // In the order the exchanges began, as far as they are over.
    while (this.head < this.held.length && this.done(this.held[this.head]!, bounds)) {
      const h = this.held[this.head++]!
      this.out.push(this.entryOf(h))
      this.forgetItem(h)
    }
    if (this.bytesHeld > bounds.maxHeldBytes) {
      // Over the bound: everything over goes out of order, then the oldest open ones as they are.
      const keep: Held[] = []
      for (let i = this.head; i < this.held.length; i++) {
        const h = this.held[i]!
        if (h.doneUs !== undefined) {
          this.out.push(this.entryOf(h))
          this.forgetItem(h)
        } else keep.push(h)
      }
      const open = keep.length
      let i = 0
      for (; i < open && this.bytesHeld > bounds.maxHeldBytes; i++) {
        const h = keep[i]!
        this.writtenEarly++
        this.out.push(this.entryOf(h))
        if (h.kind === 'http') {
          this.join.forget(h.ex)
          this.forgetItem(h)
        } else {
          // The socket stays open: its later messages go to a continuation entry.
          const page = this.pageOfSocket.get(h.s)
          this.forgetItem(h)
          h.s.messages = []
          h.s.seqs = []
          h.s.part = (h.s.part ?? 1) + 1
          const next: SocketHeld = { kind: 'ws', s: h.s, bytes: 0 }
          if (page) this.pageOfSocket.set(h.s, page)
          keep.push(next)
          this.heldOf.set(h.s, next)
        }
      }
      this.held.length = 0
      this.held.push(...keep.slice(i))
      this.head = 0
    } else if (this.head > 0) {
      // Released items must not stay reachable from the array (each can hold a body); what is left
      // is the open exchanges, few and bounded, so this copy is cheap.
      this.held.splice(0, this.head)
      this.head = 0
    }
  }

  /** Stored bytes of the exchanges and sockets held now (what maxHeldBytes bounds). */
  get heldBytes(): number {
    return this.bytesHeld
  }

  /** Entries ready to be written (stream mode), oldest exchange first; each is handed out once. */
  ready(): HarEntry[] {
    return this.out.splice(0)
  }

  /** The entries not handed out yet (open exchanges as they are), and the pages. */
  finish(): { entries: HarEntry[]; pages: HarPage[] } {
    for (let i = this.head; i < this.held.length; i++) this.out.push(this.entryOf(this.held[i]!))
    this.held.length = 0
    this.head = 0
    return { entries: this.out.splice(0), pages: this.pages.map(p => p.page) }
  }
}

/** Only the network_* and page_* events matter to a HAR; a reader can ask the API for just those. */
export const HAR_CATEGORIES = ['network', 'page'] as const

function toEntry(ex: Exchange, pageref: string | undefined): HarEntry {
  const req = ex.request?.event.data
  const inc = ex.incomplete?.event.data
  // Headers of a body that never completed stand in for the response (marked _incomplete).
  const res = ex.response?.event.data ?? inc
  const fail = ex.failure?.event.data
  const startUs = firstOf(ex).ts
  const endUs = ex.response?.event.ts ?? ex.failure?.event.ts ?? ex.incomplete?.event.ts ?? ex.redirectedTo?.ts
  // HAR requires a URI; a failure of a request in flight before attach carries none.
  const url = harUri(req?.url ?? res?.url ?? fail?.url ?? 'about:blank')
  const reqHeaders = headerList(req?.headers)
  const postData = req?.post_data
  const reqContentType = firstValue(headerValue(req?.headers, 'content-type'))
  const resHeaders = headerList(res?.headers)
  const body = ex.response?.event.data.body
  const declaredLength = Number(firstValue(headerValue(res?.headers, 'content-length')))
  const capturedBytes = body !== undefined ? utf8ByteLength(body) : undefined

  const comments: string[] = []
  if (!ex.request) comments.push('request not captured (in flight before the window or the debugger attached)')
  if (inc) comments.push(`body never completed (${inc.reason}): status and headers as they arrived`)
  if (!res && !ex.failure && ex.redirectedTo?.status === undefined && ex.redirectedTo)
    comments.push('redirect response not captured; redirectURL from the next hop')
  else if (!res && !ex.failure) comments.push('no response captured in this window')

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
      status: res?.status ?? ex.redirectedTo?.status ?? 0,
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
      redirectURL: harUri(ex.redirectedTo?.url ?? firstValue(headerValue(res?.headers, 'location')) ?? ''),
      headersSize: -1,
      bodySize: Number.isInteger(declaredLength) && declaredLength >= 0 ? declaredLength : -1,
      ...(fail ? { _error: fail.canceled ? `${fail.error_text} (canceled)` : fail.error_text } : {}),
      ...(inc ? { _incomplete: inc.reason } : {}),
    },
    cache: {},
    timings,
    ...(comments.length > 0 ? { comment: comments.join('; ') } : {}),
    _requestId: (req ?? res ?? fail)!.request_id,
    _seq: [ex.request?.seq, ex.response?.seq, ex.incomplete?.seq, ex.failure?.seq].filter(
      (s): s is number => s !== undefined,
    ),
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
