// One browser-level CDP connection and every target attached through it. A reconnect never reuses
// a BrowserConnection: the monitor closes the old one (dropping all per-target state) and opens a new one.
// One idea, kept whole on purpose: the lifetime of a connection and of the targets it attaches, whose
// setup, routing and teardown share one map of sessions and must change together.
import type { TargetType } from '../events/index.js'
import type { Emit, EmitUnbuilt } from '../pipeline/pipeline.js'
import type { Logger } from '../log.js'
import type { Bounds } from '../pipeline/bounds.js'
import { withTimeout } from '../util/with-timeout.js'
import { autoAttachParams, sameAttachFilter, TargetCapture, type PlanSource } from './capture.js'
import { planAttaches, type CapturePlan } from './capture-plan.js'
import { CdpClient, type CdpMessage } from './cdp-client.js'
import { CdpSessionCore, UNREAD_EVENTS, type RawSend } from './cdp-session.js'
import { ListenedEvents } from './handlers.js'
import { consoleShedder } from './intake-shed.js'
import type { ProtocolErrorLog } from './protocol-error.js'
import type { MonitorEvents } from './status.js'
import { AttachedTarget } from './target-session.js'
import { IGNORED_CDP_TYPES, PARENT_TYPES, TOP_LEVEL_TYPES, targetTypeOf, type TargetInfo } from './target-types.js'
import type { CdpCommand, CdpEvent, Collector, CommandParams, CommandResult, EventParams } from './types.js'

/** Longest a tab a client created is held paused for its domains' answers (holdsUntilEnabled). */
const CLIENT_TAB_HOLD_MS = 1000

/**
 * A tab a client created (Target.createTarget, /json/new, a driver's newPage) is resumed only once
 * its domains answered. Its navigation (the URL it was created with, or the one the client sends
 * at once) is held by the pause; once released, a document that commits in a new renderer before
 * the old one answered Page.enable / Network.enable comes without its frameNavigated, dataReceived
 * and loadingFinished (Chromium 156): the document's request stays in flight and network_idle is
 * never reported. Tabs a page opens (links, window.open) carry an opener and were not seen to
 * lose events when resumed at once, and a noopener one answers nothing until it is resumed: those
 * are resumed at once.
 */
function holdsUntilEnabled(ev: EventParams<'Target.attachedToTarget'>): boolean {
  return ev.waitingForDebugger && ev.targetInfo.type === 'page' && ev.targetInfo.openerId === undefined
}

/** Narrows a raw message to one event, typing its params from the protocol mapping. */
function isEvent<E extends CdpEvent>(m: CdpMessage, event: E): m is CdpMessage & { params: EventParams<E> } {
  return m.method === event
}

/** A CDP command of the connection setup failed; `step` names it (monitor_init_failed.step). */
export class InitStepError extends Error {
  constructor(
    readonly step: string,
    readonly cause: unknown,
  ) {
    super(`CDP ${step} failed: ${cause instanceof Error ? cause.message : String(cause)}`)
    this.name = 'InitStepError'
  }
}

/** Could not open the WebSocket to the browser. */
export class ConnectError extends Error {
  readonly step = 'connect'
  constructor(
    readonly wsUrl: string,
    readonly cause: unknown,
  ) {
    super(`cannot connect to the browser at ${wsUrl}: ${cause instanceof Error ? cause.message : String(cause)}`)
    this.name = 'ConnectError'
  }
}

/**
 * Events of the domains the capture plan enables for collectors only: the monitor's own bookkeeping
 * reads none of them (it reads Target.*, Page.* and Inspector.*, never dropped), so one with no
 * handler on any session is dropped unparsed. E.g. the console messages Chromium sends once Runtime
 * is enabled for the interaction binding alone (300 per heavy-page load), or Runtime's execution
 * context events. Handlers are registered synchronously when a target attaches, before any of its
 * events is handled, and a category switched on live hears only what follows its enable anyway.
 */
function droppableUnheard(method: string): boolean {
  return method.startsWith('Runtime.') || method.startsWith('Network.') || method.startsWith('PerformanceTimeline.')
}

export interface ConnectionOptions {
  wsUrl: string
  collectors: readonly Collector[]
  /** Which domains, collectors and auto-attached targets the enabled categories need (applied live). */
  capture: PlanSource
  emit: Emit
  logger: Logger
  /** Bound on collectors' attach at a target's setup before it is announced anyway. */
  attachTimeoutMs: number
  /**
   * Bound on the monitor's own setup commands (Page.enable, ...) before the target is announced
   * unanswered (default attachTimeoutMs); the target is resumed at once either way.
   */
  pausedMaxMs?: number
  /** Receives 'target-attached' / 'target-detached'. */
  events: MonitorEvents
  /** Where failed best-effort commands are classified, counted and logged (shared across reconnects). */
  errors: ProtocolErrorLog
  /** Called once when the WebSocket closes without close() having been called. */
  onLost: (conn: BrowserConnection) => void
  connectTimeoutMs?: number
  /** Attached targets at most; beyond it a target is resumed and detached (a page opening tabs in a loop). */
  maxTargets: number
  /** Byte bounds (URLs in target context, the console cut in raw frames) and their eviction counters. */
  bounds: Bounds
  onTargetRefused?: (info: EventParams<'Target.attachedToTarget'>['targetInfo']) => void
  /** emit() of a console event before it is built, while the CDP backlog is over its bound; absent: never shed at intake. */
  emitUnbuilt?: EmitUnbuilt
}

export class BrowserConnection {
  readonly wsUrl: string
  private readonly client: CdpClient
  private readonly opts: ConnectionOptions
  private readonly sessions = new Map<string, AttachedTarget>()
  private readonly sessionByTarget = new Map<string, string>()
  /** Setup in flight per session id (own domains + collectors' attach). */
  private readonly pending = new Map<string, Promise<void>>()
  /** Per attached target: the capture plan as applied to it. */
  private readonly captures = new Map<string, TargetCapture>()
  /** The plan in force (new targets get it; a change is applied to every attached target). */
  private plan: CapturePlan
  private readonly unsubscribePlan: () => void
  /** attachTimeoutMs timeouts running (leak checks). */
  private timeouts = 0
  /** Handlers per event over every session of this connection (events of droppableUnheard domains with none are dropped unparsed). */
  private readonly listened = new ListenedEvents()
  /** The browser-level session collectors' attachBrowser gets; closed with the connection. */
  readonly browser: CdpSessionCore
  private readonly abort = new AbortController()
  /**
   * One controller per bounded wait, aborted by dispose(): waits never add listeners to the
   * connection's own signal (dozens of tabs set up at once would pile up abort listeners there).
   */
  private readonly waits = new Set<AbortController>()
  private readonly raw: RawSend = <M extends CdpCommand>(
    method: M,
    params: CommandParams<M> | undefined,
    sessionId: string | undefined,
  ) => this.client.send(method, params, sessionId) as Promise<CommandResult<M>>
  private refusedLogged = 0

  private constructor(client: CdpClient, opts: ConnectionOptions) {
    this.client = client
    this.opts = opts
    this.wsUrl = opts.wsUrl
    this.browser = new CdpSessionCore(
      this.raw,
      undefined,
      opts.errors,
      opts.logger,
      'browser connection',
      this.listened,
    )
    this.plan = opts.capture.current()
    this.unsubscribePlan = opts.capture.onChange(plan => this.applyPlan(plan))
    client.on('event', m => this.onMessage(m))
    client.ignoreEvents(method => UNREAD_EVENTS.has(method) || (droppableUnheard(method) && !this.listened.has(method)))
    // A new target waits paused for its setup: never behind a flood's backlog of other targets'
    // events. Its own events come after its attach anyway; nothing else queued is needed first.
    client.handleAtOnce(method => method === 'Target.attachedToTarget')
    if (opts.emitUnbuilt) client.shedConsoleWhenBacklogged(consoleShedder(this.sessions, opts.emitUnbuilt))
    client.on('disconnect', () => {
      if (this.closed) return
      this.dispose()
      opts.onLost(this)
    })
  }

  /** Connects and runs the domain setup; on failure closes what it opened and throws ConnectError or InitStepError. */
  static async open(opts: ConnectionOptions): Promise<BrowserConnection> {
    const client = await connectClient(opts.wsUrl, opts.connectTimeoutMs ?? 10000, opts.bounds.maxEnvelopeBytes)
    const conn = new BrowserConnection(client, opts)
    try {
      await conn.init()
    } catch (err) {
      await conn.close()
      throw err
    }
    return conn
  }

  get closed(): boolean {
    return this.abort.signal.aborted
  }

  targets(): TargetInfo[] {
    return [...this.sessions.values()].map(t => t.info())
  }

  session(sessionId: string): AttachedTarget | undefined {
    return this.sessions.get(sessionId)
  }

  targetCounts(): Partial<Record<TargetType, number>> {
    const counts: Partial<Record<TargetType, number>> = {}
    for (const t of this.sessions.values()) counts[t.targetType] = (counts[t.targetType] ?? 0) + 1
    return counts
  }

  counts() {
    let sessionListeners = 0
    let sessionDetaches = 0
    let inFlightCommands = 0
    for (const s of this.sessions.values()) {
      const c = s.counts()
      sessionListeners += c.listeners
      sessionDetaches += c.detaches
      inFlightCommands += c.inFlight
    }
    const browserListeners = this.browser.counts().listeners
    return {
      sessions: this.sessions.size,
      targetsById: this.sessionByTarget.size,
      pendingAttaches: this.pending.size,
      timers: this.timeouts,
      sessionListeners,
      sessionDetaches,
      inFlightCommands,
      browserListeners,
    }
  }

  /**
   * Handles what was received and not yet handled (every CDP message the daemon received becomes
   * its events), then drops every target and collector hook and closes the WebSocket. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.closed) this.client.handleQueued()
    this.dispose()
    await this.client.close().catch(() => undefined)
  }

  /** Discards all per-connection state: targets (collectors' detach), browser hooks, timers. */
  private dispose(): void {
    if (this.closed) return
    this.abort.abort()
    // Ends every bounded wait at once.
    for (const w of this.waits) w.abort(this.abort.signal.reason)
    this.waits.clear()
    this.unsubscribePlan()
    for (const sessionId of [...this.sessions.keys()]) this.dropTarget(sessionId)
    this.browser.close()
    this.pending.clear()
  }

  /** Best-effort command of the monitor itself on a session (undefined = browser); see CdpSession.sendMayFail. */
  private sendMayFail<M extends CdpCommand>(
    method: M,
    params: CommandParams<M> | undefined,
    sessionId: string | undefined,
  ) {
    return this.raw(method, params, sessionId).catch((err: unknown) => {
      this.opts.errors.report(method, err, { sessionId })
      return undefined
    })
  }

  private async init(): Promise<void> {
    const { collectors, emit, logger } = this.opts
    // Browser hooks first, so a collector sees the targetCreated events discovery replays for existing targets.
    for (const c of collectors) {
      if (!c.attachBrowser) continue
      try {
        const d = await this.bounded(Promise.resolve(c.attachBrowser(this.browser, emit)))
        if (d) this.browser.addDetach(d)
      } catch (err) {
        if (!this.closed) logger.warn({ err, collector: c.name }, 'collector attachBrowser failed')
      }
    }
    const step = async <M extends CdpCommand>(method: M, params?: CommandParams<M>) => {
      try {
        return await this.raw(method, params, undefined)
      } catch (err) {
        throw new InitStepError(method, err)
      }
    }
    await step('Target.setDiscoverTargets', { discover: true })
    // Attaches every existing page/worker too (attachedToTarget arrives before the reply).
    await step('Target.setAutoAttach', autoAttachParams(this.plan))
    const { targetInfos } = await step('Target.getTargets')
    await Promise.all(
      targetInfos
        .filter(
          i =>
            TOP_LEVEL_TYPES.has(targetTypeOf(i.type)) &&
            planAttaches(this.plan, targetTypeOf(i.type)) &&
            !this.sessionByTarget.has(i.targetId),
        )
        .map(i => this.sendMayFail('Target.attachToTarget', { targetId: i.targetId, flatten: true }, undefined)),
    )
    // Settle setups, including children that attached while their parent was being set up.
    while (this.pending.size > 0 && !this.closed) await Promise.allSettled([...this.pending.values()])
  }

  private onMessage(m: CdpMessage): void {
    if (this.closed) return
    // Own bookkeeping first, then collectors' handlers.
    if (isEvent(m, 'Target.attachedToTarget')) this.onAttached(m.params, m.sessionId)
    else if (isEvent(m, 'Target.detachedFromTarget')) this.dropTarget(m.params.sessionId)
    else if (isEvent(m, 'Target.targetDestroyed')) {
      const sid = this.sessionByTarget.get(m.params.targetId)
      if (sid && !m.sessionId) this.dropTarget(sid)
    } else if (isEvent(m, 'Target.targetInfoChanged')) {
      const sid = this.sessionByTarget.get(m.params.targetInfo.targetId)
      if (sid && !m.sessionId) this.sessions.get(sid)?.updateInfo(m.params.targetInfo)
    }
    if (m.sessionId) {
      const target = this.sessions.get(m.sessionId)
      if (!target) return
      target.dispatch(m.method, m.params)
      // Collectors heard about the crash above; now their per-target state goes.
      if (m.method === 'Inspector.targetCrashed') this.onCrashed(target)
    } else {
      this.browser.dispatch(m.method, m.params)
    }
  }

  private onAttached(ev: EventParams<'Target.attachedToTarget'>, parentSessionId: string | undefined): void {
    const { sessionId, targetInfo } = ev
    if (
      this.sessionByTarget.has(targetInfo.targetId) ||
      IGNORED_CDP_TYPES.has(targetInfo.type) ||
      !planAttaches(this.plan, targetTypeOf(targetInfo.type))
    ) {
      // Already tracked through another session (explicit attach racing auto-attach), not a
      // browsing target, or one the capture plan does not watch: resume it and drop the session.
      void this.sendMayFail('Runtime.runIfWaitingForDebugger', undefined, sessionId)
      void this.sendMayFail('Target.detachFromTarget', { sessionId }, parentSessionId)
      return
    }
    if (this.sessions.size >= this.opts.maxTargets) {
      // Every attached target costs per-target state and CDP traffic: past the cap, leave it unwatched.
      void this.sendMayFail('Runtime.runIfWaitingForDebugger', undefined, sessionId)
      void this.sendMayFail('Target.detachFromTarget', { sessionId }, parentSessionId)
      this.opts.onTargetRefused?.(targetInfo)
      if (this.refusedLogged++ < 20 || this.refusedLogged % 1000 === 0) {
        this.opts.logger.warn(
          {
            targetId: targetInfo.targetId,
            type: targetInfo.type,
            attached: this.sessions.size,
            refused: this.refusedLogged,
          },
          'attached target cap reached; target not watched',
        )
      }
      return
    }
    const parent = parentSessionId ? this.sessions.get(parentSessionId) : undefined
    const target = new AttachedTarget(
      this.raw,
      this.opts.errors,
      this.opts.logger,
      this.opts.bounds,
      targetInfo,
      sessionId,
      parent?.sessionId,
      this.listened,
    )
    target.parent = parent
    this.sessions.set(sessionId, target)
    this.sessionByTarget.set(target.targetId, sessionId)
    parent?.children.add(sessionId)
    const setup = this.setUp(target, ev).finally(() => this.pending.delete(sessionId))
    this.pending.set(sessionId, setup)
  }

  /**
   * Sends what context tracking needs and every collector's attach commands, then resumes the target
   * without waiting for an answer: a session's commands are handled in order, so the domains are on
   * and the new-document scripts registered before the page runs, and no tab waits on the daemon (a
   * noopener tab answers nothing at all until it is resumed; a paused renderer under many tabs
   * opening at once takes seconds to answer). One exception, see holdsUntilEnabled. The answers are
   * awaited afterwards only to announce the target: own commands up to pausedMaxMs, collectors'
   * attach up to attachTimeoutMs. A first document committed before Page.enable took effect is read
   * from the frame tree (adoptFrameTree, with the events held until then).
   */
  private async setUp(target: AttachedTarget, info: EventParams<'Target.attachedToTarget'>): Promise<void> {
    const { sessionId } = target
    const { own, collectors } = this.prepare(target, info.targetInfo.type)
    const resume = () => void this.sendMayFail('Runtime.runIfWaitingForDebugger', undefined, sessionId)
    if (holdsUntilEnabled(info)) void this.bounded(own, CLIENT_TAB_HOLD_MS).then(resume, resume)
    else resume()
    try {
      try {
        await this.bounded(own, this.opts.pausedMaxMs)
      } catch {
        if (!target.closed) this.opts.logger.debug({ targetId: target.targetId }, 'target not answering its setup yet')
        return
      }
      await this.bounded(collectors)
    } catch (err) {
      if (!target.closed) this.opts.logger.warn({ err, targetId: target.targetId }, 'target setup incomplete')
    } finally {
      if (!target.closed) {
        target.announced = true
        this.opts.events.emit('target-attached', target.info())
      }
    }
  }

  /** Starts the monitor's own commands first on the wire, then every collector's attach; promises of both halves. */
  private prepare(target: AttachedTarget, cdpType: string): { own: Promise<unknown>; collectors: Promise<unknown> } {
    // Our commands go on the wire before any collector's, so Page events are tracked from the start.
    const own: Promise<unknown>[] = []
    const plan = this.plan
    const capture = new TargetCapture(target, {
      collectors: this.opts.collectors,
      emit: this.opts.emit,
      logger: this.opts.logger,
    })
    this.captures.set(target.sessionId, capture)
    // The plan's domains (Page first on frame-bearing targets: context tracking needs it whatever is on).
    own.push(capture.enableDomains(plan))
    if (target.hasFrames) {
      own.push(
        target.sendMayFail('Page.getFrameTree').then(r => {
          // Held events are released here, also when the tree could not be read.
          if (r) target.adoptFrameTree(r.frameTree.frame)
          else target.releaseHeld()
        }),
      )
    }
    if (PARENT_TYPES.has(targetTypeOf(cdpType)))
      own.push(target.sendMayFail('Target.setAutoAttach', autoAttachParams(plan)))
    return { own: Promise.all(own), collectors: capture.attachCollectors(plan) }
  }

  /** Categories changed: every attached target gets the new plan on its own session; auto-attach follows. */
  private applyPlan(plan: CapturePlan): void {
    if (this.closed) return
    const before = this.plan
    this.plan = plan
    if (!sameAttachFilter(before, plan)) {
      const params = autoAttachParams(plan)
      void this.sendMayFail('Target.setAutoAttach', params, undefined)
      for (const t of this.sessions.values())
        if (PARENT_TYPES.has(t.targetType)) void t.sendMayFail('Target.setAutoAttach', params)
    }
    for (const capture of this.captures.values()) void capture.apply(plan)
  }

  /** Resolves once the plan in force is applied to every target attached now (tests). */
  async planApplied(): Promise<void> {
    await Promise.all([...this.captures.values()].map(c => c.apply(this.plan)))
  }

  /**
   * The CDP session survives a renderer crash and its enabled domains come back when the tab is
   * reloaded (a second session attached to a crashed target gets no answers until then). So the
   * per-target state is rebuilt on the same session: collectors detach, then attach afresh (nav_seq 0).
   */
  private onCrashed(target: AttachedTarget): void {
    const info = target.currentInfo()
    const { sessionId, parentSessionId } = target
    this.dropTarget(sessionId)
    if (!this.closed) this.onAttached({ sessionId, targetInfo: info, waitingForDebugger: false }, parentSessionId)
  }

  private dropTarget(sessionId: string): void {
    const target = this.sessions.get(sessionId)
    if (!target) return
    this.sessions.delete(sessionId)
    this.captures.delete(sessionId)
    if (this.sessionByTarget.get(target.targetId) === sessionId) this.sessionByTarget.delete(target.targetId)
    if (target.parentSessionId) this.sessions.get(target.parentSessionId)?.children.delete(sessionId)
    for (const child of [...target.children]) this.dropTarget(child)
    const info = target.info()
    target.close()
    if (target.announced) this.opts.events.emit('target-detached', info)
  }

  /** Bounds p by ms (default attachTimeoutMs); a closing connection stops the wait at once (no timer outlives it). */
  private async bounded<T>(p: Promise<T>, ms = this.opts.attachTimeoutMs): Promise<T> {
    if (this.closed) return withTimeout(p, ms, { signal: this.abort.signal })
    const wait = new AbortController()
    this.waits.add(wait)
    this.timeouts++
    try {
      return await withTimeout(p, ms, { signal: wait.signal })
    } finally {
      this.timeouts--
      this.waits.delete(wait)
    }
  }
}

async function connectClient(wsUrl: string, timeoutMs: number, maxEnvelopeBytes: number): Promise<CdpClient> {
  const connecting = CdpClient.connect(wsUrl, maxEnvelopeBytes)
  try {
    return await withTimeout(connecting, timeoutMs, { message: `no answer within ${timeoutMs} ms` })
  } catch (err) {
    // A client that connects after the timeout must not linger.
    connecting.then(
      c => c.close(),
      () => undefined,
    )
    throw new ConnectError(wsUrl, err)
  }
}
