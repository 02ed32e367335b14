// The system category: service_crashed (the launched Chromium, --watch-unit systemd units, the
// daemon's own previous unclean stop) and system_oom_kill (kernel log). Not a CDP collector: these
// watch processes and the kernel, and start once with the daemon.
//
// | Concern | File |
// |---|---|
// | launched Chromium exits, daemon's unclean stop, startSystemCollectors | system.ts |
// | --watch-unit polling of `systemctl show` (rules pure: stepUnit) | system-units.ts |
// | /dev/kmsg follower (non-blocking reads, polled) | system-kmsg.ts |
// | OOM-report parser (pure) | system-oom.ts |
//
// Lifetimes (all from startSystemCollectors() to its stop()): one 'browser-exit'/'state' listener
// pair on the monitor's typed events; one kmsg poll timer (500 ms) holding one open fd; one systemctl
// poll timer (2 s) when units are watched. The unclean-stop report is emitted once at start.
import {
  silentLogger,
  type BrowserExit,
  type Emit,
  type EventData,
  type Logger,
  type MonitorState,
  type MonitorView,
  type Timers,
} from '../src/collector-kit.js'
import { OomWatcher, type KmsgStatus } from './system-kmsg.js'
import { UnitWatcher, type SystemctlRunner } from './system-units.js'

export { OomWatcher, type KmsgStatus } from './system-kmsg.js'
export { UnitWatcher, stepUnit, parseSystemctlShow, type SystemctlRunner } from './system-units.js'

export const CHROMIUM_SERVICE = 'chromium'
export const DAEMON_SERVICE = 'browser-telemetry'

/**
 * service_crashed for the Chromium the daemon launched: one event per 'browser-exit' of the monitor
 * (phase as the monitor saw it: died before DevTools answered = startup, afterwards = running), and
 * gave_up once when the monitor reaches state 'failed' after such a death (it stopped relaunching;
 * the monitor's status knows whether the browser died since it was last collecting).
 * Returns the unsubscribe.
 */
export function watchLaunchedBrowser(monitor: MonitorView, emit: Emit, logger: Logger = silentLogger): () => void {
  let gaveUpReported = false
  const onExit = (exit: BrowserExit) => {
    const data: EventData<'service_crashed'> = { service_name: CHROMIUM_SERVICE, phase: exit.phase }
    if (exit.pid !== undefined) data.pid = exit.pid
    const metadata: Record<string, string> = {}
    if (exit.code !== null) metadata.exit_code = String(exit.code)
    if (exit.signal !== null) metadata.signal = exit.signal
    logger.warn({ pid: exit.pid, code: exit.code, signal: exit.signal, phase: exit.phase }, 'launched Chromium exited')
    emit({
      type: 'service_crashed',
      data,
      source: { kind: 'local_process', event: 'browser-exit', ...(Object.keys(metadata).length ? { metadata } : {}) },
    })
  }
  const onState = (state: MonitorState) => {
    if (state === 'collecting') gaveUpReported = false
    if (state === 'failed' && monitor.status().lastBrowserExit && !gaveUpReported) {
      gaveUpReported = true
      emit({
        type: 'service_crashed',
        data: { service_name: CHROMIUM_SERVICE, phase: 'gave_up' },
        source: { kind: 'local_process', event: 'monitor-state' },
      })
    }
  }
  monitor.events.on('browser-exit', onExit)
  monitor.events.on('state', onState)
  return () => {
    monitor.events.off('browser-exit', onExit)
    monitor.events.off('state', onState)
  }
}

/** service_crashed {browser-telemetry, running} when the event log says the previous run did not stop cleanly. */
export function reportPreviousUncleanStop(log: { readonly previousStopWasUnclean: boolean }, emit: Emit): boolean {
  if (!log.previousStopWasUnclean) return false
  emit({
    type: 'service_crashed',
    data: { service_name: DAEMON_SERVICE, phase: 'running' },
    source: { kind: 'local_process', event: 'unclean-stop' },
  })
  return true
}

export interface SystemCollectorsOptions {
  emit: Emit
  logger?: Logger
  /** --kmsg-path (default /dev/kmsg). */
  kmsgPath?: string
  /** --watch-unit units. */
  watchUnits?: readonly string[]
  /** The event log (for the previous-unclean-stop report). */
  log?: { readonly previousStopWasUnclean: boolean }
  /** The monitor, when the daemon launched Chromium (its crashes become service_crashed). */
  monitor?: MonitorView
  unitPollMs?: number
  kmsgPollMs?: number
  systemctl?: SystemctlRunner
  /** Clock of the kernel-log poll timer (injectable for tests). */
  timers?: Timers
}

export interface SystemCollectors {
  /** For /healthz: whether OOM kills can be seen. */
  kmsg(): KmsgStatus
  stop(): Promise<void>
}

/** Starts every system watcher the options ask for. Never throws for an unreadable kernel log or absent systemd. */
export async function startSystemCollectors(opts: SystemCollectorsOptions): Promise<SystemCollectors> {
  const logger = opts.logger ?? silentLogger
  if (opts.log) reportPreviousUncleanStop(opts.log, opts.emit)
  const unwatchBrowser = opts.monitor ? watchLaunchedBrowser(opts.monitor, opts.emit, logger) : undefined
  const oom = new OomWatcher({
    kmsgPath: opts.kmsgPath,
    emit: opts.emit,
    logger,
    pollMs: opts.kmsgPollMs,
    timers: opts.timers,
  })
  await oom.start()
  const units = new UnitWatcher({
    units: opts.watchUnits ?? [],
    emit: opts.emit,
    logger,
    intervalMs: opts.unitPollMs,
    run: opts.systemctl,
  })
  await units.start()
  return {
    kmsg: () => oom.status(),
    async stop() {
      unwatchBrowser?.()
      await Promise.all([oom.stop(), units.stop()])
    },
  }
}
