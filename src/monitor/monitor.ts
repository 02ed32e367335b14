// One idea: the browser connection's life. The monitor finds or launches the browser, owns the one
// CDP connection (BrowserConnection) and runs the reconnect state machine (collecting ->
// disconnected -> collecting | failed).
import { EventEmitter } from 'node:events'
import type { Emit, EmitUnbuilt, EventInput } from '../pipeline/pipeline.js'
import { silentLogger, type Logger } from '../log.js'
import { Bounds } from '../pipeline/bounds.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { withDefaults } from '../util/defaults.js'
import { withTimeout } from '../util/with-timeout.js'
import { BrowserConnection } from './connection.js'
import { backoffDelay, resolveBrowserWsUrl } from './discover.js'
import { ChromiumExitedError, launchChromium, type LaunchedBrowser } from './launch.js'
import { isolationWarnings } from './isolation.js'
import type { ChromiumUser } from './chromium-user.js'
import { ProtocolErrorLog } from './protocol-error.js'
import type { BrowserExit, MonitorEventMap, MonitorState, MonitorStatus, MonitorView } from './status.js'
import type { TargetInfo } from './target-types.js'
import type { Collector } from './types.js'
import { fixedCapture, planSource, type CaptureSource, type PlanSource } from './capture.js'
import { checkCollectors } from './capture-plan.js'

export type { BrowserExit, MonitorState } from './status.js'

export interface ReconnectOptions {
  /** Attempts before giving up (default 10). */
  attempts: number
  /** First delay, doubled each attempt (default 250 ms). */
  initialBackoffMs: number
  /** Delay cap (default 2 s). */
  maxBackoffMs: number
}

export interface MonitorLaunchOptions {
  chromiumPath?: string
  extraArgs?: string[]
  startUrl?: string
  /** Internal DevTools port; default 0 = a free one picked by Chromium (kept for relaunches). */
  port?: number
  /** Profile dir to reuse; default a fresh temp dir per launch. */
  userDataDir?: string
  /** Run the browser as this user (the daemon is root); default the daemon's own user. */
  user?: ChromiumUser
}

export interface MonitorOptions {
  /** http://host:port (discovered via /json/version) or ws://... of a running browser. Omit to launch one. */
  cdpUrl?: string
  /** Launch mode settings (used when cdpUrl is absent). */
  launch?: MonitorLaunchOptions
  emit: Emit
  collectors?: readonly Collector[]
  /** The enabled categories and body cap the capture plan is built from, and their changes (default: every capture category on, fixed). */
  capture?: CaptureSource
  logger?: Logger
  reconnect?: Partial<ReconnectOptions>
  /** Bound on collectors' attach at one target's setup before it is announced anyway (default 5 s). */
  attachTimeoutMs?: number
  /** Attached targets at most (default 500); more are resumed and left unwatched, counted and logged. */
  maxTargets?: number
  /**
   * Bound on the monitor's own setup commands before a target is announced unanswered (default
   * attachTimeoutMs); targets are resumed without waiting for it.
   */
  pausedMaxMs?: number
  /** Byte bounds and their eviction counters, shared with the collectors (default: this monitor's own, at the default bounds). */
  bounds?: Bounds
  /** emit() of console events not built yet, while the CDP backlog is over its bound (the pipeline's emit); absent: never shed at intake. */
  emitUnbuilt?: EmitUnbuilt
}

export const DEFAULT_RECONNECT: ReconnectOptions = {
  attempts: DEFAULT_SETTINGS.reconnectAttempts,
  initialBackoffMs: DEFAULT_SETTINGS.reconnectInitialBackoffMs,
  maxBackoffMs: DEFAULT_SETTINGS.reconnectMaxBackoffMs,
}

export class Monitor implements MonitorView {
  /** Typed by MonitorEventMap: state, upstream, target-attached/-detached, browser-exit. */
  readonly events = new EventEmitter<MonitorEventMap>()
  private readonly opts: MonitorOptions
  private readonly reconnect: ReconnectOptions
  private readonly logger: Logger
  /** Failed best-effort CDP commands by method, over every connection of this monitor. */
  private readonly errors: ProtocolErrorLog
  private readonly bounds: Bounds
  private currentState: MonitorState = 'starting'
  /** Attempt number of the reconnect in progress (0 = none). */
  private reconnectAttempt = 0
  private reconnects = 0
  private lastBrowserExit: BrowserExit | undefined
  private conn: BrowserConnection | undefined
  private browser: LaunchedBrowser | undefined
  /** Fixed after the first launch so a relaunched browser is found on the same port. */
  private launchPort: number | undefined
  /** Set 'off' once the sandbox failed to start, so relaunches do not probe it again. */
  private sandbox: 'auto' | 'off' = 'auto'
  /** Why the sandbox could not start, once it failed (kept for /healthz across relaunches). */
  private sandboxFallback: string | undefined
  private started = false
  /** Aborted by stop(): cancels backoff sleeps and the reconnect loop. */
  private readonly stopping = new AbortController()
  private reconnecting: Promise<void> | undefined
  private readonly capture: PlanSource

  constructor(opts: MonitorOptions) {
    this.opts = opts
    this.reconnect = withDefaults(DEFAULT_RECONNECT, opts.reconnect)
    this.logger = opts.logger ?? silentLogger
    this.errors = new ProtocolErrorLog({ logger: this.logger })
    this.launchPort = opts.launch?.port
    // A collector the plan cannot place stops the daemon here, with the reason.
    checkCollectors(opts.collectors ?? [])
    this.capture = planSource(opts.capture ?? fixedCapture(), opts.collectors ?? [])
    this.bounds = opts.bounds ?? new Bounds()
    // The daemon's steps (src/daemon/), /healthz, metrics and collectors may all listen; the default
    // cap of 10 would warn.
    this.events.setMaxListeners(50)
  }

  get state(): MonitorState {
    return this.currentState
  }
  get browserWsUrl(): string | undefined {
    return this.conn?.wsUrl
  }
  /** The launched browser (launch mode only). */
  get launched(): LaunchedBrowser | undefined {
    return this.browser
  }

  targets(): TargetInfo[] {
    return this.conn?.targets() ?? []
  }

  /** Resolves once the capture plan in force is applied to every attached target (tests, benches). */
  async planApplied(): Promise<void> {
    await this.conn?.planApplied()
  }

  /** Failed CDP commands of kind 'error' (not session-closed) since start, by method. */
  cdpErrors(): Record<string, number> {
    return this.errors.counts()
  }
  /** Targets not watched because --max-targets were attached (metrics: browser_telemetry_targets_refused_total). */
  refusedTargets = 0

  /** Attached targets by target_type (metrics: browser_telemetry_attached_targets). */
  targetCounts(): MonitorStatus['targets'] {
    return this.conn?.targetCounts() ?? {}
  }

  /** Everything the monitor knows about itself now: metrics, /healthz and the system collector read this. */
  status(): MonitorStatus {
    const s: MonitorStatus = {
      state: this.currentState,
      targets: this.targetCounts(),
      reconnectAttempt: this.reconnectAttempt,
      reconnects: this.reconnects,
      cdpErrors: this.errors.counts(),
      refusedTargets: this.refusedTargets,
    }
    if (this.browser) s.browserPid = this.browser.pid
    if (this.lastBrowserExit) s.lastBrowserExit = this.lastBrowserExit
    return s
  }

  /** Whether the launched browser runs as the daemon's own user (it can then read the data dir). */
  get sharesDaemonUser(): boolean {
    return this.opts.launch !== undefined && this.opts.launch.user === undefined
  }

  /** What weakens the launched browser's isolation, for /healthz (the log says it once at launch). */
  warnings(): string[] {
    const b = this.browser
    return b
      ? isolationWarnings({
          sandboxed: b.sandbox.enabled,
          sandboxFallback: this.sandboxFallback,
          sharesDaemonUser: this.sharesDaemonUser,
        })
      : []
  }

  /** What /healthz reports for the monitor. */
  health(): { state: MonitorState; targets: number; browser_pid?: number } {
    const s = this.status()
    const h: { state: MonitorState; targets: number; browser_pid?: number } = {
      state: s.state,
      targets: Object.values(s.targets).reduce((a, b) => a + b, 0),
    }
    if (s.browserPid !== undefined) h.browser_pid = s.browserPid
    return h
  }

  /** Per-target and per-connection bookkeeping sizes, for leak tests. */
  debugCounts() {
    const c = this.conn?.counts() ?? {
      sessions: 0,
      targetsById: 0,
      pendingAttaches: 0,
      timers: 0,
      sessionListeners: 0,
      sessionDetaches: 0,
      inFlightCommands: 0,
      browserListeners: 0,
    }
    return { ...c, monitorListeners: this.events.eventNames().reduce((n, e) => n + this.events.listenerCount(e), 0) }
  }

  /** Connects (launching first in launch mode) and attaches existing targets. Rejects on startup failure. */
  async start(): Promise<void> {
    if (this.started) throw new Error('Monitor.start() called twice')
    this.started = true
    this.setState('starting')
    let step = 'connect'
    try {
      if (!this.opts.cdpUrl) {
        step = 'launch'
        await this.launch('startup')
        step = 'connect'
      }
      const conn = await this.connect()
      if (this.stopping.signal.aborted) {
        await conn.close()
        return
      }
      this.adopt(conn)
    } catch (err) {
      const failedStep = (err as { step?: unknown }).step
      this.emit({ type: 'monitor_init_failed', data: { step: typeof failedStep === 'string' ? failedStep : step } })
      this.logger.error({ err }, 'monitor startup failed')
      if (!this.stopping.signal.aborted) this.setState('failed')
      await this.closeBrowser()
      throw err
    }
    this.setState('collecting')
    this.checkStillOpen()
  }

  /**
   * Opens a new tab and navigates it only once it is attached, so the collectors see the page from its
   * first request (a tab created with its URL can commit before Page.enable reaches it).
   */
  async openPage(url: string, timeoutMs = 15_000): Promise<string> {
    const conn = this.conn
    if (!conn) throw new Error('no browser connection')
    const { targetId } = await conn.browser.send('Target.createTarget', { url: 'about:blank' })
    // Navigated only once announced (its collectors set up), so they see the whole navigation: a
    // session that exists but is still being set up is waited for like one not attached yet.
    const known = this.targets().find(t => t.targetId === targetId)
    const info =
      known && conn.session(known.sessionId)?.announced ? known : await this.attachedTarget(targetId, timeoutMs)
    const session = conn.session(info.sessionId)
    if (!session) throw new Error(`tab ${targetId} went away before it was navigated`)
    await session.send('Page.navigate', { url })
    return targetId
  }

  /** Resolves when targetId is announced as attached (rejects after timeoutMs). */
  private async attachedTarget(targetId: string, timeoutMs: number): Promise<TargetInfo> {
    let onAttached: ((t: TargetInfo) => void) | undefined
    const attached = new Promise<TargetInfo>(resolve => {
      onAttached = t => {
        if (t.targetId === targetId) resolve(t)
      }
      this.events.on('target-attached', onAttached)
    })
    try {
      return await withTimeout(attached, timeoutMs, {
        message: `tab ${targetId} was not attached within ${timeoutMs} ms`,
      })
    } finally {
      this.events.off('target-attached', onAttached!)
    }
  }

  /** Detaches collectors, closes the connection and stops a launched browser. */
  async stop(): Promise<void> {
    if (this.currentState === 'stopped') return
    this.stopping.abort()
    this.setState('stopped')
    const conn = this.conn
    this.conn = undefined
    if (conn) {
      await conn.close()
      this.events.emit('upstream', undefined)
    }
    await this.reconnecting?.catch(() => undefined)
    await this.closeBrowser()
  }

  private emit(input: EventInput): void {
    this.opts.emit({ ...input, source: { kind: 'local_process' } } as EventInput)
  }

  private setState(s: MonitorState): void {
    if (this.currentState === s) return
    this.currentState = s
    if (s === 'collecting') {
      this.reconnectAttempt = 0
      this.lastBrowserExit = undefined
    }
    this.logger.info({ state: s }, 'monitor state')
    this.events.emit('state', s)
  }

  private async connect(): Promise<BrowserConnection> {
    const wsUrl = this.browser && !this.opts.cdpUrl ? this.browser.wsUrl : await resolveBrowserWsUrl(this.opts.cdpUrl!)
    return BrowserConnection.open({
      wsUrl,
      collectors: this.opts.collectors ?? [],
      capture: this.capture,
      emit: this.opts.emit,
      logger: this.logger,
      attachTimeoutMs: this.opts.attachTimeoutMs ?? 5000,
      maxTargets: this.opts.maxTargets ?? DEFAULT_SETTINGS.maxTargets,
      onTargetRefused: () => {
        this.refusedTargets++
      },
      pausedMaxMs: this.opts.pausedMaxMs,
      bounds: this.bounds,
      emitUnbuilt: this.opts.emitUnbuilt,
      events: this.events,
      errors: this.errors,
      onLost: c => this.onConnectionLost(c),
    })
  }

  private adopt(conn: BrowserConnection): void {
    this.conn = conn
    this.events.emit('upstream', conn.wsUrl)
  }

  /** A connection that closed between its setup and adopt() was not reported (it was not current yet). */
  private checkStillOpen(): void {
    if (this.conn?.closed)
      queueMicrotask(() => {
        if (this.conn?.closed) this.onConnectionLost(this.conn)
      })
  }

  private onConnectionLost(conn: BrowserConnection): void {
    if (conn !== this.conn || this.stopping.signal.aborted) return
    const lostAt = performance.now()
    // The connection already discarded its targets, collectors' per-target state and timers.
    this.conn = undefined
    this.events.emit('upstream', undefined)
    void conn.close()
    this.emit({ type: 'monitor_disconnected', data: { reason: 'browser_restarted' } })
    this.setState('disconnected')
    const loop: Promise<void> = this.reconnectLoop(lostAt).finally(() => {
      if (this.reconnecting === loop) this.reconnecting = undefined
    })
    this.reconnecting = loop
  }

  private async reconnectLoop(lostAt: number): Promise<void> {
    const { attempts } = this.reconnect
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (!(await sleep(backoffDelay(attempt, this.reconnect), this.stopping.signal))) return
      this.reconnectAttempt = attempt
      try {
        if (!this.opts.cdpUrl && this.browserGone()) await this.launch('running')
        if (this.stopping.signal.aborted) return
        const conn = await this.connect()
        if (this.stopping.signal.aborted) {
          await conn.close()
          return
        }
        this.adopt(conn)
        this.reconnects++
        this.setState('collecting')
        this.emit({
          type: 'monitor_reconnected',
          data: { reconnect_duration_ms: Math.round(performance.now() - lostAt) },
        })
        this.logger.info({ attempt, wsUrl: conn.wsUrl }, 'reconnected to the browser')
        this.checkStillOpen()
        return
      } catch (err) {
        this.logger.warn({ err, attempt, attempts }, 'reconnect attempt failed')
      }
    }
    if (this.stopping.signal.aborted) return
    this.emit({ type: 'monitor_reconnect_failed', data: { reason: 'reconnect_exhausted' } })
    this.setState('failed')
    await this.closeBrowser()
  }

  private browserGone(): boolean {
    const p = this.browser?.process
    return !p || p.exitCode !== null || p.signalCode !== null
  }

  /** Launches Chromium (relaunch: same port); reports its unexpected exit on events 'browser-exit'. */
  private async launch(phase: 'startup' | 'running'): Promise<void> {
    const old = this.browser
    this.browser = undefined
    await old?.close()
    const l = this.opts.launch ?? {}
    let b: LaunchedBrowser
    try {
      b = await launchChromium({
        chromiumPath: l.chromiumPath,
        extraArgs: l.extraArgs,
        startUrl: l.startUrl,
        userDataDir: l.userDataDir,
        port: this.launchPort ?? 0,
        user: l.user,
        sandbox: this.sandbox,
      })
    } catch (err) {
      if (err instanceof ChromiumExitedError)
        this.browserExited({ pid: err.pid, code: err.code, signal: err.signal, phase: 'startup' })
      throw err
    }
    if (this.stopping.signal.aborted) {
      await b.close()
      return
    }
    this.browser = b
    this.launchPort = b.port
    if (b.sandbox.fallbackReason !== undefined) {
      this.sandbox = 'off'
      this.sandboxFallback = b.sandbox.fallbackReason
      this.logger.warn(
        { reason: b.sandbox.fallbackReason },
        'Chromium sandbox cannot start here; running Chromium with --no-sandbox',
      )
    }
    // Once per start; the fallback said its own line above.
    if (phase === 'startup')
      for (const w of this.warnings())
        if (b.sandbox.fallbackReason === undefined || !w.startsWith('Chromium runs with --no-sandbox'))
          this.logger.warn(w)
    this.logger.info(
      { pid: b.pid, port: b.port, phase, user: l.user?.name, sandbox: b.sandbox.enabled },
      'launched Chromium',
    )
    void b.exited.then(({ code, signal }) => {
      if (this.browser !== b || this.stopping.signal.aborted) return
      this.logger.warn({ pid: b.pid, code, signal }, 'launched Chromium exited')
      this.browserExited({ pid: b.pid, code, signal, phase: 'running' })
    })
  }

  private browserExited(exit: BrowserExit): void {
    this.lastBrowserExit = exit
    this.events.emit('browser-exit', exit)
  }

  private async closeBrowser(): Promise<void> {
    const b = this.browser
    this.browser = undefined
    await b?.close()
  }
}

/** Resolves true after ms, or false at once when signal aborts (the timer is always cleared). */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false)
  return new Promise(resolve => {
    const onAbort = () => {
      clearTimeout(timer)
      resolve(false)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve(true)
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
