// Every event's fate: accepted (and cut to fit), stored, or dropped with its reason, by category.
// The counts behind "stored + missing seqs == seen".
import { Counter } from 'prom-client'
import type { EmitObservation } from '../pipeline/pipeline.js'
import type { Family, MetricsDeps } from './sources.js'

export function eventMetrics({ registers }: Pick<Family, 'registers'>) {
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

  /** Feeds the counters from the pipeline's outcomes and the log's commits and drops; returns the unwiring. */
  const attach = (d: Pick<MetricsDeps, 'pipeline' | 'log'>): (() => void) => {
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
    }
  }
  return { eventsEmitted, eventsStored, eventsDropped, eventsTruncated, attach }
}
