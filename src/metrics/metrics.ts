// Prometheus metrics of the daemon (prom-client, its own Registry so tests and embedders never share
// the global one). Decoupled from the modules it describes: counters are fed by the pipeline's
// onEmit observer and the log's onCommit listener, gauges read callbacks at scrape time, and the few
// things only a module knows (HTTP requests, SSE clients without a callback) have handles it calls.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { EmitObservation, Pipeline } from '../pipeline/pipeline.js'
import type { EventLog } from '../store/event-log.js'
import type { MonitorStatus } from '../monitor/index.js'

export type { Registry }

/** What metrics read of the monitor at scrape time: its status (Monitor implements this). */
export interface MonitorProbe {
  status(): Pick<MonitorStatus, 'state' | 'targets' | 'reconnects' | 'cdpErrors' | 'refusedTargets'>
}

/** What the fleet shipper reports at scrape time (src/ship Shipper fits it). */
export interface ShipProbe {
  state(): string
  ackedSeq: number
  lagEvents(): number
  lagSeconds(): number
  stats: { shippedEvents: number; shippedBytes: number; retentionDroppedEvents: number; errors: Record<string, number> }
}

/** Any sink of src/ship (NATS, OTLP logs, OTLP traces): its name labels the browser_telemetry_sink_* series. */
export interface SinkProbe extends ShipProbe {
  readonly name: string
  stats: ShipProbe['stats'] & { skippedEvents: number }
}

/** Shipper states (src/ship ShipState). */
export const SHIP_STATES = ['off', 'connected', 'reconnecting', 'behind'] as const

export interface MetricsDeps {
  pipeline: Pick<Pipeline, 'onEmit'>
  log: Pick<EventLog, 'firstSeq' | 'lastSeq' | 'health' | 'storedBytes' | 'onCommit' | 'onDrop' | 'pendingBytes'>
  monitor?: MonitorProbe
  /** Open SSE streams; when absent the stream route may inc()/dec() metrics.sseClients itself. */
  sseClients?: () => number
  /** Open CDP proxy client connections. */
  proxyConnections?: () => number
  /** The fleet shipper, when --nats-url is set. */
  ship?: ShipProbe
  /** Every sink (NATS and OTLP), labelled by name. */
  sinks?: () => readonly SinkProbe[]
  /** Connections refused by a cap, by kind (sse: 429, cdp_proxy: 503). */
  refusedConnections?: () => Record<string, number>
  /** SSE clients closed for lagging behind their buffer. */
  sseLagDisconnects?: () => number
  /** Interaction binding actions against flooding targets (paused, resumed, terminated) and invalid payloads. */
  interactionBinding?: () => Record<string, number>
  /** Per-target state cut or evicted to stay within its byte bound, by table (the daemon's Bounds). */
  evictions?: () => ReadonlyMap<string, number>
  /** The screen recording: on/off, JPEG bytes held, frames by outcome. */
  recording?: () => { enabled: boolean; bytes: number; frames: Record<string, number> }
}

/** Monitor states (src/monitor MonitorState) plus none (no browser). */
export const MONITOR_STATES = ['starting', 'collecting', 'disconnected', 'failed', 'stopped', 'none'] as const

export interface Metrics {
  readonly registry: Registry
  readonly eventsEmitted: Counter<'category'>
  readonly eventsStored: Counter<'category'>
  readonly eventsDropped: Counter<'category' | 'reason'>
  readonly eventsTruncated: Counter<'category'>
  readonly storeBytes: Gauge
  readonly storeOldestSeq: Gauge
  readonly storeNewestSeq: Gauge
  readonly storePendingEvents: Gauge
  readonly storePendingBytes: Gauge
  readonly storeWritable: Gauge
  readonly monitorState: Gauge<'state'>
  readonly monitorReconnects: Counter
  readonly cdpErrors: Counter<'method'>
  readonly attachedTargets: Gauge<'target_type'>
  readonly sseClients: Gauge
  readonly proxyConnections: Gauge
  readonly httpRequests: Counter<'operation' | 'status'>
  readonly httpRequestDuration: Histogram<'operation'>
  /** Records one finished HTTP request (the API's metrics middleware calls this). */
  observeHttp(operation: string, status: number, seconds: number): void
  /** Wires the pipeline/log/monitor sources; returns a function that unwires them. */
  attach(deps: MetricsDeps): () => void
  /** The exposition text and its content type, for GET /metrics. */
  render(): Promise<{ contentType: string; body: string }>
}

export interface CreateMetricsOptions {
  /** Node process metrics (RSS, heap, event loop lag, GC); default true. */
  processMetrics?: boolean
}

/** Resolution of nodejs_eventloop_lag_* (prom-client's monitorEventLoopDelay timer). */
export const EVENT_LOOP_SAMPLE_MS = 100

export function createMetrics(opts: CreateMetricsOptions = {}): Metrics {
  const registry = new Registry()
  const registers = [registry]
  let deps: MetricsDeps | undefined

  // emit() outcomes are counted in plain maps on the hot path and handed to the counters when they
  // are read (collect): prom-client hashes the label set on every inc(), once per event otherwise.
  const emitted = new Map<string, number>()
  const truncated = new Map<string, number>()
  const dropped = new Map<string, Map<string, number>>() // reason -> category -> n
  const flush = (counts: Map<string, number>, counter: Counter<'category'>) => {
    for (const [category, n] of counts) counter.inc({ category }, n)
    counts.clear()
  }
  const eventsEmitted: Counter<'category'> = new Counter({
    name: 'browser_telemetry_events_emitted_total',
    help: 'Events accepted by the pipeline, by category',
    labelNames: ['category'] as const,
    registers,
    collect() {
      flush(emitted, eventsEmitted)
    },
  })
  const eventsStored = new Counter({
    name: 'browser_telemetry_events_stored_total',
    help: 'Events committed to the event log, by category',
    labelNames: ['category'] as const,
    registers,
  })
  const eventsDropped: Counter<'category' | 'reason'> = new Counter({
    name: 'browser_telemetry_events_dropped_total',
    help: 'Events not stored, by category and reason (category_disabled, invalid, over_budget, shed, store)',
    labelNames: ['category', 'reason'] as const,
    registers,
    collect() {
      for (const [reason, counts] of dropped)
        for (const [category, n] of counts) eventsDropped.inc({ category, reason }, n)
      dropped.clear()
    },
  })
  const eventsTruncated: Counter<'category'> = new Counter({
    name: 'browser_telemetry_events_truncated_total',
    help: 'Events cut to fit the envelope size cap, by category',
    labelNames: ['category'] as const,
    registers,
    collect() {
      flush(truncated, eventsTruncated)
    },
  })
  const count = (counts: Map<string, number>, key: string) => {
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }

  const storeBytes = new Gauge({
    name: 'browser_telemetry_store_bytes',
    help: 'Approximate on-disk bytes of stored events (LevelDB estimate)',
    registers,
    async collect() {
      if (deps) this.set(await deps.log.storedBytes().catch(() => 0))
    },
  })
  const storeOldestSeq = new Gauge({
    name: 'browser_telemetry_store_oldest_seq',
    help: 'Seq of the oldest retained event (newest + 1 when empty)',
    registers,
    collect() {
      if (deps) this.set(deps.log.firstSeq)
    },
  })
  const storeNewestSeq = new Gauge({
    name: 'browser_telemetry_store_newest_seq',
    help: 'Seq of the newest committed event (0 when none ever)',
    registers,
    collect() {
      if (deps) this.set(deps.log.lastSeq)
    },
  })
  const storePendingEvents = new Gauge({
    name: 'browser_telemetry_store_pending_events',
    help: 'Events accepted but not yet committed',
    registers,
    collect() {
      if (deps) this.set(deps.log.health().pendingEvents)
    },
  })
  const storePendingBytes = new Gauge({
    name: 'browser_telemetry_store_pending_bytes',
    help: 'Encoded bytes of events accepted but not yet committed (what load shedding watches)',
    registers,
    collect() {
      if (deps) this.set(deps.log.pendingBytes)
    },
  })
  const storeWritable = new Gauge({
    name: 'browser_telemetry_store_writable',
    help: '1 when the last event log write succeeded, else 0',
    registers,
    collect() {
      if (deps) this.set(deps.log.health().writable ? 1 : 0)
    },
  })

  const monitorState = new Gauge({
    name: 'browser_telemetry_monitor_state',
    help: 'CDP monitor state: 1 for the current state, 0 for the others',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const current = deps?.monitor?.status().state ?? 'none'
      this.reset()
      for (const s of MONITOR_STATES) this.set({ state: s }, s === current ? 1 : 0)
      if (!(MONITOR_STATES as readonly string[]).includes(current)) this.set({ state: current }, 1)
    },
  })
  // Counters read from the monitor's own tallies at scrape time (it counts; metrics only report).
  const monitorReconnects = new Counter({
    name: 'browser_telemetry_monitor_reconnects_total',
    help: 'Successful CDP reconnects (monitor_reconnected)',
    registers,
    collect() {
      const n = deps?.monitor?.status().reconnects
      if (n === undefined) return
      this.reset()
      this.inc(n)
    },
  })
  const cdpErrors = new Counter({
    name: 'browser_telemetry_cdp_errors_total',
    help: 'Failed CDP commands, by method (not those whose session, target or document was gone)',
    labelNames: ['method'] as const,
    registers,
    collect() {
      const byMethod = deps?.monitor?.status().cdpErrors
      if (!byMethod) return
      this.reset()
      for (const [method, n] of Object.entries(byMethod)) this.inc({ method }, n)
    },
  })
  const attachedTargets = new Gauge({
    name: 'browser_telemetry_attached_targets',
    help: 'CDP targets the monitor is attached to, by target_type',
    labelNames: ['target_type'] as const,
    registers,
    collect() {
      const byType = deps?.monitor?.status().targets
      if (!byType) return
      this.reset()
      for (const [type, n] of Object.entries(byType)) this.set({ target_type: type }, n)
    },
  })
  const sseClients = new Gauge({
    name: 'browser_telemetry_sse_clients',
    help: 'Open telemetry stream (SSE) connections',
    registers,
    collect() {
      const n = deps?.sseClients?.()
      if (n !== undefined) this.set(n)
    },
  })
  const proxyConnections = new Gauge({
    name: 'browser_telemetry_cdp_proxy_connections',
    help: 'Open CDP proxy client connections',
    registers,
    collect() {
      const n = deps?.proxyConnections?.()
      if (n !== undefined) this.set(n)
    },
  })

  new Counter({
    name: 'browser_telemetry_interaction_binding_total',
    help: 'Interaction binding: removed from a flooding target (paused), added back (resumed), the flooding script terminated (terminated), payloads not a valid report (invalid)',
    labelNames: ['action'] as const,
    registers,
    collect() {
      const counts = deps?.interactionBinding?.()
      if (!counts) return
      this.reset()
      for (const [action, n] of Object.entries(counts)) this.inc({ action }, n)
    },
  })

  // Fleet shipping: counters mirror the shipper's own tallies at scrape time.
  const mirror = (value: (p: ShipProbe) => number) =>
    function (this: Counter | Gauge) {
      const p = deps?.ship
      if (!p) return
      this.reset()
      ;(this as Gauge).inc(value(p))
    }
  new Counter({
    name: 'browser_telemetry_ship_events_total',
    help: 'Events acknowledged by JetStream (fleet shipping)',
    registers,
    collect: mirror(p => p.stats.shippedEvents),
  })
  new Counter({
    name: 'browser_telemetry_ship_bytes_total',
    help: 'Payload bytes of events acknowledged by JetStream',
    registers,
    collect: mirror(p => p.stats.shippedBytes),
  })
  new Counter({
    name: 'browser_telemetry_ship_errors_total',
    help: 'Shipping failures by kind (connect, setup, timeout, no_responders, stream, publish)',
    labelNames: ['kind'] as const,
    registers,
    collect() {
      const p = deps?.ship
      if (!p) return
      this.reset()
      for (const [kind, n] of Object.entries(p.stats.errors)) this.inc({ kind }, n)
    },
  })
  new Counter({
    name: 'browser_telemetry_ship_unshipped_dropped_events_total',
    help: 'Events local retention removed before they were shipped (the stream shows them as missing seqs)',
    registers,
    collect: mirror(p => p.stats.retentionDroppedEvents),
  })
  new Gauge({
    name: 'browser_telemetry_ship_acked_seq',
    help: 'Highest seq such that it and every earlier one is stored in JetStream',
    registers,
    collect() {
      if (deps?.ship) this.set(deps.ship.ackedSeq)
    },
  })
  new Gauge({
    name: 'browser_telemetry_ship_lag_events',
    help: 'Committed events not yet acknowledged by JetStream (newest seq - acked seq)',
    registers,
    collect() {
      if (deps?.ship) this.set(deps.ship.lagEvents())
    },
  })
  new Gauge({
    name: 'browser_telemetry_ship_lag_seconds',
    help: 'Age of the oldest committed event not yet acknowledged by JetStream',
    registers,
    collect() {
      if (deps?.ship) this.set(deps.ship.lagSeconds())
    },
  })
  new Gauge({
    name: 'browser_telemetry_ship_state',
    help: 'Fleet shipping state: 1 for the current state (off, connected, reconnecting, behind), 0 for the others',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const current = deps?.ship?.state() ?? 'off'
      for (const s of SHIP_STATES) this.set({ state: s }, s === current ? 1 : 0)
    },
  })
  // Every sink, labelled by its name (nats, otlp_logs, otlp_traces).
  const perSink = (value: (p: SinkProbe) => number) =>
    function (this: Counter<'sink'> | Gauge<'sink'>) {
      const sinks = deps?.sinks?.()
      if (!sinks) return
      this.reset()
      for (const p of sinks) (this as Gauge<'sink'>).set({ sink: p.name }, value(p))
    }
  const perSinkCount = (value: (p: SinkProbe) => number) =>
    function (this: Counter<'sink'>) {
      const sinks = deps?.sinks?.()
      if (!sinks) return
      this.reset()
      for (const p of sinks) this.inc({ sink: p.name }, value(p))
    }
  new Counter({
    name: 'browser_telemetry_sink_delivered_events_total',
    help: 'Events each sink delivered (acknowledged by its destination)',
    labelNames: ['sink'] as const,
    registers,
    collect: perSinkCount(p => p.stats.shippedEvents),
  })
  new Counter({
    name: 'browser_telemetry_sink_skipped_events_total',
    help: 'Events a destination refused for good (e.g. OTLP 400): logged, counted, never re-sent',
    labelNames: ['sink'] as const,
    registers,
    collect: perSinkCount(p => p.stats.skippedEvents),
  })
  new Counter({
    name: 'browser_telemetry_sink_retention_dropped_events_total',
    help: 'Events local retention removed before the sink delivered them',
    labelNames: ['sink'] as const,
    registers,
    collect: perSinkCount(p => p.stats.retentionDroppedEvents),
  })
  new Counter({
    name: 'browser_telemetry_sink_errors_total',
    help: 'Sink failures by sink and kind',
    labelNames: ['sink', 'kind'] as const,
    registers,
    collect() {
      const sinks = deps?.sinks?.()
      if (!sinks) return
      this.reset()
      for (const p of sinks) for (const [kind, n] of Object.entries(p.stats.errors)) this.inc({ sink: p.name, kind }, n)
    },
  })
  new Gauge({
    name: 'browser_telemetry_sink_acked_seq',
    help: 'Per sink: highest seq such that it and every earlier one is delivered',
    labelNames: ['sink'] as const,
    registers,
    collect: perSink(p => p.ackedSeq),
  })
  new Gauge({
    name: 'browser_telemetry_sink_lag_events',
    help: 'Per sink: committed events not yet delivered',
    labelNames: ['sink'] as const,
    registers,
    collect: perSink(p => p.lagEvents()),
  })
  new Gauge({
    name: 'browser_telemetry_sink_lag_seconds',
    help: 'Per sink: age of the oldest committed event not yet delivered',
    labelNames: ['sink'] as const,
    registers,
    collect: perSink(p => p.lagSeconds()),
  })
  new Gauge({
    name: 'browser_telemetry_sink_state',
    help: 'Per sink: 1 for the current state (off, connected, reconnecting, behind), 0 for the others',
    labelNames: ['sink', 'state'] as const,
    registers,
    collect() {
      const sinks = deps?.sinks?.()
      if (!sinks) return
      this.reset()
      for (const p of sinks)
        for (const st of SHIP_STATES) this.set({ sink: p.name, state: st }, st === p.state() ? 1 : 0)
    },
  })
  // Counters kept by the modules themselves (monitor, streams, proxy, bounds), read at scrape time.
  const setCounter = (c: Counter<string>, n: number) => {
    c.reset()
    c.inc(n)
  }
  new Counter({
    name: 'browser_telemetry_targets_refused_total',
    help: 'CDP targets left unwatched because --max-targets were attached',
    registers,
    collect() {
      const n = deps?.monitor?.status().refusedTargets
      if (n !== undefined) setCounter(this, n)
    },
  })
  new Counter({
    name: 'browser_telemetry_connections_refused_total',
    help: 'Connections refused by a cap, by kind (sse: 429 too_many_streams, cdp_proxy: 503 too_many_connections)',
    labelNames: ['kind'] as const,
    registers,
    collect() {
      const v = deps?.refusedConnections?.()
      if (!v) return
      this.reset()
      for (const [kind, n] of Object.entries(v)) this.inc({ kind }, n)
    },
  })
  new Counter({
    name: 'browser_telemetry_sse_lag_disconnects_total',
    help: 'SSE clients closed because they fell behind their buffer (they resume with Last-Event-ID)',
    registers,
    collect() {
      const n = deps?.sseLagDisconnects?.()
      if (n !== undefined) setCounter(this, n)
    },
  })
  new Counter({
    name: 'browser_telemetry_state_evictions_total',
    help: 'Per-target state cut or evicted to stay within its byte bound, by table (network_requests, url_cut, headers_cut, body_fetch_dropped)',
    labelNames: ['table'] as const,
    registers,
    collect() {
      this.reset()
      for (const [table, n] of deps?.evictions?.() ?? []) this.inc({ table }, n)
    },
  })

  new Gauge({
    name: 'browser_telemetry_recording_enabled',
    help: 'Screen recording: 1 while on',
    registers,
    collect() {
      const r = deps?.recording?.()
      if (r) this.set(r.enabled ? 1 : 0)
    },
  })
  new Gauge({
    name: 'browser_telemetry_recording_bytes',
    help: 'Screen recording: JPEG bytes held in the frame store (bounded by --recording-max-bytes)',
    registers,
    collect() {
      const r = deps?.recording?.()
      if (r) this.set(r.bytes)
    },
  })
  new Counter({
    name: 'browser_telemetry_recording_frames_total',
    help: 'Screen recording frames by outcome: received (and acknowledged), duplicate, rate_limited, hidden, stored, dropped_backpressure, dropped_write_error, dropped_too_large, removed_retention',
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      const r = deps?.recording?.()
      if (!r) return
      this.reset()
      for (const [outcome, n] of Object.entries(r.frames)) this.inc({ outcome }, n)
    },
  })

  const httpRequests = new Counter({
    name: 'browser_telemetry_http_requests_total',
    help: 'HTTP API requests, by operation id and status',
    labelNames: ['operation', 'status'] as const,
    registers,
  })
  const httpRequestDuration = new Histogram({
    name: 'browser_telemetry_http_request_duration_seconds',
    help: 'HTTP API handler duration (for streams: until the stream is set up)',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers,
  })

  // The event-loop delay histogram samples on a libuv timer: prom-client's default 10 ms wakes an
  // idle daemon 100 times a second (~8 ms CPU/s measured); 100 ms keeps it near 1 ms/s.
  if (opts.processMetrics !== false)
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })

  const onEmit = (o: EmitObservation): void => {
    const category = o.category ?? 'unknown'
    if (o.outcome !== 'accepted') {
      let counts = dropped.get(o.outcome)
      if (!counts) dropped.set(o.outcome, (counts = new Map()))
      count(counts, category)
    } else {
      count(emitted, category)
      if (o.truncated) count(truncated, category)
    }
  }

  return {
    registry,
    eventsEmitted,
    eventsStored,
    eventsDropped,
    eventsTruncated,
    storeBytes,
    storeOldestSeq,
    storeNewestSeq,
    storePendingEvents,
    storePendingBytes,
    storeWritable,
    monitorState,
    monitorReconnects,
    cdpErrors,
    attachedTargets,
    sseClients,
    proxyConnections,
    httpRequests,
    httpRequestDuration,
    observeHttp(operation, status, seconds) {
      httpRequests.inc({ operation, status: String(status) })
      httpRequestDuration.observe({ operation }, seconds)
    },
    attach(d) {
      deps = d
      const offEmit = d.pipeline.onEmit(onEmit)
      const offCommit = d.log.onCommit(records => {
        // One inc per category per batch: batches hold up to a few hundred events.
        const counts = new Map<string, number>()
        for (const r of records) counts.set(r.category, (counts.get(r.category) ?? 0) + 1)
        for (const [category, n] of counts) eventsStored.inc({ category }, n)
      })
      // Store drops are reported by the log per batch, not watched per event on the emit path.
      const offDrop = d.log.onDrop(records => {
        for (const r of records) eventsDropped.inc({ category: r.category, reason: 'store' })
      })
      return () => {
        offEmit()
        offCommit()
        offDrop()
        if (deps === d) deps = undefined
      }
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}
