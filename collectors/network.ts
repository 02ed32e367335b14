// One idea: the network collector, CDP's Network events of one target session as network_request /
// network_response / network_response_incomplete / network_loading_failed (proxy_error beside it),
// plus the computed network_idle for page targets. Per-session state lives in a TargetRequests and
// is dropped by detach(); the body-fetch queue is shared by all sessions so the CDP connection sees
// a bounded number of Network.getResponseBody calls in total. A request started in one session and
// continued in another (a worker's script, an OOPIF's document) is joined to the session that
// started it, so it tells one story.
import type { Protocol } from 'devtools-protocol'
import {
  Bounds,
  DEFAULT_BODY_MAX_BYTES,
  Disposer,
  systemClock,
  type Clock,
  type Collector,
  type Detach,
  type Emit,
  type EventData,
  type TargetSession,
  type TimerHandle,
  type CaptureNeeds,
} from '../src/collector-kit.js'
import { BodyFetchQueue, cutBody, type CutBody } from './network-body.js'
import { BodyFetches } from './network-fetch.js'
import { NetworkIdleRule, NETWORK_QUIET_MS } from './network-idle.js'
import { RequestTable } from './network-requests.js'
import { attachSocketEvents } from './network-sockets.js'
import {
  entryBytes,
  startsWorker,
  incompleteData,
  proxyErrorData,
  requestData,
  responseData,
  withRequest,
  type TrackedRequest,
} from './network-events.js'

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
  /** network_idle quiet period (default 500 ms). */
  idleQuietMs?: number
  /** When given and false, responses skip the body fetch (the category is off: emit would drop them anyway). */
  isEnabled?: () => boolean
  /** Timers (idle, body timeout) and the request table's TTL clock (injectable for tests). */
  clock?: Clock
  /** URL, header and request-table bounds and their eviction counters (default: the collector's own, at the default bounds). */
  bounds?: Bounds
}

/** Options with their defaults applied, shared by every session of one collector. */
interface NetworkSettings {
  bodyMaxBytes: number
  bodyTimeoutMs: number
  requestTtlMs: number
  maxTrackedRequests: number
  idleQuietMs: number
  isEnabled?: () => boolean
  clock: Clock
  bounds: Bounds
}

/** Requests of every target, with their bodies up to the cap (Network.enable's maxPostDataSize). */
export const NETWORK_CAPTURE: CaptureNeeds = { category: 'network', targets: 'all', domains: ['Network'], bodies: true }

export function createNetworkCollector(opts: NetworkCollectorOptions = {}): Collector {
  const settings: NetworkSettings = {
    bodyMaxBytes: opts.bodyMaxBytes ?? DEFAULT_BODY_MAX_BYTES,
    bodyTimeoutMs: opts.bodyTimeoutMs ?? 10_000,
    requestTtlMs: opts.requestTtlMs ?? 5 * 60_000,
    maxTrackedRequests: opts.maxTrackedRequests ?? 2000,
    idleQuietMs: opts.idleQuietMs ?? NETWORK_QUIET_MS,
    isEnabled: opts.isEnabled,
    clock: opts.clock ?? systemClock,
    bounds: opts.bounds ?? new Bounds(),
  }
  // One queue for all sessions: the CDP connection sees a bounded number of body fetches in total.
  const bodies = new BodyFetchQueue(settings.bounds, opts.bodyConcurrency ?? 4, opts.bodyQueueMax ?? 256)
  // The navigation each page last reported network_idle for, across attaches: the category switched
  // off and on again within one navigation must not report that navigation idle twice.
  const idleReported = new WeakMap<TargetSession, number>()
  // Every attached session's requests: where a request continued in another session is found.
  const live = new Set<TargetRequests>()
  return {
    name: 'network',
    capture: NETWORK_CAPTURE,
    attach(session: TargetSession, emit: Emit): Detach {
      const tracker = new TargetRequests(session, emit, settings, bodies, idleReported, live)
      const listeners = new Disposer()
      listeners.add(() => tracker.dispose())
      listeners.add(session.on('Network.requestWillBeSent', p => tracker.onRequest(p)))
      listeners.add(session.on('Network.responseReceived', p => tracker.onResponse(p)))
      listeners.add(session.on('Network.loadingFinished', p => tracker.onFinished(p)))
      listeners.add(session.on('Network.loadingFailed', p => tracker.onFailed(p)))
      if (tracker.isPage) listeners.add(session.on('Page.frameNavigated', p => tracker.onFrameNavigated(p)))
      listeners.add(attachSocketEvents(session, emit, settings.bodyMaxBytes, settings.bounds))
      return () => listeners.dispose()
    },
  }
}

/**
 * One session's requests: the bounded request table, the page's network_idle rule, and the
 * translation of the four Network events into network_request / network_response /
 * network_loading_failed. Dropped as a whole by dispose().
 */
class TargetRequests {
  readonly isPage: boolean
  private readonly requests: RequestTable<TrackedRequest>
  private readonly idle: NetworkIdleRule | undefined
  private readonly fetches: BodyFetches
  private disposed = false

  constructor(
    private readonly session: TargetSession,
    private readonly emit: Emit,
    private readonly settings: NetworkSettings,
    bodies: BodyFetchQueue,
    private readonly idleReported: WeakMap<TargetSession, number>,
    private readonly live: Set<TargetRequests>,
  ) {
    live.add(this)
    this.fetches = new BodyFetches(session, settings, bodies)
    this.isPage = session.targetType === 'page'
    this.idle = this.isPage ? this.idleRule() : undefined
    this.requests = new RequestTable<TrackedRequest>({
      ttlMs: settings.requestTtlMs,
      maxSize: settings.maxTrackedRequests,
      maxBytes: settings.bounds.limits.maxRequestTableBytes,
      sizeOf: entryBytes,
      now: settings.clock.now,
      onEvict: (id, req) => {
        settings.bounds.countEviction('network_requests')
        this.incomplete(id, req, 'timeout')
        this.idle?.done(id)
      },
    })
  }

  /**
   * network_idle is a page-level signal computed from this page session's own requests, which
   * include same-process iframes. Out-of-process iframes and workers have their own sessions and
   * do not hold their page's idle back (see README).
   */
  private idleRule(): NetworkIdleRule {
    const { session } = this
    return new NetworkIdleRule(
      {
        timers: this.settings.clock,
        quietMs: this.settings.idleQuietMs,
        onIdle: navSeq => {
          const report = () => {
            if (this.disposed || session.signal.aborted) return
            const ctx = session.context()
            if ((ctx.nav_seq ?? 0) !== navSeq || this.idleReported.get(session) === navSeq) return
            this.idleReported.set(session, navSeq)
            this.emit({ type: 'network_idle', data: ctx, source: { kind: 'cdp' } })
          }
          // Quiet before the frame tree was read (a slow renderer): report with the context it gives.
          if (session.contextPending) void session.contextPending.then(report)
          else report()
        },
      },
      session.context().nav_seq ?? 0,
    )
  }

  /**
   * The tracker whose table holds the request: this one, or the one of the session that started it.
   * Chromium reports a worker's script start in the page's session and the rest in the worker's
   * (shared workers included), an OOPIF's document start and response in the page's and its end in
   * the frame's; the request id is the same in all of them (ids are unique across a browser's sessions).
   */
  private ownerOf(requestId: string): TargetRequests {
    if (this.knows(requestId)) return this
    for (const t of this.live) if (t !== this && t.knows(requestId)) return t
    return this
  }
  private knows(requestId: string): boolean {
    return this.requests.get(requestId) !== undefined || this.endedByNavigation.has(requestId)
  }
  /** The session an event came from, when it is not the owner's: its later events and body are there. */
  private joinedFrom(owner: TargetRequests): TargetSession | undefined {
    return owner === this ? undefined : this.session
  }

  onRequest(p: Protocol.Network.RequestWillBeSentEvent): void {
    // A redirect hop continues the request wherever it started.
    const owner = p.redirectResponse ? this.ownerOf(p.requestId) : this
    owner.request(p, this.joinedFrom(owner))
  }

  private request(p: Protocol.Network.RequestWillBeSentEvent, via: TargetSession | undefined): void {
    const previous = this.requests.get(p.requestId)
    let cut = false
    const onCut = () => {
      cut = true
    }
    const req: TrackedRequest = {
      url: this.settings.bounds.capUrl(p.request.url + (p.request.urlFragment ?? ''), onCut),
      method: p.request.method,
    }
    if (p.frameId) req.frameId = p.frameId
    if (p.loaderId) req.loaderId = p.loaderId
    if (p.type) req.resourceType = p.type
    if (via ?? previous?.via) req.via = via ?? previous?.via
    this.requests.set(p.requestId, req)
    // A redirect hop keeps its id: still one request in flight. A worker's script ends only in the
    // worker's session (or never, when the worker is ended before it starts): it cannot hold the page busy.
    if (!startsWorker(p)) this.idle?.start(p.requestId)
    const data = requestData(this.settings.bounds, this.session.context(), p, req, previous, onCut)
    // Inline bodies are capped too (a form navigation's body comes whole, whatever maxPostDataSize says).
    const inline =
      p.request.postData !== undefined && this.settings.bodyMaxBytes > 0
        ? cutBody(p.request.postData, false, this.settings.bodyMaxBytes)
        : undefined
    if (inline) data.post_data = inline.body
    if (cut) req.cut = true // (not part of the table's byte estimate: no second set())
    let sent = false
    const send = (body: CutBody | undefined) => {
      if (sent) return
      sent = true
      if (body) data.post_data = body.body
      const truncated = cut || (body ? body.truncated : inline?.truncated)
      this.emit({
        type: 'network_request',
        data,
        source: { kind: 'cdp', event: 'Network.requestWillBeSent' },
        ...(truncated ? { truncated: true } : {}),
      })
    }
    const fetch = this.fetches.wantsPostData(p)
    if (!fetch && !previous?.emitted) {
      send(undefined)
      return
    }
    // A redirect hop waits for its previous hop's event; the response waits for this one.
    req.emitted = (previous?.emitted ?? Promise.resolve()).then(() => {
      if (!fetch || this.disposed) {
        send(undefined)
        return
      }
      return new Promise<void>(done =>
        this.fetches.postData(p, body => {
          send(body)
          done()
        }),
      )
    })
  }

  onResponse(p: Protocol.Network.ResponseReceivedEvent): void {
    const owner = this.ownerOf(p.requestId)
    owner.response(p, this.joinedFrom(owner))
  }

  private response(p: Protocol.Network.ResponseReceivedEvent, via: TargetSession | undefined): void {
    let req = this.requests.get(p.requestId)
    if (!req) {
      // Started before we attached: we missed requestWillBeSent, but the response tells enough.
      req = { url: this.settings.bounds.capUrl(p.response.url) }
      if (p.frameId) req.frameId = p.frameId
      if (p.loaderId) req.loaderId = p.loaderId
      this.requests.set(p.requestId, req)
      this.idle?.start(p.requestId)
    }
    let cut = false
    const onCut = () => {
      cut = true
    }
    req.response = {
      url: this.settings.bounds.capUrl(p.response.url, onCut),
      status: p.response.status,
      statusText: p.response.statusText,
      headers: this.settings.bounds.capHeaders(p.response.headers, onCut),
      mimeType: p.response.mimeType,
      cut: false,
    }
    req.response.cut = cut
    req.resourceType ??= p.type
    if (via) req.via = via
    this.requests.set(p.requestId, req) // re-measured with its response
    this.armSweep()
  }

  /** The time bound: a body still not complete after the request TTL ends as incomplete (a timer, not the next insert). */
  private sweepTimer: TimerHandle | undefined
  private armSweep(): void {
    if (this.sweepTimer !== undefined || this.disposed) return
    this.sweepTimer = this.settings.clock.set(
      () => {
        this.sweepTimer = undefined
        if (this.disposed) return
        this.requests.sweep()
        if (this.requests.size > 0) this.armSweep()
      },
      this.settings.requestTtlMs,
      { unref: true },
    )
  }

  /** Nothing left to time out: no timer waits. */
  private disarmSweep(): void {
    if (this.requests.size > 0 || this.sweepTimer === undefined) return
    this.settings.clock.clear(this.sweepTimer)
    this.sweepTimer = undefined
  }

  /** network_response_incomplete: the headers that came, for a request that ended without its body. */
  private incomplete(
    requestId: string,
    req: TrackedRequest | undefined,
    reason: EventData<'network_response_incomplete'>['reason'],
  ): void {
    const response = req?.response
    if (!req || !response) return
    this.emit({
      type: 'network_response_incomplete',
      data: incompleteData(withRequest(this.session.context(), req), requestId, req, response, reason),
      source: { kind: 'cdp', event: 'Network.responseReceived' },
      ...(response.cut || req.cut ? { truncated: true } : {}),
    })
  }

  onFinished(p: Protocol.Network.LoadingFinishedEvent): void {
    const owner = this.ownerOf(p.requestId)
    owner.end(p.requestId, this.joinedFrom(owner), () => owner.finished(p))
  }
  onFailed(p: Protocol.Network.LoadingFailedEvent): void {
    const owner = this.ownerOf(p.requestId)
    owner.end(p.requestId, this.joinedFrom(owner), () => owner.failed(p))
  }

  private end(requestId: string, via: TargetSession | undefined, handle: () => void): void {
    if (this.endedByNavigation.delete(requestId)) return this.idle?.done(requestId)
    const req = this.requests.get(requestId)
    if (req && via) req.via = via
    this.afterRequest(requestId, handle)
  }

  /** A request whose network_request still waits for its body is ended after it, in order. */
  private afterRequest(requestId: string, handle: () => void): void {
    const pending = this.requests.get(requestId)?.emitted
    if (pending)
      void pending.then(() => {
        if (!this.disposed) handle()
      })
    else handle()
  }

  /** network_response is emitted here, once, with the body when one is wanted and can be had in time. */
  private finished(p: Protocol.Network.LoadingFinishedEvent): void {
    const req = this.requests.delete(p.requestId)
    this.disarmSweep()
    const response = req?.response
    if (!req || !response) {
      this.idle?.done(p.requestId)
      return
    }
    const ctx = withRequest(this.session.context(), req)
    let sent = false
    const respond = (body: CutBody | undefined) => {
      if (sent) return
      sent = true
      this.emit({
        type: 'network_response',
        data: responseData(ctx, p.requestId, req, response, body),
        source: { kind: 'cdp', event: 'Network.loadingFinished' },
        ...(body?.truncated || response.cut || req.cut ? { truncated: true } : {}),
      })
      // A plain-HTTP request the proxy refused for want of credentials is answered 407.
      const proxy =
        response.status === 407
          ? proxyErrorData(withRequest(this.session.context(), req), p.requestId, response, req)
          : undefined
      if (proxy)
        this.emit({ type: 'proxy_error', data: proxy, source: { kind: 'cdp', event: 'Network.loadingFinished' } })
      this.idle?.done(p.requestId)
    }
    if (this.fetches.wantsBody(response)) this.fetches.responseBody(p.requestId, req.via ?? this.session, respond)
    else respond(undefined)
  }

  private failed(p: Protocol.Network.LoadingFailedEvent): void {
    const req = this.requests.delete(p.requestId)
    this.disarmSweep()
    this.incomplete(p.requestId, req, 'failed')
    // Unknown request = in flight before we attached: url, frame, loader and type are unknown.
    const data: EventData<'network_loading_failed'> = Object.assign(withRequest(this.session.context(), req), {
      request_id: p.requestId,
      error_text: p.errorText,
      canceled: p.canceled === true,
    })
    if (req?.resourceType) data.resource_type = req.resourceType
    const source = { kind: 'cdp' as const, event: 'Network.loadingFailed' }
    this.emit({ type: 'network_loading_failed', data, source, ...(req?.cut ? { truncated: true } : {}) })
    // A proxy's failure is said as such right after the failure it explains.
    const proxy = proxyErrorData(withRequest(this.session.context(), req), p.requestId, p, req)
    if (proxy) this.emit({ type: 'proxy_error', data: proxy, source, ...(req?.cut ? { truncated: true } : {}) })
    this.idle?.done(p.requestId)
  }

  onFrameNavigated(p: Protocol.Page.FrameNavigatedEvent): void {
    if (p.frame.parentId) return
    // The previous document is gone: its requests whose headers came but whose body never will (a
    // stream, an unread body) end here, with their status. Chromium may never report them.
    this.endedByNavigation.clear()
    for (const [id, req] of this.requests.entries()) {
      if (!req.response || req.loaderId === undefined || req.loaderId === p.frame.loaderId) continue
      this.incomplete(id, req, 'navigated')
      this.requests.delete(id)
      this.endedByNavigation.add(id)
    }
    this.disarmSweep()
    // The monitor bumped nav_seq for this top-level navigation before we are called.
    this.idle?.navigate(this.session.context().nav_seq ?? 0)
  }

  /** Requests ended by the last navigation: a late loadingFinished/loadingFailed of theirs is not a second end. */
  private readonly endedByNavigation = new Set<string>()

  /** A session that continued some of this table's requests went away: they cannot end any more. */
  private endJoined(via: TargetSession): void {
    if (this.disposed) return
    for (const [id, req] of this.requests.entries()) {
      if (req.via !== via) continue
      this.incomplete(id, req, 'detached')
      this.requests.delete(id)
      this.idle?.done(id)
    }
    this.disarmSweep()
  }

  dispose(): void {
    if (this.disposed) return
    this.live.delete(this)
    for (const t of this.live) t.endJoined(this.session)
    // Requests whose headers came but whose body never will: their status is not lost.
    for (const [id, req] of this.requests.entries()) this.incomplete(id, req, 'detached')
    this.disposed = true
    if (this.sweepTimer !== undefined) this.settings.clock.clear(this.sweepTimer)
    this.idle?.dispose()
    this.requests.clear()
    this.fetches.close()
  }
}
