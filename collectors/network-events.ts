// The network collector's pure side: what it keeps per request, and the network_request /
// network_response data built from CDP payloads (no session, no timers: tested without a browser).
import { STATUS_CODES } from 'node:http'
import type { Protocol } from 'devtools-protocol'
import { headerValue, type Bounds, type Context, type EventData, type TargetSession } from '../src/collector-kit.js'
import type { CutBody } from './network-body.js'

export interface ResponseRecord {
  url: string
  status: number
  statusText: string
  headers: Record<string, string>
  mimeType: string
  cut: boolean
}

export interface TrackedRequest {
  url: string
  method?: string
  frameId?: string
  loaderId?: string
  resourceType?: string
  /** Only what the response event needs (a full Protocol Response carries certificates, timings, ...). */
  response?: ResponseRecord
  /** The URL or header set was cut to its bound: the events of this request are flagged truncated. */
  cut?: boolean
  /** Set while this request's network_request waits for its body (Network.getRequestPostData). */
  emitted?: Promise<void>
  /** The session that continued this request when it is not the one that started it (its body is there). */
  via?: TargetSession
}

/**
 * A worker's main script as its page's session reports it: a script request that starts a global
 * scope of its own (its document is the script itself) and belongs to no document loader. Chromium
 * reports the rest of it in the worker's session.
 */
export function startsWorker(p: Protocol.Network.RequestWillBeSentEvent): boolean {
  return p.type === 'Script' && !p.loaderId && p.documentURL === p.request.url
}

/** Estimated bytes of one table entry (strings dominate; 200 for the object and small fields). */
export function entryBytes(r: TrackedRequest): number {
  let n = 200 + r.url.length + (r.method?.length ?? 0) + (r.frameId?.length ?? 0) + (r.loaderId?.length ?? 0)
  if (r.response) {
    n += r.response.url.length + r.response.statusText.length + r.response.mimeType.length
    const h = r.response.headers
    for (const k in h) n += k.length + h[k]!.length // (no entries array per response)
  }
  return n
}

/**
 * network_request data: the request's own url/frame/loader over the session context; a redirect
 * names the URL that redirected. URLs and headers are cut to their bounds (onCut is told).
 */
export function requestData(
  bounds: Bounds,
  ctx: Context,
  p: Protocol.Network.RequestWillBeSentEvent,
  req: TrackedRequest,
  previous: TrackedRequest | undefined,
  onCut: () => void,
): EventData<'network_request'> {
  // Object.assign onto the fresh object, not a spread (see TargetSession.context).
  const data: EventData<'network_request'> = Object.assign(withRequest(ctx, req), {
    request_id: p.requestId,
    method: p.request.method,
    headers: bounds.capHeaders(p.request.headers, onCut),
  })
  if (p.documentURL) data.document_url = bounds.capUrl(p.documentURL, onCut)
  if (p.type) data.resource_type = p.type
  if (p.initiator?.type) data.initiator_type = p.initiator.type
  if (p.redirectResponse) {
    data.is_redirect = true
    const from = p.redirectResponse.url || previous?.url
    if (from) data.redirect_url = bounds.capUrl(from, onCut)
    data.redirect_status = Math.trunc(p.redirectResponse.status)
  }
  return data
}

export function responseData(
  ctx: Context,
  requestId: string,
  req: TrackedRequest,
  response: ResponseRecord,
  body: CutBody | undefined,
): EventData<'network_response'> {
  // ctx is the caller's own copy (withRequest): extended in place, not spread.
  const data: EventData<'network_response'> = Object.assign(ctx, {
    request_id: requestId,
    status: Math.trunc(response.status),
    status_text: response.statusText || STATUS_CODES[response.status] || '',
    headers: response.headers,
    mime_type: response.mimeType,
  })
  if (req.method) data.method = req.method
  if (req.resourceType) data.resource_type = req.resourceType
  if (body) data.body = body.body
  return data
}

/** The headers of a response whose body never came, and why the request ended without it. */
export function incompleteData(
  ctx: Context,
  requestId: string,
  req: TrackedRequest,
  response: ResponseRecord,
  reason: EventData<'network_response_incomplete'>['reason'],
): EventData<'network_response_incomplete'> {
  const { body: _none, ...data } = responseData(ctx, requestId, req, response, undefined)
  return Object.assign(data, { reason })
}

/** Chromium's proxy failures (net_error_list.h): the normalised code and the HTTP status each stands for. */
const PROXY_NET_ERRORS: Record<string, [EventData<'proxy_error'>['code'], number]> = {
  'net::ERR_PROXY_CONNECTION_FAILED': ['proxy_connection_failed', 502],
  'net::ERR_TUNNEL_CONNECTION_FAILED': ['tunnel_connection_failed', 502],
  'net::ERR_PROXY_AUTH_REQUESTED': ['proxy_auth_required', 407],
  'net::ERR_PROXY_AUTH_UNSUPPORTED': ['proxy_auth_required', 407],
  'net::ERR_PROXY_AUTH_REQUESTED_WITH_NO_CONNECTION': ['proxy_auth_required', 407],
  'net::ERR_UNEXPECTED_PROXY_AUTH': ['proxy_auth_required', 407],
  'net::ERR_PROXY_CERTIFICATE_INVALID': ['proxy_certificate_invalid', 502],
  'net::ERR_MANDATORY_PROXY_CONFIGURATION_FAILED': ['proxy_other', 502],
  'net::ERR_HTTPS_PROXY_TUNNEL_RESPONSE_REDIRECT': ['proxy_other', 502],
}

/**
 * proxy_error data for a failed load whose error is a proxy's (the table above, or any other
 * net::ERR_PROXY_*: proxy_other), or for a plain-HTTP request the proxy answered 407 (its status
 * line as raw_code), on the request's context; undefined for everything else.
 */
export function proxyErrorData(
  ctx: Context,
  requestId: string,
  failure: { errorText: string } | ResponseRecord,
  req: TrackedRequest | undefined,
): EventData<'proxy_error'> | undefined {
  let known: [EventData<'proxy_error'>['code'], number] | undefined
  let raw: string
  if ('errorText' in failure) {
    raw = failure.errorText
    known = PROXY_NET_ERRORS[raw] ?? (raw.startsWith('net::ERR_PROXY_') ? ['proxy_other', 502] : undefined)
  } else {
    raw = `${failure.status} ${failure.statusText || STATUS_CODES[failure.status] || ''}`.trimEnd()
    if (failure.status === 407) known = ['proxy_auth_required', 407]
  }
  if (!known) return undefined
  const data: EventData<'proxy_error'> = Object.assign(ctx, {
    request_id: requestId,
    code: known[0],
    raw_code: raw,
    status: known[1],
  })
  if (req?.method) data.method = req.method
  if (req?.resourceType) data.resource_type = req.resourceType
  return data
}

/** Session context with url/frame/loader of the request; all three absent when the request is unknown. */
export function withRequest(ctx: Context, req: TrackedRequest | undefined): Context {
  // Field by field in the context's own order (a rest pattern with excluded keys is a slow runtime path).
  const out: Context = {}
  if (ctx.session_id !== undefined) out.session_id = ctx.session_id
  if (ctx.target_id !== undefined) out.target_id = ctx.target_id
  if (ctx.target_type !== undefined) out.target_type = ctx.target_type
  if (ctx.nav_seq !== undefined) out.nav_seq = ctx.nav_seq
  if (req?.url) out.url = req.url
  if (req?.frameId) out.frame_id = req.frameId
  if (req?.loaderId) out.loader_id = req.loaderId
  return out
}

/** A request header's value as text, whatever the case of its name. */
export function headerText(h: Protocol.Network.Headers, name: string): string | undefined {
  const v = headerValue(h as Record<string, unknown>, name)
  return v === undefined || typeof v === 'string' ? v : String(v)
}
