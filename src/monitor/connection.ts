// One browser-level CDP connection and every target attached through it. A reconnect never reuses
// a BrowserConnection: the monitor closes the old one (dropping all per-target state) and opens a new one.
import CDP from 'chrome-remote-interface'
import type { EventEmitter } from 'node:events'
import type { Protocol } from 'devtools-protocol'
import type { Emit } from '../pipeline.js'
import type { Logger } from '../log.js'
import { HandlerRegistry, type Handler } from './handlers.js'
import { AttachedTarget, type TargetInfo } from './target-session.js'
import type { BrowserScope, CdpCommand, CdpEvent, Collector, CommandParams, CommandResult, Detach, EventParams } from './types.js'

interface CdpMessage { method: string; params: unknown; sessionId?: string }

/** The slice of chrome-remote-interface's client we use (flattened sessions via the sessionId argument). */
interface CdpClient {
  send(method: string, params?: object, sessionId?: string): Promise<unknown>
  on(event: 'event', handler: (message: CdpMessage) => void): unknown
  on(event: 'disconnect', handler: () => void): unknown
  removeAllListeners(): unknown
  close(): Promise<void>
}

/** A CDP command of the connection setup failed; `step` names it (monitor_init_failed.step). */
export class InitStepError extends Error {
  constructor(readonly step: string, readonly cause: unknown) {
    super(`CDP ${step} failed: ${cause instanceof Error ? cause.message : String(cause)}`)
    this.name = 'InitStepError'
  }
}

/** Could not open the WebSocket to the browser. */
export class ConnectError extends Error {
  readonly step = 'connect'
  constructor(readonly wsUrl: string, readonly cause: unknown) {
    super(`cannot connect to the browser at ${wsUrl}: ${cause instanceof Error ? cause.message : String(cause)}`)
    this.name = 'ConnectError'
  }
}

/** Targets that exist on their own (not children of a page); attached explicitly if auto-attach missed them. */
const TOP_LEVEL_TYPES = new Set(['page', 'background_page', 'service_worker', 'shared_worker'])
/** Targets whose children (OOPIFs, dedicated workers) we auto-attach through their own session. */
const PARENT_TYPES = new Set(['page', 'iframe', 'background_page', 'worker', 'shared_worker', 'service_worker'])
/** Chromium's own UI (omnibox popups, tab strip) and the tab/browser wrappers are not browsing targets. */
const IGNORED_TYPES = new Set(['browser', 'tab', 'browser_ui'])
const AUTO_ATTACH = {
  autoAttach: true, waitForDebuggerOnStart: true, flatten: true,
  filter: [...[...IGNORED_TYPES].map((type) => ({ type, exclude: true })), {}],
}

export interface ConnectionOptions {
  wsUrl: string
  collectors: readonly Collector[]
  emit: Emit
  logger: Logger
  /** Bound on each target's setup (own domains + collectors' attach) before it is resumed anyway. */
  attachTimeoutMs: number
  /** Receives 'target-attached' / 'target-detached' (TargetInfo). */
  events: EventEmitter
  /** Called once when the WebSocket closes without close() having been called. */
  onLost: (conn: BrowserConnection) => void
  connectTimeoutMs?: number
}

export class BrowserConnection {
  readonly wsUrl: string
  private readonly client: CdpClient
  private readonly opts: ConnectionOptions
  private readonly sessions = new Map<string, AttachedTarget>()
  private readonly sessionByTarget = new Map<string, string>()
  /** Setup in flight per session id (own domains + collectors' attach). */
  private readonly pending = new Map<string, Promise<void>>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly browserHandlers = new HandlerRegistry()
  private readonly browserDetaches: Detach[] = []
  private readonly abort = new AbortController()

  private constructor(client: CdpClient, opts: ConnectionOptions) {
    this.client = client
    this.opts = opts
    this.wsUrl = opts.wsUrl
    client.on('event', (m) => this.onMessage(m))
    client.on('disconnect', () => {
      if (this.closed) return
      this.dispose()
      opts.onLost(this)
    })
  }

  /** Connects and runs the domain setup; on failure closes what it opened and throws ConnectError or InitStepError. */
  static async open(opts: ConnectionOptions): Promise<BrowserConnection> {
    const client = await connectClient(opts.wsUrl, opts.connectTimeoutMs ?? 10000)
    const conn = new BrowserConnection(client, opts)
    try {
      await conn.init()
    } catch (err) {
      await conn.close()
      throw err
    }
    return conn
  }

  get closed(): boolean { return this.abort.signal.aborted }

  targets(): TargetInfo[] {
    return [...this.sessions.values()].map((t) => t.info())
  }

  session(sessionId: string): AttachedTarget | undefined { return this.sessions.get(sessionId) }

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
    const browserListeners = this.browserHandlers.size
    return {
      sessions: this.sessions.size, targetsById: this.sessionByTarget.size, pendingAttaches: this.pending.size,
      timers: this.timers.size, sessionListeners, sessionDetaches, inFlightCommands, browserListeners,
    }
  }

  /** Drops every target and collector hook and closes the WebSocket. Idempotent. */
  async close(): Promise<void> {
    this.dispose()
    await this.client.close().catch(() => undefined)
    this.client.removeAllListeners()
  }

  /** Discards all per-connection state: targets (collectors' detach), browser hooks, timers. */
  private dispose(): void {
    if (this.closed) return
    this.abort.abort()
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    for (const sessionId of [...this.sessions.keys()]) this.dropTarget(sessionId)
    for (const d of this.browserDetaches.splice(0)) {
      try { d() } catch (err) { this.opts.logger.warn({ err }, 'collector browser detach threw') }
    }
    this.browserHandlers.clear()
    this.pending.clear()
  }

  send(method: string, params?: object, sessionId?: string): Promise<unknown> {
    return this.client.send(method, params ?? {}, sessionId)
  }

  /** Best-effort command: the target may already be gone; failure is expected and only logged at debug. */
  private sendMayFail(method: string, params?: object, sessionId?: string): Promise<unknown> {
    return this.send(method, params, sessionId).catch((err: unknown) => {
      this.opts.logger.debug({ err, method, sessionId }, 'best-effort CDP command failed')
      return undefined
    })
  }

  private async init(): Promise<void> {
    const { collectors, emit, logger } = this.opts
    const scope = this.browserScope()
    // Browser hooks first, so a collector sees the targetCreated events discovery replays for existing targets.
    for (const c of collectors) {
      if (!c.attachBrowser) continue
      try {
        const d = await this.withTimeout(Promise.resolve(c.attachBrowser(scope, emit)))
        if (d) { if (this.closed) d(); else this.browserDetaches.push(d) }
      } catch (err) {
        logger.warn({ err, collector: c.name }, 'collector attachBrowser failed')
      }
    }
    const step = async (method: string, params?: object) => {
      try { return await this.send(method, params) } catch (err) { throw new InitStepError(method, err) }
    }
    await step('Target.setDiscoverTargets', { discover: true })
    // Attaches every existing page/worker too (attachedToTarget arrives before the reply).
    await step('Target.setAutoAttach', AUTO_ATTACH)
    const { targetInfos } = await step('Target.getTargets') as Protocol.Target.GetTargetsResponse
    await Promise.all(targetInfos
      .filter((i) => TOP_LEVEL_TYPES.has(i.type) && !this.sessionByTarget.has(i.targetId))
      .map((i) => this.sendMayFail('Target.attachToTarget', { targetId: i.targetId, flatten: true })))
    // Settle setups, including children that attached while their parent was being set up.
    while (this.pending.size > 0 && !this.closed) await Promise.allSettled([...this.pending.values()])
  }

  private browserScope(): BrowserScope {
    const conn = this
    return {
      send<M extends CdpCommand>(method: M, params?: CommandParams<M>) {
        if (conn.closed) return Promise.reject(new Error(`${method}: browser connection closed`))
        return conn.send(method, params as object | undefined) as Promise<CommandResult<M>>
      },
      on<E extends CdpEvent>(event: E, handler: (params: EventParams<E>) => void) {
        if (conn.closed) return () => undefined
        return conn.browserHandlers.add(event, handler as Handler)
      },
      signal: this.abort.signal,
    }
  }

  private onMessage(m: CdpMessage): void {
    if (this.closed) return
    // Own bookkeeping first, then collectors' handlers.
    switch (m.method) {
      case 'Target.attachedToTarget': this.onAttached(m.params as Protocol.Target.AttachedToTargetEvent, m.sessionId); break
      case 'Target.detachedFromTarget': this.dropTarget((m.params as Protocol.Target.DetachedFromTargetEvent).sessionId); break
      case 'Target.targetDestroyed': {
        const sid = this.sessionByTarget.get((m.params as Protocol.Target.TargetDestroyedEvent).targetId)
        if (sid && !m.sessionId) this.dropTarget(sid)
        break
      }
      case 'Target.targetInfoChanged': {
        const info = (m.params as Protocol.Target.TargetInfoChangedEvent).targetInfo
        const sid = this.sessionByTarget.get(info.targetId)
        if (sid && !m.sessionId) this.sessions.get(sid)?.updateInfo(info)
        break
      }
    }
    if (m.sessionId) {
      const target = this.sessions.get(m.sessionId)
      if (!target) return
      target.dispatch(m.method, m.params)
      // Collectors heard about the crash above; now their per-target state goes.
      if (m.method === 'Inspector.targetCrashed') this.onCrashed(target)
    } else {
      this.browserHandlers.dispatch(m.method, m.params, this.opts.logger, { scope: 'browser' })
    }
  }

  private onAttached(ev: Protocol.Target.AttachedToTargetEvent, parentSessionId: string | undefined): void {
    const { sessionId, targetInfo } = ev
    if (this.sessionByTarget.has(targetInfo.targetId) || IGNORED_TYPES.has(targetInfo.type)) {
      // Already tracked through another session (explicit attach racing auto-attach), or not a
      // browsing target: resume it and drop the session.
      void this.sendMayFail('Runtime.runIfWaitingForDebugger', {}, sessionId)
      void this.sendMayFail('Target.detachFromTarget', { sessionId }, parentSessionId)
      return
    }
    const parent = parentSessionId ? this.sessions.get(parentSessionId) : undefined
    const target = new AttachedTarget((method, params, sid) => this.send(method, params, sid), this.opts.logger, targetInfo, sessionId, parent?.sessionId)
    this.sessions.set(sessionId, target)
    this.sessionByTarget.set(target.targetId, sessionId)
    parent?.children.add(sessionId)
    const setup = this.setUp(target, targetInfo.type).finally(() => this.pending.delete(sessionId))
    this.pending.set(sessionId, setup)
  }

  /** Enables what context tracking needs, runs collectors' attach, then always resumes the target. */
  private async setUp(target: AttachedTarget, cdpType: string): Promise<void> {
    const { sessionId } = target
    try {
      await this.withTimeout(this.prepare(target, cdpType))
    } catch (err) {
      this.opts.logger.warn({ err, targetId: target.targetId }, 'target setup incomplete; resuming it anyway')
    } finally {
      if (!target.closed) {
        void this.sendMayFail('Runtime.runIfWaitingForDebugger', {}, sessionId)
        target.announced = true
        this.opts.events.emit('target-attached', target.info())
      }
    }
  }

  private async prepare(target: AttachedTarget, cdpType: string): Promise<void> {
    const { sessionId } = target
    // Our commands go on the wire before any collector's, so Page events are tracked from the start.
    const own: Promise<unknown>[] = []
    if (target.hasFrames) {
      own.push(this.sendMayFail('Page.enable', {}, sessionId))
      own.push(this.sendMayFail('Page.getFrameTree', {}, sessionId).then((r) => {
        const frame = (r as Protocol.Page.GetFrameTreeResponse | undefined)?.frameTree.frame
        if (frame) target.seedFrame(frame)
      }))
    }
    if (PARENT_TYPES.has(cdpType)) own.push(this.sendMayFail('Target.setAutoAttach', AUTO_ATTACH, sessionId))
    const collectorSetups = this.opts.collectors.map(async (c) => {
      if (!c.attach) return
      try {
        const d = await c.attach(target, this.opts.emit)
        if (typeof d === 'function') target.addDetach(d)
      } catch (err) {
        this.opts.logger.warn({ err, collector: c.name, targetId: target.targetId }, 'collector attach failed')
      }
    })
    await Promise.all([...own, ...collectorSetups])
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
    if (this.sessionByTarget.get(target.targetId) === sessionId) this.sessionByTarget.delete(target.targetId)
    if (target.parentSessionId) this.sessions.get(target.parentSessionId)?.children.delete(sessionId)
    for (const child of [...target.children]) this.dropTarget(child)
    const info = target.info()
    target.close()
    if (target.announced) this.opts.events.emit('target-detached', info)
  }

  /** Races p against attachTimeoutMs; the timer is tracked so a closed connection leaves none behind. */
  private withTimeout<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer)
        reject(new Error(`timed out after ${this.opts.attachTimeoutMs} ms`))
      }, this.opts.attachTimeoutMs)
      this.timers.add(timer)
      p.then(
        (v) => { clearTimeout(timer); this.timers.delete(timer); resolve(v) },
        (e: unknown) => { clearTimeout(timer); this.timers.delete(timer); reject(e) },
      )
    })
  }
}

async function connectClient(wsUrl: string, timeoutMs: number): Promise<CdpClient> {
  // local: the bundled protocol descriptor, so only the WebSocket is needed (no /json/protocol fetch).
  const connecting = CDP({ target: wsUrl, local: true }) as unknown as Promise<CdpClient>
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
  })
  try {
    return await Promise.race([connecting, timeout])
  } catch (err) {
    // A client that connects after the timeout must not linger.
    connecting.then((c) => c.close(), () => undefined)
    throw new ConnectError(wsUrl, err)
  } finally {
    clearTimeout(timer)
  }
}
