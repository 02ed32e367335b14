// The daemon's own metrics over OTLP: the same prom-client registry /metrics serves, read on an
// interval and posted to `<endpoint>/v1/metrics` as cumulative sums, gauges and histograms. A failed
// export is logged and counted, not retried: cumulative values make the next export carry it all.
import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api'
import {
  AggregationTemporality,
  DataPointType,
  type MetricData,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics'
import type { Registry } from 'prom-client'
import type { Logger } from '../log.js'
import type { OtlpShared } from './model.js'
import { classify, describeAnswer, post, type HttpAnswer } from './http.js'

/** What is read of the registry /metrics serves (prom-client's Registry). */
export type MetricsSource = Pick<Registry, 'getMetricsAsJSON'>

interface PromValue {
  value: number
  labels: Record<string, string | number | undefined>
  metricName?: string
}

function hr(ms: number): HrTime {
  return [Math.floor(ms / 1000), (ms % 1000) * 1e6]
}

function attrs(labels: PromValue['labels'], except?: string): Attributes {
  const a: Attributes = {}
  for (const [k, v] of Object.entries(labels)) if (k !== except && v !== undefined) a[k] = v
  return a
}

/** prom-client's JSON -> one ResourceMetrics (counters: monotonic cumulative sums; gauges; histograms). */
export async function collectResourceMetrics(
  source: MetricsSource,
  shared: OtlpShared,
  startMs: number,
  nowMs = Date.now(),
): Promise<ResourceMetrics> {
  const startTime = hr(startMs)
  const endTime = hr(nowMs)
  const metrics: MetricData[] = []
  for (const m of await source.getMetricsAsJSON()) {
    const type = String(m.type)
    const values = m.values as PromValue[]
    const descriptor = { name: m.name, description: m.help, unit: '', valueType: ValueType.DOUBLE }
    if (type === 'counter' || type === 'gauge') {
      const dataPoints = values
        .filter(v => Number.isFinite(v.value))
        .map(v => ({ startTime, endTime, attributes: attrs(v.labels), value: v.value }))
      if (dataPoints.length === 0) continue
      metrics.push(
        type === 'counter'
          ? {
              descriptor,
              aggregationTemporality: AggregationTemporality.CUMULATIVE,
              dataPointType: DataPointType.SUM,
              isMonotonic: true,
              dataPoints,
            }
          : {
              descriptor,
              aggregationTemporality: AggregationTemporality.CUMULATIVE,
              dataPointType: DataPointType.GAUGE,
              dataPoints,
            },
      )
    } else if (type === 'histogram') {
      // Group the _bucket/_sum/_count series by their labels (without `le`).
      const series = new Map<string, { labels: Attributes; buckets: [number, number][]; sum: number; count: number }>()
      for (const v of values) {
        const labels = attrs(v.labels, 'le')
        const key = JSON.stringify(labels)
        let s = series.get(key)
        if (!s) series.set(key, (s = { labels, buckets: [], sum: 0, count: 0 }))
        if (v.metricName?.endsWith('_bucket')) {
          const le = v.labels.le
          if (le !== '+Inf') s.buckets.push([Number(le), v.value])
        } else if (v.metricName?.endsWith('_sum')) s.sum = v.value
        else if (v.metricName?.endsWith('_count')) s.count = v.value
      }
      const dataPoints = [...series.values()].map(s => {
        s.buckets.sort((a, b) => a[0] - b[0])
        const counts: number[] = []
        let prev = 0
        for (const [, cumulative] of s.buckets) {
          counts.push(cumulative - prev)
          prev = cumulative
        }
        counts.push(s.count - prev)
        return {
          startTime,
          endTime,
          attributes: s.labels,
          value: { buckets: { boundaries: s.buckets.map(b => b[0]), counts }, sum: s.sum, count: s.count },
        }
      })
      if (dataPoints.length === 0) continue
      metrics.push({
        descriptor,
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints,
      })
    }
    // Summaries have no OTLP counterpart the transformer writes; the registry has none today.
  }
  return { resource: shared.resource, scopeMetrics: [{ scope: shared.scope, metrics }] }
}

export interface MetricsExporterOptions {
  source: MetricsSource
  shared: OtlpShared
  url: URL
  contentType: string
  headers: Record<string, string>
  ca?: Buffer
  timeoutMs: number
  intervalMs: number
  serialize(rm: ResourceMetrics): Uint8Array
  /** The collector's count of rejected data points in a 2xx answer. */
  rejected(answer: HttpAnswer): number
  logger: Logger
}

export class MetricsExporter {
  readonly stats = { exports: 0, failures: 0, rejectedDataPoints: 0 }
  lastError: { message: string; at: number } | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly startMs = Date.now()
  private running: Promise<void> | undefined
  private readonly listeners = new Set<() => void>()

  constructor(private readonly opts: MetricsExporterOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      void this.exportNow()
    }, this.opts.intervalMs).unref()
  }

  /** One export (the interval's, or at stop); a second call while one runs shares it. */
  exportNow(): Promise<void> {
    this.running ??= this.exportOnce().finally(() => {
      this.running = undefined
      for (const l of this.listeners) l()
    })
    return this.running
  }

  /** Tests hear about every finished export attempt. */
  onExport(l: () => void): () => void {
    this.listeners.add(l)
    return () => {
      this.listeners.delete(l)
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.running
    // The final values, so a short run still leaves its totals at the collector (not when it is away:
    // shutdown would wait for the timeout).
    if (!this.lastError) await this.exportNow()
  }

  private async exportOnce(): Promise<void> {
    const where = `OTLP metrics export to ${this.opts.url.origin}${this.opts.url.pathname}`
    try {
      const rm = await collectResourceMetrics(this.opts.source, this.opts.shared, this.startMs)
      const answer = await post(this.opts.url, this.opts.serialize(rm), {
        headers: this.opts.headers,
        contentType: this.opts.contentType,
        timeoutMs: this.opts.timeoutMs,
        ca: this.opts.ca,
      })
      if (classify(answer.status) !== 'ok') throw new Error(describeAnswer(answer))
      this.stats.exports++
      try {
        this.stats.rejectedDataPoints += this.opts.rejected(answer)
      } catch {
        /* an unreadable 2xx body is still a success */
      }
      if (this.lastError) this.opts.logger.info('OTLP metrics export resumed')
      this.lastError = undefined
    } catch (err) {
      this.stats.failures++
      const message = `${where} failed: ${(err as Error).message}`
      if (this.lastError?.message !== message) this.opts.logger.warn(message)
      this.lastError = { message, at: Date.now() }
    }
  }

  health(): { state: string; [k: string]: unknown } {
    return {
      state: this.lastError ? 'failing' : this.stats.exports > 0 ? 'ok' : 'pending',
      interval_ms: this.opts.intervalMs,
      exports: this.stats.exports,
      failures: this.stats.failures,
      ...(this.lastError
        ? { last_error: this.lastError.message, last_error_at: new Date(this.lastError.at).toISOString() }
        : {}),
    }
  }
}
