// The screen recording: on/off, JPEG bytes held, frames by outcome.
import { Counter, Gauge } from 'prom-client'
import type { Family } from './sources.js'

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
      if (r) this.set(r.bytes)
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
      for (const [outcome, n] of Object.entries(r.frames)) this.inc({ outcome }, n)
    },
  })
}
