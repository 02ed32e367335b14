// What the metrics read, and from whom: the pipeline and the log feed the event counters; every
// other family reads its part at scrape time through these small interfaces.
import type { Pipeline } from '../pipeline/pipeline.js'
import type { EventLog } from '../store/event-log.js'
import type { MonitorStatus } from '../monitor/index.js'
import type { Counter, Registry } from 'prom-client'

/** What metrics read of the monitor at scrape time: its status (Monitor implements this). */
export interface MonitorProbe {
  status(): Pick<MonitorStatus, 'state' | 'targets' | 'reconnects' | 'cdpErrors' | 'refusedTargets'>
}

/** What the frame store counts (recording/frame-store.ts stats()). */
export interface FrameStoreCounts {
  bytes: number
  stored_total: number
  dropped: { backpressure: number; write_error: number; too_large: number }
  removed_by_retention: number
}

/** What the screencast collector counts (its stats). */
export interface ScreencastCounts {
  received: number
  duplicates: number
  rateLimited: number
  hidden: number
}

/** Any sink of src/ship (NATS, OTLP logs, OTLP traces): its name labels the browser_telemetry_sink_* series. */
export interface SinkProbe {
  readonly name: string
  state(): string
  ackedSeq: number
  lagEvents(): number
  lagSeconds(): number
  stats: {
    shippedEvents: number
    shippedBytes: number
    retentionDroppedEvents: number
    skippedEvents: number
    errors: Record<string, number>
  }
}

/** Sink states (src/ship ShipState). */
export const SINK_STATES = ['off', 'connected', 'reconnecting', 'behind'] as const

export interface MetricsDeps {
  pipeline: Pick<Pipeline, 'onEmit'>
  log: Pick<EventLog, 'firstSeq' | 'lastSeq' | 'health' | 'storedBytes' | 'onCommit' | 'onDrop' | 'pendingBytes'>
  monitor?: MonitorProbe
  /** Open SSE streams; when absent the stream route may inc()/dec() metrics.sseClients itself. */
  sseClients?: () => number
  /** Open CDP proxy client connections. */
  proxyConnections?: () => number
  /** Every sink (NATS and OTLP), labelled by name: the daemon's one sink list. */
  sinks?: () => readonly SinkProbe[]
  /** Connections refused by a cap, by kind (sse: 429, cdp_proxy: 503). */
  refusedConnections?: () => Record<string, number>
  /** SSE clients closed for lagging behind their buffer. */
  sseLagDisconnects?: () => number
  /** Interaction binding actions against flooding targets (paused, resumed, terminated) and invalid payloads. */
  interactionBinding?: () => Record<string, number>
  /** Per-target state cut or evicted to stay within its byte bound, by table (the daemon's Bounds). */
  evictions?: () => ReadonlyMap<string, number>
  /** Source-map learning: scripts by outcome, loads through the page, bytes written to the map index. */
  sourceMaps?: () => { scripts: Record<'mapped' | 'none' | 'failed', number>; loads: number; indexBytes: number }
  /** The screen recording: on/off, the frame store's counts, the screencast collector's counts. */
  recording?: () => { enabled: boolean; store: FrameStoreCounts; capture?: ScreencastCounts }
}

/** Monitor states (src/monitor MonitorState) plus none (no browser). */
export const MONITOR_STATES = ['starting', 'collecting', 'disconnected', 'failed', 'stopped', 'none'] as const

/** What a family registers its series in, and where it finds the attached sources (undefined before attach). */
export interface Family {
  readonly registers: Registry[]
  readonly source: { readonly deps: MetricsDeps | undefined }
}

/** A counter that mirrors a module's own tally (the module counts; metrics only report). */
export function setCounter(c: Counter<string>, n: number): void {
  c.reset()
  c.inc(n)
}
