// The screen recording: on/off, JPEG bytes held, frames by outcome.
import { Counter, Gauge } from 'prom-client'
import type { Family, FrameStoreCounts, ScreencastCounts } from './sources.js'

/** Frames by outcome: what the screencast collector saw, then what the frame store did with them. */
function framesByOutcome(store: FrameStoreCounts, capture: ScreencastCounts | undefined): Record<string, number> {
  return {
    received: capture?.received ?? 0,
    duplicate: capture?.duplicates ?? 0,
    rate_limited: capture?.rateLimited ?? 0,
    hidden: capture?.hidden ?? 0,
    stored: store.stored_total,
    dropped_backpressure: store.dropped.backpressure,
    dropped_write_error: store.dropped.write_error,
    dropped_too_large: store.dropped.too_large,
    removed_retention: store.removed_by_retention,
  }
}

export function recordingMetrics({ registers, source }: Family): void {
  new Gauge({
    name: 'browser_telemetry_recording_enabled',
    help: 'Screen recording: 1 while on',
    registers,
    collect() {
      const r = source.deps?.recording?.()
      if (r) this.set(r.enabled ? 1 : 0)
    },
  })
  new Gauge({
    name: 'browser_telemetry_recording_bytes',
    help: 'Screen recording: JPEG bytes held in the frame store (bounded by --recording-max-bytes)',
    registers,
    collect() {
      const r = source.deps?.recording?.()
      if (r) this.set(r.store.bytes)
    },
  })
  new Counter({
    name: 'browser_telemetry_recording_frames_total',
    help: 'Screen recording frames by outcome: received (and acknowledged), duplicate, rate_limited, hidden, stored, dropped_backpressure, dropped_write_error, dropped_too_large, removed_retention',
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      const r = source.deps?.recording?.()
      if (!r) return
      this.reset()
      for (const [outcome, n] of Object.entries(framesByOutcome(r.store, r.capture))) this.inc({ outcome }, n)
    },
  })
}
