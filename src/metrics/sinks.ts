// Every destination of committed events, one set of series labelled by sink name (nats, otlp_logs,
// otlp_traces): delivered, skipped and retention-dropped events, errors, position, lag and state.
import { Counter, Gauge } from 'prom-client'
import { SINK_STATES, type Family, type SinkProbe } from './sources.js'

export function sinkMetrics({ registers, source }: Family): void {
  // Every sink, labelled by its name (nats, otlp_logs, otlp_traces).
  const perSink = (value: (p: SinkProbe) => number) =>
    function (this: Counter<'sink'> | Gauge<'sink'>) {
      const sinks = source.deps?.sinks?.()
      if (!sinks) return
      this.reset()
      for (const p of sinks) (this as Gauge<'sink'>).set({ sink: p.name }, value(p))
    }
  const perSinkCount = (value: (p: SinkProbe) => number) =>
    function (this: Counter<'sink'>) {
      const sinks = source.deps?.sinks?.()
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
    name: 'browser_telemetry_sink_delivered_bytes_total',
    help: 'Payload bytes each sink delivered',
    labelNames: ['sink'] as const,
    registers,
    collect: perSinkCount(p => p.stats.shippedBytes),
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
      const sinks = source.deps?.sinks?.()
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
      const sinks = source.deps?.sinks?.()
      if (!sinks) return
      this.reset()
      for (const p of sinks)
        for (const st of SINK_STATES) this.set({ sink: p.name, state: st }, st === p.state() ? 1 : 0)
    },
  })
}
