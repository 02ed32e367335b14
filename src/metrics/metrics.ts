// Prometheus metrics of the daemon (prom-client, its own Registry so tests and embedders never share
// the global one), one file per family. Decoupled from the modules it describes: event counters
// are fed by the pipeline's onEmit observer and the log's onCommit listener, every other family
// reads the sources handed to attach() at scrape time, and HTTP requests are observed by the API.
import { collectDefaultMetrics, Registry, type Counter, type Gauge, type Histogram } from 'prom-client'
import { connectionMetrics } from './connections.js'
import { eventMetrics } from './events.js'
import { httpMetrics } from './http.js'
import { monitorMetrics } from './monitor.js'
import { recordingMetrics } from './recording.js'
import { sinkMetrics } from './sinks.js'
import type { MetricsDeps } from './sources.js'
import { storeMetrics } from './store.js'

export type { Registry }
export { MONITOR_STATES, SINK_STATES, type MetricsDeps, type MonitorProbe, type SinkProbe } from './sources.js'

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

/**
 * Resolution of nodejs_eventloop_lag_* (prom-client's monitorEventLoopDelay timer). Every wakeup of
 * an idle process costs ~90 us of CPU on a small VM: at 100 ms the timer alone is half an idle
 * daemon's CPU (0.9 of 1.8 ms/s). At 500 ms a stall of 500 ms or more is always recorded, a shorter
 * one in proportion to its length (a 50 ms stall one time in ten).
 */
export const EVENT_LOOP_SAMPLE_MS = 500

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
  const http = httpMetrics(family)

  // The event-loop delay histogram samples on a libuv timer: prom-client's default 10 ms wakes an
  // idle daemon 100 times a second (~8 ms CPU/s measured); see EVENT_LOOP_SAMPLE_MS.
  if (opts.processMetrics !== false)
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })

  const { attach: attachEvents, ...eventCounters } = events
  return {
    registry,
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
