// Network rows: one row per request hop and one per WebSocket, from the same joins as the HAR
// export (src/har), with the one-line summary the list and the detail pane show.
import { firstOf, joinExchanges, utf8ByteLength, type EnvelopeOf } from '../../har/index.js'
import { SocketJoin, type SocketExchange } from '../../har/websockets.js'
import { headerValue } from '../../util/headers.js'
import type { Envelope } from './data.js'

export interface NetRow {
  kind: 'net'
  /** seq of the first envelope of the hop (request, or the orphan response/failure). */
  seq: number
  ts: number
  request?: EnvelopeOf<'network_request'>
  response?: EnvelopeOf<'network_response'>
  failure?: EnvelopeOf<'network_loading_failed'>
  /** The status and headers of a body that never completed. */
  incomplete?: EnvelopeOf<'network_response_incomplete'>
  /** Set when a later hop with the same request id redirected away from this one. */
  redirectedTo?: string
  /** The status of that redirect. */
  redirectStatus?: number
  envelopes: Envelope[]
}

export function joinNetwork(events: readonly Envelope[]): NetRow[] {
  return joinExchanges(events).map(ex => ({
    kind: 'net',
    ...firstOf(ex),
    request: ex.request,
    response: ex.response,
    failure: ex.failure,
    ...(ex.incomplete ? { incomplete: ex.incomplete } : {}),
    redirectedTo: ex.redirectedTo?.url,
    ...(ex.redirectedTo?.status !== undefined ? { redirectStatus: ex.redirectedTo.status } : {}),
    envelopes: ex.envelopes,
  }))
}

export interface NetSummary {
  url: string
  /** The document that made the request (its origin is dropped from the list's URL column). */
  documentUrl?: string
  method: string
  status?: number
  mime?: string
  size?: number
  durationMs?: number
  error?: string
  resourceType?: string
}

export function netSummary(r: NetRow): NetSummary {
  const req = r.request?.event.data
  const res = r.response?.event.data
  const fail = r.failure?.event.data
  const inc = r.incomplete?.event.data
  const end = r.response ?? r.failure ?? r.incomplete
  const len = headerValue(res?.headers, 'content-length')
  const body = res?.body
  return {
    url: req?.url ?? res?.url ?? fail?.url ?? '',
    ...(req?.document_url !== undefined ? { documentUrl: req.document_url } : {}),
    method: req?.method ?? res?.method ?? 'GET',
    status: res?.status ?? inc?.status ?? r.redirectStatus,
    mime: res?.mime_type ?? inc?.mime_type,
    size: len !== undefined && /^\d+$/.test(len) ? Number(len) : body !== undefined ? utf8ByteLength(body) : undefined,
    durationMs: r.request && end ? Math.max(0, (end.event.ts - r.request.event.ts) / 1000) : undefined,
    error: fail?.error_text,
    resourceType: req?.resource_type ?? res?.resource_type ?? fail?.resource_type,
  }
}

// WebSockets: one row per socket, its frames in the detail pane.

export interface SocketRow {
  kind: 'socket'
  seq: number
  ts: number
  socket: SocketExchange
  envelopes: Envelope[]
}

export function joinSockets(events: readonly Envelope[]): SocketRow[] {
  const join = new SocketJoin()
  const rows = new Map<SocketExchange, SocketRow>()
  for (const e of events) {
    if (!e.event.type.startsWith('network_websocket_')) continue
    const begun = join.add(e)
    if (begun) rows.set(begun, { kind: 'socket', seq: e.seq, ts: e.event.ts, socket: begun, envelopes: [e] })
    else if (join.touched) rows.get(join.touched)?.envelopes.push(e)
  }
  return [...rows.values()]
}
