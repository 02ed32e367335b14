// The browser side: monitor state, reconnects, CDP errors, attached and refused targets, the
// interaction binding's actions, per-target state evicted to stay within its bounds.
import { Counter, Gauge } from 'prom-client'
import { MONITOR_STATES, setCounter, type Family } from './sources.js'

export function monitorMetrics({ registers, source }: Family) {
  const monitorState = new Gauge({
    name: 'browser_telemetry_monitor_state',
    help: 'CDP monitor state: 1 for the current state, 0 for the others',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const current = source.deps?.monitor?.status().state ?? 'none'
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
      const n = source.deps?.monitor?.status().reconnects
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
      const byMethod = source.deps?.monitor?.status().cdpErrors
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
      const byType = source.deps?.monitor?.status().targets
      if (!byType) return
      this.reset()
      for (const [type, n] of Object.entries(byType)) this.set({ target_type: type }, n)
    },
  })
  new Counter({
    name: 'browser_telemetry_interaction_binding_total',
    help: 'Interaction binding: removed from a flooding target (paused), added back (resumed), the flooding script terminated (terminated), payloads not a valid report (invalid)',
    labelNames: ['action'] as const,
    registers,
    collect() {
      const counts = source.deps?.interactionBinding?.()
      if (!counts) return
      this.reset()
      for (const [action, n] of Object.entries(counts)) this.inc({ action }, n)
    },
  })

  new Counter({
    name: 'browser_telemetry_targets_refused_total',
    help: 'CDP targets left unwatched because --max-targets were attached',
    registers,
    collect() {
      const n = source.deps?.monitor?.status().refusedTargets
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
      for (const [table, n] of source.deps?.evictions?.() ?? []) this.inc({ table }, n)
    },
  })

  return { monitorState, monitorReconnects, cdpErrors, attachedTargets }
}
