// Clients of the daemon: open SSE streams and CDP proxy connections, those refused by a cap, SSE
// clients cut for lagging.
import { Counter, Gauge } from 'prom-client'
import { setCounter, type Family } from './sources.js'

export function connectionMetrics({ registers, source }: Family) {
  const sseClients = new Gauge({
    name: 'browser_telemetry_sse_clients',
    help: 'Open telemetry stream (SSE) connections',
    registers,
    collect() {
      const n = source.deps?.sseClients?.()
      if (n !== undefined) this.set(n)
    },
  })
  const proxyConnections = new Gauge({
    name: 'browser_telemetry_cdp_proxy_connections',
    help: 'Open CDP proxy client connections',
    registers,
    collect() {
      const n = source.deps?.proxyConnections?.()
      if (n !== undefined) this.set(n)
    },
  })

  new Counter({
    name: 'browser_telemetry_connections_refused_total',
    help: 'Connections refused by a cap, by kind (sse: 429 too_many_streams, cdp_proxy: 503 too_many_connections)',
    labelNames: ['kind'] as const,
    registers,
    collect() {
      const v = source.deps?.refusedConnections?.()
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
      const n = source.deps?.sseLagDisconnects?.()
      if (n !== undefined) setCounter(this, n)
    },
  })
  return { sseClients, proxyConnections }
}
