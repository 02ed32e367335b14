// Network collector: network_request / network_response / network_loading_failed per target session,
// plus the computed network_idle for page targets. Per-session state lives in attach()'s closure and
// is dropped by detach(); the body-fetch queue is shared by all sessions so the CDP connection sees
// a bounded number of Network.getResponseBody calls in total.
import { STATUS_CODES } from 'node:http'
import type { Protocol } from 'devtools-protocol'
import type { Collector, Detach, TargetSession } from '../src/monitor/types.js'
import type { Emit } from '../src/pipeline.js'
import type { Context, EventData } from '../src/events/index.js'
import { BodyFetchQueue, cutBody, isTextMime, postDataText, type CutBody } from './network-body.js'
import { NetworkIdleRule, NETWORK_QUIET_MS, realTimers, type Timers } from './network-idle.js'
import { RequestTable } from './network-requests.js'
import { Disposer } from '../src/util/disposer.js'
import { bounds, capHeaders, capUrl, countEviction } from '../src/bounds.js'

export interface NetworkCollectorOptions {
  /** Cap of a response body in UTF-8 bytes (default 64 KiB); longer bodies are cut and flagged truncated. */
  bodyMaxBytes?: number
  /** Body fetches running at once over all sessions (default 4). */
  bodyConcurrency?: number
  /** Body fetches waiting; beyond this a response is emitted without body (default 256). */
  bodyQueueMax?: number
  /** A body fetch slower than this is given up (response emitted without body; default 10 s). */
  bodyTimeoutMs?: number
  /** A request not finished after this long is forgotten (default 5 min). */
  requestTtlMs?: number
  /** Tracked requests per session at most (default 2000; oldest evicted first). */
  maxTrackedRequests?: number
  /** network_idle quiet period (default 500 ms, the spec's value). */
  idleQuietMs?: number
  /** When given and false, responses skip the body fetch (the category is off: emit would drop them anyway). */
  isEnabled?: () => boolean
  timers?: Timers
  now?: () => number
}

interface TrackedRequest {
  url: string
  method?: string
  frameId?: string
  loaderId?: string
  resourceType?: string
  /** Only what the response event needs (a full Protocol Response carries certificates, timings, ...). */
  response?: { url: string; status: number; statusText: string; headers: Record<string, string>; mimeType: string; cut: boolean }
  /** The URL or header set was cut to its bound: the events of this request are flagged truncated. */
  cut?: boolean
  /** Set while this request's network_request waits for its body (Network.getRequestPostData). */
  emitted?: Promise<void>
}

/** Estimated bytes of one table entry (strings dominate; 200 for the object and small fields). */
function entryBytes(r: TrackedRequest): number {
  let n = 200 + r.url.length + (r.method?.length ?? 0) + (r.frameId?.length ?? 0) + (r.loaderId?.length ?? 0)
  if (r.response) {
    n += r.response.url.length + r.response.statusText.length + r.response.mimeType.length
    for (const [k, v] of Object.entries(r.response.headers)) n += k.length + v.length
  }
  return n
}

export function createNetworkCollector(opts: NetworkCollectorOptions = {}): Collector {
  const bodyMaxBytes = opts.bodyMaxBytes ?? 64 * 1024
  const bodyTimeoutMs = opts.bodyTimeoutMs ?? 10_000
  const timers = opts.timers ?? realTimers
  const bodies = new BodyFetchQueue(opts.bodyConcurrency ?? 4, opts.bodyQueueMax ?? 256)

  return {
    name: 'network',
    async attach(session: TargetSession, emit: Emit): Promise<Detach> {
      const owner = {}
      let detached = false
      const isPage = session.targetType === 'page'
      // network_idle is a page-level signal computed from this page session's own requests, which
      // include same-process iframes. Out-of-process iframes and workers have their own sessions and
      // do not hold their page's idle back (see README).
      const idle = isPage
        ? new NetworkIdleRule({
          timers, quietMs: opts.idleQuietMs ?? NETWORK_QUIET_MS,
          onIdle: (navSeq) => {
            if (detached || session.signal.aborted) return
            const ctx = session.context()
            if ((ctx.nav_seq ?? 0) !== navSeq) return
            emit({ type: 'network_idle', data: ctx, source: { kind: 'cdp' } })
          },
        }, session.context().nav_seq ?? 0)
        : undefined
      const requests = new RequestTable<TrackedRequest>({
        ttlMs: opts.requestTtlMs ?? 5 * 60_000,
        maxSize: opts.maxTrackedRequests ?? 2000,
        maxBytes: bounds.maxRequestTableBytes,
        sizeOf: entryBytes,
        now: opts.now,
        onEvict: (id) => { countEviction('network_requests'); idle?.done(id) },
      })

      const onRequest = (p: Protocol.Network.RequestWillBeSentEvent) => {
        const ctx = session.context()
        const previous = requests.get(p.requestId)
        let cut = false
        const onCut = () => { cut = true }
        const req: TrackedRequest = { url: capUrl(p.request.url + (p.request.urlFragment ?? ''), onCut), method: p.request.method }
        if (p.frameId) req.frameId = p.frameId
        if (p.loaderId) req.loaderId = p.loaderId
        if (p.type) req.resourceType = p.type
        requests.set(p.requestId, req)
        idle?.start(p.requestId) // a redirect hop keeps its id: still one request in flight
        const data: EventData<'network_request'> = {
          ...withRequest(ctx, req), request_id: p.requestId, method: p.request.method, headers: capHeaders(p.request.headers, onCut),
        }
        if (p.documentURL) data.document_url = capUrl(p.documentURL, onCut)
        if (p.type) data.resource_type = p.type
        if (p.initiator?.type) data.initiator_type = p.initiator.type
        // Inline bodies are capped too (a form navigation's body comes whole, whatever maxPostDataSize says).
        const inline = p.request.postData !== undefined ? cutBody(p.request.postData, false, Math.max(0, bodyMaxBytes)) : undefined
        if (inline) data.post_data = inline.body
        if (p.redirectResponse) {
          data.is_redirect = true
          data.redirect_url = capUrl(p.redirectResponse.url || previous?.url || '', onCut)
          if (!data.redirect_url) delete data.redirect_url
        }
        if (cut) req.cut = true
        requests.set(p.requestId, req) // again: the table's byte estimate sees the final entry
        const source = { kind: 'cdp' as const, event: 'Network.requestWillBeSent' }
        // Chromium inlines a body only up to maxPostDataSize and only when it is plain bytes: a big
        // form, a multipart upload or a long JSON body says hasPostData and must be fetched.
        const partial = p.request.postDataEntries?.some((e) => e.bytes === undefined) === true
        const fetchBody = p.request.hasPostData === true && (p.request.postData === undefined || partial) &&
          bodyMaxBytes > 0 && opts.isEnabled?.() !== false
        let sent = false
        const send = (body: CutBody | undefined) => {
          if (sent) return
          sent = true
          if (body) data.post_data = body.body
          const truncated = cut || (body ? body.truncated : inline?.truncated)
          emit({ type: 'network_request', data, source, ...(truncated ? { truncated: true } : {}) })
        }
        if (!fetchBody && !previous?.emitted) { send(undefined); return }
        // A redirect hop waits for its previous hop's event; the response waits for this one.
        req.emitted = (previous?.emitted ?? Promise.resolve()).then(() => {
          if (!fetchBody || detached) { send(undefined); return }
          return new Promise<void>((done) => {
            const contentType = headerValue(p.request.headers, 'content-type')
            bodies.submit({
              owner,
              cancel: () => { send(undefined); done() },
              run: () => new Promise<void>((release) => {
                const finish = (body: CutBody | undefined) => { timers.clear(timer); send(body); done(); release() }
                const timer = timers.set(() => finish(undefined), bodyTimeoutMs)
                // The request is gone from Chromium's memory or the target went away: best effort.
                void session.sendMayFail('Network.getRequestPostData', { requestId: p.requestId })
                  .then((r) => finish(r && postDataText(r.postData, r.base64Encoded, contentType, bodyMaxBytes)))
              }),
            })
          })
        })
      }

      const onResponse = (p: Protocol.Network.ResponseReceivedEvent) => {
        let req = requests.get(p.requestId)
        if (!req) {
          // Started before we attached: we missed requestWillBeSent, but the response tells enough.
          req = { url: capUrl(p.response.url) }
          if (p.frameId) req.frameId = p.frameId
          if (p.loaderId) req.loaderId = p.loaderId
          requests.set(p.requestId, req)
          idle?.start(p.requestId)
        }
        let cut = false
        const onCut = () => { cut = true }
        req.response = {
          url: capUrl(p.response.url, onCut), status: p.response.status, statusText: p.response.statusText,
          headers: capHeaders(p.response.headers, onCut), mimeType: p.response.mimeType, cut: false,
        }
        req.response.cut = cut
        req.resourceType ??= p.type
        requests.set(p.requestId, req) // re-measured with its response
      }

      // A request whose network_request still waits for its body is ended after it, in order.
      const afterRequest = <P extends { requestId: string }>(handle: (p: P) => void) => (p: P) => {
        const pending = requests.get(p.requestId)?.emitted
        if (pending) void pending.then(() => { if (!detached) handle(p) })
        else handle(p)
      }

      const onFinished = afterRequest((p: Protocol.Network.LoadingFinishedEvent) => {
        const req = requests.delete(p.requestId)
        const response = req?.response
        if (!req || !response) { idle?.done(p.requestId); return }
        const ctx = withRequest(session.context(), req)
        let sent = false
        const send = (body: CutBody | undefined) => {
          if (sent) return
          sent = true
          const data: EventData<'network_response'> = {
            ...ctx, request_id: p.requestId, status: Math.trunc(response.status),
            status_text: response.statusText || STATUS_CODES[response.status] || '',
            headers: response.headers, mime_type: response.mimeType,
          }
          if (req.method) data.method = req.method
          if (req.resourceType) data.resource_type = req.resourceType
          if (body) data.body = body.body
          emit({
            type: 'network_response', data, source: { kind: 'cdp', event: 'Network.loadingFinished' },
            ...(body?.truncated || response.cut || req.cut ? { truncated: true } : {}),
          })
          idle?.done(p.requestId)
        }
        if (bodyMaxBytes <= 0 || !isTextMime(response.mimeType) || detached || opts.isEnabled?.() === false) { send(undefined); return }
        bodies.submit({
          owner,
          cancel: () => send(undefined),
          run: () => new Promise<void>((release) => {
            // The slot is freed when the fetch settles or times out, whichever is first.
            const timer = timers.set(() => { send(undefined); release() }, bodyTimeoutMs)
            // Evicted from Chromium's buffer, redirected or target gone: no body, nothing else lost.
            session.sendMayFail('Network.getResponseBody', { requestId: p.requestId })
              .then((r) => send(r && cutBody(r.body, r.base64Encoded, bodyMaxBytes)))
              .finally(() => { timers.clear(timer); release() })
          }),
        })
      })

      const onFailed = afterRequest((p: Protocol.Network.LoadingFailedEvent) => {
        const req = requests.delete(p.requestId)
        // Unknown request = in flight before we attached: url, frame, loader and type are unknown.
        const data: EventData<'network_loading_failed'> = {
          ...withRequest(session.context(), req), request_id: p.requestId, error_text: p.errorText, canceled: p.canceled === true,
        }
        if (req?.resourceType) data.resource_type = req.resourceType
        emit({ type: 'network_loading_failed', data, source: { kind: 'cdp', event: 'Network.loadingFailed' }, ...(req?.cut ? { truncated: true } : {}) })
        idle?.done(p.requestId)
      })

      const bag = new Disposer()
      bag.add(() => { detached = true; idle?.dispose(); requests.clear(); bodies.cancelOwner(owner) })
      bag.add(session.on('Network.requestWillBeSent', onRequest))
      bag.add(session.on('Network.responseReceived', onResponse))
      bag.add(session.on('Network.loadingFinished', onFinished))
      bag.add(session.on('Network.loadingFailed', onFailed))
      if (idle) {
        bag.add(session.on('Page.frameNavigated', (p) => {
          // The monitor bumped nav_seq for this top-level navigation before we are called.
          if (!p.frame.parentId) idle.navigate(session.context().nav_seq ?? 0)
        }))
      }
      // maxPostDataSize makes Chromium inline request bodies up to the cap into requestWillBeSent.
      await Promise.all([
        session.sendMayFail('Network.enable', { maxPostDataSize: Math.max(0, bodyMaxBytes) }),
        isPage ? session.sendMayFail('Page.enable') : undefined,
      ])
      return () => bag.dispose()
    },
  }
}

/** Session context with url/frame/loader of the request; all three absent when the request is unknown. */
function withRequest(ctx: Context, req: TrackedRequest | undefined): Context {
  const { url: _u, frame_id: _f, loader_id: _l, ...rest } = ctx
  const out: Context = rest
  if (req?.url) out.url = req.url
  if (req?.frameId) out.frame_id = req.frameId
  if (req?.loaderId) out.loader_id = req.loaderId
  return out
}

/** A request header's value, whatever the case of its name. */
function headerValue(h: Protocol.Network.Headers, name: string): string | undefined {
  for (const [k, v] of Object.entries(h)) if (k.toLowerCase() === name) return typeof v === 'string' ? v : String(v)
  return undefined
}
