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
// pair on the monitor's emitter; one kmsg poll timer (500 ms) holding one open fd; one systemctl
// poll timer (2 s) when units are watched. The unclean-stop report is emitted once at start.
import type { EventEmitter } from 'node:events'
import type { EventData } from '../src/events/index.js'
import type { Emit } from '../src/pipeline.js'
import { silentLogger, type Logger } from '../src/log.js'
import type { Timers } from '../src/util/clock.js'
import { OomWatcher, type KmsgStatus } from './system-kmsg.js'
import { UnitWatcher, type SystemctlRunner } from './system-units.js'

export { OomWatcher, type KmsgStatus } from './system-kmsg.js'
export { UnitWatcher, stepUnit, parseSystemctlShow, type SystemctlRunner } from './system-units.js'

/** What the monitor reports on its events emitter as 'browser-exit' (src/monitor/monitor.ts BrowserExit). */
export interface BrowserExitEvent {
  pid: number | undefined
  code: number | null
  signal: NodeJS.Signals | null
  phase: 'startup' | 'running'
}

export const CHROMIUM_SERVICE = 'chromium'
export const DAEMON_SERVICE = 'browser-telemetry'

/**
 * service_crashed for the Chromium the daemon launched: one event per 'browser-exit' of the monitor
 * (phase as the monitor saw it: died before DevTools answered = startup, afterwards = running), and
 * gave_up once when the monitor reaches state 'failed' after such a death (it stopped relaunching).
 * Returns the unsubscribe.
 */
export function watchLaunchedBrowser(events: EventEmitter, emit: Emit, logger: Logger = silentLogger): () => void {
  let diedSinceCollecting = false
  let gaveUpReported = false
  const onExit = (exit: BrowserExitEvent) => {
    diedSinceCollecting = true
    const data: EventData<'service_crashed'> = { service_name: CHROMIUM_SERVICE, phase: exit.phase }
    if (exit.pid !== undefined) data.pid = exit.pid
    const metadata: Record<string, string> = {}
    if (exit.code !== null) metadata.exit_code = String(exit.code)
    if (exit.signal !== null) metadata.signal = exit.signal
    logger.warn({ pid: exit.pid, code: exit.code, signal: exit.signal, phase: exit.phase }, 'launched Chromium exited')
    emit({ type: 'service_crashed', data, source: { kind: 'local_process', event: 'browser-exit', ...(Object.keys(metadata).length ? { metadata } : {}) } })
  }
  const onState = (state: unknown) => {
    const s = typeof state === 'string' ? state : (state as { state?: unknown } | null)?.state
    if (s === 'collecting') { diedSinceCollecting = false; gaveUpReported = false }
    if (s === 'failed' && diedSinceCollecting && !gaveUpReported) {
      gaveUpReported = true
      emit({ type: 'service_crashed', data: { service_name: CHROMIUM_SERVICE, phase: 'gave_up' }, source: { kind: 'local_process', event: 'monitor-state' } })
    }
  }
  events.on('browser-exit', onExit)
  events.on('state', onState)
  return () => { events.off('browser-exit', onExit); events.off('state', onState) }
}

/** service_crashed {browser-telemetry, running} when the event log says the previous run did not stop cleanly. */
export function reportPreviousUncleanStop(log: { readonly previousStopWasUnclean: boolean }, emit: Emit): boolean {
  if (!log.previousStopWasUnclean) return false
  emit({ type: 'service_crashed', data: { service_name: DAEMON_SERVICE, phase: 'running' }, source: { kind: 'local_process', event: 'unclean-stop' } })
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
  /** The monitor's events emitter, when the daemon launched Chromium. */
  monitorEvents?: EventEmitter
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
  const unwatchBrowser = opts.monitorEvents ? watchLaunchedBrowser(opts.monitorEvents, opts.emit, logger) : undefined
  const oom = new OomWatcher({ kmsgPath: opts.kmsgPath, emit: opts.emit, logger, pollMs: opts.kmsgPollMs, timers: opts.timers })
  await oom.start()
  const units = new UnitWatcher({ units: opts.watchUnits ?? [], emit: opts.emit, logger, intervalMs: opts.unitPollMs, run: opts.systemctl })
  await units.start()
  return {
    kmsg: () => oom.status(),
    async stop() {
      unwatchBrowser?.()
      await Promise.all([oom.stop(), units.stop()])
    },
  }
}
