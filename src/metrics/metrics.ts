// Prometheus metrics of the daemon (prom-client, its own Registry so tests and embedders never share
// the global one), one file per family. Decoupled from the modules it describes: event counters
// are fed by the pipeline's onEmit observer and the log's onCommit listener, every other family
// reads the sources handed to attach() at scrape time, and HTTP requests are observed by the API.
import { collectDefaultMetrics, Registry, type Counter, type Gauge, type Histogram } from 'prom-client'
import { connectionMetrics } from './connections.js'
import { EVENT_LOOP_GAUGES, eventLoopMetrics, type EventLoopStalls } from './event-loop.js'
import { eventMetrics } from './events.js'
import { httpMetrics } from './http.js'
import { monitorMetrics } from './monitor.js'
import { recordingMetrics } from './recording.js'
import { sinkMetrics } from './sinks.js'
import { sourceMapMetrics } from './sourcemaps.js'
import type { MetricsDeps } from './sources.js'
import { storeMetrics } from './store.js'

export type { Registry }
export { EVENT_LOOP_SAMPLE_MS } from './event-loop.js'
export { MONITOR_STATES, SINK_STATES, type MetricsDeps, type MonitorProbe, type SinkProbe } from './sources.js'

export interface Metrics {
  readonly registry: Registry
  /** The event loop's stall sampler (absent without process metrics). */
  readonly eventLoop: EventLoopStalls | undefined
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

/** prom-client's own event-loop sampler, parked: it would wake once in 24.8 days (its gauges are replaced). */
const PARKED_SAMPLER_MS = 2 ** 31 - 1

export function createMetrics(opts: CreateMetricsOptions = {}): Metrics {
  const registry = new Registry()
  const source: { deps: MetricsDeps | undefined } = { deps: undefined }
  const family = { registers: [registry], source }
  const events = eventMetrics(family)
  const store = storeMetrics(family)
  const monitor = monitorMetrics(family)
  const connections = connectionMetrics(family)
  sinkMetrics(family)
  recordingMetrics(family)
  sourceMapMetrics(family)
  const http = httpMetrics(family)

  // prom-client's event-loop gauges report its sampler's period plus the stall (an idle daemon showed
  // 0.5 s of lag): they are replaced by ones reporting the stall (event-loop.ts), and its sampler,
  // which cannot be left out, is parked so it costs no wakeups.
  let eventLoop: EventLoopStalls | undefined
  if (opts.processMetrics !== false) {
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: PARKED_SAMPLER_MS })
    for (const name of EVENT_LOOP_GAUGES) registry.removeSingleMetric(`nodejs_eventloop_lag_${name}_seconds`)
    eventLoop = eventLoopMetrics(registry)
  }

  const { attach: attachEvents, ...eventCounters } = events
  return {
    registry,
    eventLoop,
    ...eventCounters,
    ...store,
    ...monitor,
    ...connections,
    ...http,
    attach(d) {
      source.deps = d
      const offEvents = attachEvents(d)
      return () => {
        offEvents()
        if (source.deps === d) source.deps = undefined
      }
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}
