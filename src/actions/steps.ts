// Agent steps: agent_step_started joined with its agent_step_finished by step id. A step whose start
// fell before the window is still listed (its start is the finish's ts minus its duration); one
// without a finish is open (no end, outcome or duration).
import type { Envelope } from '../events/index.js'
import type { Step } from './types.js'

/** The steps of a window of envelopes (in seq order), ordered by start (then step id). */
export function stepsOf(envelopes: Iterable<Envelope>): Step[] {
  const steps = new Map<string, Step>()
  for (const e of envelopes) {
    const ev = e.event
    if (ev.type === 'agent_step_started') {
      const d = ev.data
      if (steps.has(d.step_id)) continue
      steps.set(d.step_id, {
        step_id: d.step_id,
        name: d.name,
        ...(d.parent_step_id !== undefined ? { parent_step_id: d.parent_step_id } : {}),
        ...(d.connection_id !== undefined ? { connection_id: d.connection_id } : {}),
        start_ts: ev.ts,
      })
    } else if (ev.type === 'agent_step_finished') {
      const d = ev.data
      let s = steps.get(d.step_id)
      if (!s) {
        s = {
          step_id: d.step_id,
          name: d.name,
          ...(d.parent_step_id !== undefined ? { parent_step_id: d.parent_step_id } : {}),
          ...(d.connection_id !== undefined ? { connection_id: d.connection_id } : {}),
          start_ts: Math.round(ev.ts - d.duration_ms * 1000),
        }
        steps.set(d.step_id, s)
      }
      if (s.end_ts !== undefined) continue
      s.end_ts = ev.ts
      s.outcome = d.outcome
      s.duration_ms = d.duration_ms
      if (d.error_message !== undefined) s.error_message = d.error_message
    }
  }
  return [...steps.values()].sort((a, b) => a.start_ts - b.start_ts || (a.step_id < b.step_id ? -1 : 1))
}
