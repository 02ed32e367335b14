// WebSocket connections -> HAR entries the way Chrome DevTools writes them: one entry per socket
// (the handshake: GET, status 101, both header sets) with its messages in `_webSocketMessages`
// ({type: send|receive, time in seconds, opcode, data}). Joined by (session, request id).
import { harUri } from './uri.js'
import type { Envelope } from '../events/index.js'
import type { HarEntry, HarNameValue, HarWebSocketMessage } from './types.js'

export interface SocketExchange {
  key: string
  requestId: string
  sessionId?: string
  url: string
  startUs: number
  endUs?: number
  status?: number
  statusText?: string
  requestHeaders?: Record<string, string>
  responseHeaders?: Record<string, string>
  messages: HarWebSocketMessage[]
  error?: string
  seqs: number[]
  /** Context of the created event, for the page an entry belongs to. */
  ctx: { loader_id?: string; target_id?: string; session_id?: string; nav_seq?: number }
  /** Set on the entries after the first of a socket a streamed export had to cut (memory bound). */
  part?: number
}

/** Incremental: add envelopes in seq order; add() returns the socket an envelope began. */
export class SocketJoin {
  readonly sockets: SocketExchange[] = []
  private readonly open = new Map<string, SocketExchange>()
  /** The socket the last add() began or extended (undefined when the envelope matched none). */
  touched: SocketExchange | undefined

  /** retain: false keeps only the open sockets (a streamed export lets closed ones go). */
  constructor(private readonly opts: { retain?: boolean } = {}) {}

  add(e: Envelope): SocketExchange | undefined {
    this.touched = undefined
    const ev = e.event
    switch (ev.type) {
      case 'network_websocket_created': {
        const d = ev.data
        const s: SocketExchange = {
          key: keyOf(d),
          requestId: d.request_id,
          url: d.url ?? '',
          startUs: ev.ts,
          messages: [],
          seqs: [e.seq],
          ctx: d,
          ...(d.session_id !== undefined ? { sessionId: d.session_id } : {}),
        }
        if (this.opts.retain !== false) this.sockets.push(s)
        this.open.set(s.key, s)
        this.touched = s
        return s
      }
      case 'network_websocket_handshake': {
        const s = this.open.get(keyOf(ev.data))
        if (!s) return undefined
        s.status = ev.data.status
        s.statusText = ev.data.status_text
        s.requestHeaders = ev.data.request_headers
        s.responseHeaders = ev.data.response_headers
        s.seqs.push(e.seq)
        this.touched = s
        return undefined
      }
      case 'network_websocket_frame': {
        const s = this.open.get(keyOf(ev.data))
        if (!s) return undefined
        s.messages.push({
          type: ev.data.direction === 'sent' ? 'send' : 'receive',
          time: ev.ts / 1e6,
          opcode: ev.data.opcode,
          data: ev.data.payload,
        })
        s.seqs.push(e.seq)
        this.touched = s
        return undefined
      }
      case 'network_websocket_error':
      case 'network_websocket_closed': {
        const key = keyOf(ev.data)
        const s = this.open.get(key)
        if (!s) return undefined
        s.seqs.push(e.seq)
        this.touched = s
        if (ev.type === 'network_websocket_error') s.error = ev.data.error_message
        else {
          s.endUs = ev.ts
          this.open.delete(key)
        }
        return undefined
      }
      default:
        return undefined
    }
  }
}

function keyOf(d: { session_id?: string; target_id?: string; request_id: string }): string {
  return `${d.session_id ?? d.target_id ?? ''}\u0000${d.request_id}`
}

export function socketEntry(
  s: SocketExchange,
  pageref: string | undefined,
  helpers: { headerList: (h: Record<string, string> | undefined) => HarNameValue[]; isoOfUs: (us: number) => string },
): HarEntry {
  const last = s.endUs ?? (s.messages.length > 0 ? s.messages.at(-1)!.time * 1e6 : s.startUs)
  const time = Math.max(0, Math.round(last - s.startUs) / 1000)
  return {
    ...(pageref !== undefined ? { pageref } : {}),
    startedDateTime: helpers.isoOfUs(s.startUs),
    time,
    request: {
      method: 'GET',
      url: harUri(s.url),
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: helpers.headerList(s.requestHeaders),
      queryString: [],
      headersSize: -1,
      bodySize: 0,
    },
    response: {
      status: s.status ?? 0,
      statusText: s.statusText ?? '',
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: helpers.headerList(s.responseHeaders),
      content: { size: 0, mimeType: '' },
      redirectURL: '',
      headersSize: -1,
      bodySize: -1,
      ...(s.error !== undefined ? { _error: s.error } : {}),
    },
    cache: {},
    timings: { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: time, receive: 0 },
    ...(s.part !== undefined
      ? { comment: `continued (part ${s.part}): earlier messages are in the entry before` }
      : s.status === undefined
        ? { comment: 'handshake not captured' }
        : {}),
    _resourceType: 'websocket',
    _requestId: s.requestId,
    ...(s.sessionId !== undefined ? { _sessionId: s.sessionId } : {}),
    _seq: s.seqs,
    _webSocketMessages: s.messages,
  }
}
