// The sink core's settings: its tuning defaults, what a transport plugs in (SinkOptions), and the
// phases of its life with the transitions allowed between them.
import type { EventLog } from '../store/event-log.js'
import type { Logger } from '../log.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import type { Backoff } from '../util/backoff.js'
import type { LinkEvents, ShipLink } from './link.js'
import type { ReadMapping } from '../store/read-mapping.js'

/**
 * The shipper's life, one value, changed only by `enter()`:
 *   stopped    -> connecting   start()
 *   connecting -> resyncing    the link is up; nothing is sent until the stream says what it holds
 *   resyncing  -> publishing   it said
 *   publishing -> resyncing    a publish failed (ack timeout, refusal): the window is dropped, ask again after a backoff
 *   any        -> connecting   the connection is lost: the window is dropped
 *   any        -> stopped      stop()
 */
export type Phase = 'stopped' | 'connecting' | 'resyncing' | 'publishing'
export const TRANSITIONS: Record<Phase, readonly Phase[]> = {
  stopped: ['connecting'],
  connecting: ['connecting', 'resyncing', 'stopped'],
  resyncing: ['connecting', 'publishing', 'stopped'],
  publishing: ['connecting', 'resyncing', 'stopped'],
}

/** Tuning defaults; the daemon passes `maxInFlight` from its configuration. */
export const SINK_DEFAULTS = {
  /** Unacknowledged publishes at most (1,024 was no faster than 256). */
  maxInFlight: DEFAULT_SETTINGS.natsMaxInFlight,
  /** An unacknowledged publish older than this restarts sending from the watermark. */
  ackTimeoutMs: 5000,
  /** Retry delays after failures: doubling from initial to max. */
  retryInitialMs: 250,
  retryMaxMs: 10_000,
  /** Reported as `behind` when the oldest unshipped event is older than this. */
  behindAfterMs: 5000,
  /** How often the watermark is written to the log's metadata. */
  persistIntervalMs: 1000,
  /**
   * Capture first: while the store holds more than this in events appended and not yet committed
   * (a page sending faster than the disk takes it), the sink sends nothing, so the event loop goes
   * to capture and no tab waits on shipping. The next commit wakes it.
   */
  yieldBacklogBytes: 256 * 1024,
  /** ... but for at most this long at a time: under a flood that never ends, one window goes out per this. */
  maxYieldMs: 250,
}
export type SinkTuning = typeof SINK_DEFAULTS

export interface SinkOptions extends Partial<SinkTuning> {
  log: Pick<EventLog, 'onCommit' | 'read' | 'readMeta' | 'writeMeta' | 'lastSeq' | 'firstSeq' | 'pendingBytes'>
  /** Names the sink in /healthz, /metrics and logs (`nats`, `otlp_logs`, ...). */
  name: string
  /** Metadata name of the durable watermark: one per sink and destination. */
  watermarkName: string
  /** Every error kind the transport reports (counters start at 0 for each). */
  errorKinds: readonly string[]
  /** Builds the transport; it reports to `events` and may use the sink's backoff for its own reconnects. */
  link: (events: LinkEvents, backoff: Backoff, logger: Logger) => ShipLink
  /** Destination fields /healthz shows next to the core's (e.g. stream, endpoint). */
  describe?: () => Record<string, unknown>
  /** What the destination's answer is called in the ack-timeout error ("JetStream ack"). */
  ackName?: string
  /** Milliseconds of the capture-first window (default Date.now; tests pass a manual clock). */
  now?: () => number
  /** Log lines that name the destination. */
  messages?: { started: string; stopped: string; resumed: string }
  logger?: Logger
  /** Records as they are sent: console stacks mapped by the source maps known then (absent: as stored). */
  mapping?: ReadMapping
}
