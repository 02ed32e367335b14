// WebSocket and EventSource traffic of one session (Network domain, already enabled for the network
// category): network_websocket_created / _handshake / _frame / _closed / _error and
// network_eventsource_message. Every event carries the socket's URL in `url` (learnt at creation),
// payloads are cut to the body cap, binary frames summarised by their size. A chatty socket goes
// through the pipeline's load shedding like every other producer.
import type { Protocol } from 'devtools-protocol'
import {
  Disposer,
  type Bounds,
  type Context,
  type Emit,
  type EventData,
  type TargetSession,
} from '../src/collector-kit.js'
import { cutBody } from './network-body.js'

/** Sockets and streams remembered per session (their URL); oldest forgotten first. */
const MAX_SOCKETS = 512

type Frame = Protocol.Network.WebSocketFrame

/** The payload as stored: text cut to maxBytes; binary (opcode 2, base64 in CDP) as its size. */
export function framePayload(
  frame: Frame,
  maxBytes: number,
): { payload: string; payload_bytes: number; truncated?: true } {
  if (frame.opcode === 2) {
    const b64 = frame.payloadData
    const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0
    const bytes = Math.max(0, Math.floor((b64.length * 3) / 4) - padding)
    return { payload: `[binary, ${bytes} bytes]`, payload_bytes: bytes }
  }
  const whole = Buffer.byteLength(frame.payloadData)
  if (maxBytes <= 0) return { payload: '', payload_bytes: whole, truncated: true }
  const cut = cutBody(frame.payloadData, false, maxBytes)
  return cut.truncated
    ? { payload: cut.body, payload_bytes: whole, truncated: true }
    : { payload: cut.body, payload_bytes: whole }
}

export function attachSocketEvents(
  session: TargetSession,
  emit: Emit,
  bodyMaxBytes: number,
  bounds: Bounds,
): () => void {
  const urls = new Map<string, string>()
  const remember = (requestId: string, url: string) => {
    if (urls.size >= MAX_SOCKETS) urls.delete(urls.keys().next().value!)
    urls.set(requestId, url)
  }
  /** The session's context with the socket's own URL, like a request's. */
  const ctx = (requestId: string): Context & { request_id: string } => {
    const c = session.context()
    const url = urls.get(requestId)
    if (url !== undefined) c.url = url
    else delete c.url
    return Object.assign(c, { request_id: requestId })
  }
  const source = (event: string) => ({ kind: 'cdp' as const, event })

  const onCreated = (p: Protocol.Network.WebSocketCreatedEvent) => {
    remember(p.requestId, bounds.capUrl(p.url))
    const data: EventData<'network_websocket_created'> = ctx(p.requestId)
    if (p.initiator?.type) data.initiator_type = p.initiator.type
    emit({ type: 'network_websocket_created', data, source: source('Network.webSocketCreated') })
  }
  // The request headers come first, the response with status later: one event once both are known.
  const handshakeRequests = new Map<string, Record<string, string>>()
  const onHandshakeRequest = (p: Protocol.Network.WebSocketWillSendHandshakeRequestEvent) => {
    if (handshakeRequests.size >= MAX_SOCKETS) handshakeRequests.delete(handshakeRequests.keys().next().value!)
    handshakeRequests.set(p.requestId, bounds.capHeaders(p.request.headers as Record<string, string>))
  }
  const onHandshakeResponse = (p: Protocol.Network.WebSocketHandshakeResponseReceivedEvent) => {
    const requestHeaders =
      handshakeRequests.get(p.requestId) ??
      (p.response.requestHeaders ? bounds.capHeaders(p.response.requestHeaders as Record<string, string>) : {})
    handshakeRequests.delete(p.requestId)
    const data: EventData<'network_websocket_handshake'> = Object.assign(ctx(p.requestId), {
      status: p.response.status,
      request_headers: requestHeaders,
      response_headers: bounds.capHeaders(p.response.headers as Record<string, string>),
    })
    if (p.response.statusText) data.status_text = p.response.statusText
    emit({ type: 'network_websocket_handshake', data, source: source('Network.webSocketHandshakeResponseReceived') })
  }
  const onFrame = (direction: 'sent' | 'received') => (p: Protocol.Network.WebSocketFrameSentEvent) => {
    const data: EventData<'network_websocket_frame'> = Object.assign(ctx(p.requestId), {
      direction,
      opcode: p.response.opcode,
      ...framePayload(p.response, bodyMaxBytes),
    })
    emit({
      type: 'network_websocket_frame',
      data,
      source: source(direction === 'sent' ? 'Network.webSocketFrameSent' : 'Network.webSocketFrameReceived'),
    })
  }
  const onClosed = (p: Protocol.Network.WebSocketClosedEvent) => {
    const data = ctx(p.requestId)
    urls.delete(p.requestId)
    handshakeRequests.delete(p.requestId)
    emit({ type: 'network_websocket_closed', data, source: source('Network.webSocketClosed') })
  }
  const onFrameError = (p: Protocol.Network.WebSocketFrameErrorEvent) => {
    emit({
      type: 'network_websocket_error',
      data: Object.assign(ctx(p.requestId), { error_message: p.errorMessage }),
      source: source('Network.webSocketFrameError'),
    })
  }
  const onEventSource = (p: Protocol.Network.EventSourceMessageReceivedEvent) => {
    const cut = cutBody(p.data, false, Math.max(0, bodyMaxBytes))
    const data: EventData<'network_eventsource_message'> = Object.assign(ctx(p.requestId), {
      event_name: p.eventName,
      data: bodyMaxBytes > 0 ? cut.body : '',
    })
    if (p.eventId) data.event_id = p.eventId
    if (cut.truncated || (bodyMaxBytes <= 0 && p.data.length > 0)) data.truncated = true
    emit({ type: 'network_eventsource_message', data, source: source('Network.eventSourceMessageReceived') })
  }
  // An EventSource is an ordinary request first: its URL comes from requestWillBeSent.
  const onRequest = (p: Protocol.Network.RequestWillBeSentEvent) => {
    if (p.type === 'EventSource') remember(p.requestId, bounds.capUrl(p.request.url))
  }

  const bag = new Disposer()
  bag.add(() => {
    urls.clear()
    handshakeRequests.clear()
  })
  bag.add(session.on('Network.webSocketCreated', onCreated))
  bag.add(session.on('Network.webSocketWillSendHandshakeRequest', onHandshakeRequest))
  bag.add(session.on('Network.webSocketHandshakeResponseReceived', onHandshakeResponse))
  bag.add(session.on('Network.webSocketFrameSent', onFrame('sent')))
  bag.add(session.on('Network.webSocketFrameReceived', onFrame('received')))
  bag.add(session.on('Network.webSocketClosed', onClosed))
  bag.add(session.on('Network.webSocketFrameError', onFrameError))
  bag.add(session.on('Network.eventSourceMessageReceived', onEventSource))
  bag.add(session.on('Network.requestWillBeSent', onRequest))
  return () => bag.dispose()
}
