// The monitor's observable side in one place: its typed event map and its status snapshot.
// Metrics, /healthz and the system collector read these instead of re-deriving monitor state
// from monitor_* telemetry events.
import type { EventEmitter } from 'node:events'
import type { TargetType } from '../events/index.js'
import type { TargetInfo } from './target-types.js'

export type MonitorState = 'starting' | 'collecting' | 'disconnected' | 'failed' | 'stopped'

/** A launched Chromium that ended unexpectedly (before DevTools answered = startup, afterwards = running). */
export interface BrowserExit {
  pid: number | undefined
  code: number | null
  signal: NodeJS.Signals | null
  phase: 'startup' | 'running'
}

/** Every event the monitor emits, with its listener arguments. */
export interface MonitorEventMap {
  state: [state: MonitorState]
  /** The browser's WebSocket URL once connected; undefined while there is none. */
  upstream: [wsUrl: string | undefined]
  'target-attached': [target: TargetInfo]
  'target-detached': [target: TargetInfo]
  'browser-exit': [exit: BrowserExit]
}

export type MonitorEvents = EventEmitter<MonitorEventMap>

/** The subscribe side of MonitorEvents (what readers need; tests can hand in a plain typed emitter). */
export type MonitorEventSource = Pick<MonitorEvents, 'on' | 'off'>

export interface MonitorStatus {
  state: MonitorState
  /** Attached targets by target_type (types with none are absent). */
  targets: Partial<Record<TargetType, number>>
  /** Reconnect attempts made since the connection was lost (0 while collecting). */
  reconnectAttempt: number
  /** Successful reconnects since start (monitor_reconnected). */
  reconnects: number
  /** Failed CDP commands (not session-closed ones) since start, by method. */
  cdpErrors: Record<string, number>
  /** Targets left unwatched because --max-targets were attached (browser_telemetry_targets_refused_total). */
  refusedTargets?: number
  /** The launched browser's pid (launch mode). */
  browserPid?: number
  /** The launched browser's last unexpected exit since the monitor was last collecting. */
  lastBrowserExit?: BrowserExit
}

/** What metrics, /healthz and the system collector read of a monitor. */
export interface MonitorView {
  readonly events: MonitorEventSource
  status(): MonitorStatus
}
