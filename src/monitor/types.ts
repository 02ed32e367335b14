// The contract between the monitor and the collectors. Collectors import only this (and events,
// pipeline types); the monitor implements it.
import type { ProtocolMapping } from 'devtools-protocol/types/protocol-mapping.js'
import type { Context, TargetType } from '../events/index.js'
import type { Emit } from '../pipeline/pipeline.js'
import type { CaptureNeeds } from './capture-plan.js'

export type CdpCommand = keyof ProtocolMapping.Commands
export type CdpEvent = keyof ProtocolMapping.Events
export type CommandParams<M extends CdpCommand> = ProtocolMapping.Commands[M]['paramsType'][0]
export type CommandResult<M extends CdpCommand> = ProtocolMapping.Commands[M]['returnType']
export type EventParams<E extends CdpEvent> = ProtocolMapping.Events[E][0]

// What non-CDP collectors (collectors/system.ts) read of the monitor.
export type {
  CaptureCategory,
  CaptureNeeds,
  CapturePlan,
  PlanCollector,
  PlanDomain,
  PlannedCollector,
  TargetPlan,
} from './capture-plan.js'
export type { BrowserExit, MonitorEventSource, MonitorState, MonitorStatus, MonitorView } from './status.js'
// Target types collectors decide by (the monitor's own sets, one leaf).
export { DOCUMENT_TYPES } from './target-types.js'
// The body cap's default, for the network collector.
export { DEFAULT_BODY_MAX_BYTES } from './capture-plan.js'

/** Removes what attach() set up: listeners, timers, per-target state. Must be idempotent. */
export type Detach = () => void

/** A CDP session (a target's, or the browser's): commands and events typed by devtools-protocol's ProtocolMapping. */
export interface CdpSession {
  /**
   * Sends a command; the result type follows from the method. Rejects with a ProtocolError whose
   * kind is 'closed' when the session, its target or its document went away (always after detach).
   */
  send<M extends CdpCommand>(method: M, params?: CommandParams<M>): Promise<CommandResult<M>>
  /**
   * A best-effort command: resolves undefined instead of rejecting. 'closed' failures are ignored
   * quietly; any other failure is counted by method (browser_telemetry_cdp_errors_total) and
   * logged at warn at most once per method per minute.
   */
  sendMayFail<M extends CdpCommand>(method: M, params?: CommandParams<M>): Promise<CommandResult<M> | undefined>
  /** Subscribes to an event; the payload type follows from the event name. Returns the unsubscribe. */
  on<E extends CdpEvent>(event: E, handler: (params: EventParams<E>) => void): () => void
  /** Aborted when the session goes away (target detached or crashed, connection replaced). */
  readonly signal: AbortSignal
}

/** One attached target (flattened CDP session) as collectors see it. */
export interface TargetSession extends CdpSession {
  readonly sessionId: string
  readonly targetId: string
  readonly targetType: TargetType
  /**
   * Context at this moment: url, frame_id, loader_id, session_id, target_id, target_type, nav_seq.
   * Absent values omitted. A fresh object the caller owns: events are built on it with
   * Object.assign (an object spread `{...ctx, ...}` takes V8's slow runtime path, ~5 µs per event).
   */
  context(): Context
  /**
   * Set while the document context is not read yet (a frame-bearing target's Page.getFrameTree has
   * not answered; its events are held meanwhile); resolves once it is. A signal a collector derives
   * from a timer (network_idle) waits for it, so it carries the same context as the held events.
   */
  readonly contextPending?: Promise<void>
}

/** Browser-level scope (no target session): Target.* events, e.g. for page_tab_opened. */
export type BrowserScope = CdpSession

export interface Collector {
  readonly name: string
  /**
   * What the capture plan places this collector by: its category, target types, CDP domains and
   * page scripts. attach() runs on a target only while the plan lists it there (at attach, or later
   * when its category is switched on), and its detach runs when the category is switched off.
   * Absent: attached to every target for its whole life. Domains are the plan's job (the monitor
   * enables them before attach's answers matter); a collector only subscribes and sets up its own
   * extras (scripts, bindings).
   */
  readonly capture?: CaptureNeeds
  /**
   * Called for every attached target while it is still paused (waitForDebuggerOnStart), right after
   * the monitor sent the plan's domain enables: subscribe and set up the collector's own extras
   * (scripts, bindings), never enable domains. The monitor resumes the target once every
   * collector's attach settled (or timed out).
   */
  attach?(session: TargetSession, emit: Emit): Detach | Promise<Detach>
  /** Called once per browser connection (and again after each reconnect). */
  attachBrowser?(browser: BrowserScope, emit: Emit): Detach | Promise<Detach>
}
