import t from 'tap'
import Koa from 'koa'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { openStore } from './helpers/store.js'
import { createMetrics, type MonitorProbe } from '../src/metrics/metrics.js'
import { registerMetricsRoute, httpMetrics } from '../src/api/routes/metrics.js'
import { ApiRouter } from '../src/api/route-table.js'
import { TokenSet } from '../src/identity/tokens.js'
import { bearerAuth } from '../src/api/auth.js'
import { renderErrors } from '../src/api/middleware.js'
import { silentLogger } from '../src/log.js'

const ctx = { session_id: 'S', target_id: 'T', target_type: 'page' as const }

/** `name{labels} value` lines of an exposition, as a map (comments skipped). */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

t.test('GET /metrics reports events, store, monitor, streams and HTTP requests', async t => {
  const { log, pipeline } = await openStore(t)
  const metrics = createMetrics({ processMetrics: false })
  let sse = 3
  // The monitor's own status (Monitor.status()): metrics report it, they do not re-derive it.
  const status: ReturnType<MonitorProbe['status']> = {
    state: 'collecting',
    targets: { page: 2, worker: 1 },
    reconnects: 1,
    cdpErrors: { 'Network.getResponseBody': 3 },
  }
  const detach = metrics.attach({
    pipeline,
    log,
    sseClients: () => sse,
    proxyConnections: () => 1,
    monitor: { status: () => status },
    sourceMaps: () => ({ scripts: { mapped: 4, none: 7, failed: 2 }, loads: 15, indexBytes: 1234 }),
  })
  t.teardown(detach)

  for (let i = 0; i < 3; i++)
    pipeline.emit({ type: 'console_log', data: { ...ctx, level: 'log', text: `m${i}`, args: [`m${i}`] } })
  pipeline.emit({ type: 'network_request', data: { ...ctx, request_id: '1', method: 'GET', headers: {} } })
  pipeline.emit({ type: 'monitor_disconnected', data: { reason: 'browser_restarted' } })
  pipeline.emit({ type: 'monitor_reconnected', data: { reconnect_duration_ms: 12 } })
  pipeline.emit({ type: 'console_log', data: { ...ctx, level: 'log' } as never }) // invalid: text and args missing
  pipeline.setCategories(['network'])
  pipeline.emit({ type: 'console_log', data: { ...ctx, level: 'log', text: 'x', args: [] } }) // gated
  await log.flush()

  const tokens = new TokenSet()
  tokens.add('reader', ['read'])
  tokens.add('writer', ['write'])
  const router = new ApiRouter('b1', bearerAuth(tokens))
  registerMetricsRoute(router, { metrics })
  const koa = new Koa()
  koa.use(httpMetrics(metrics) as Koa.Middleware)
  koa.use(renderErrors(silentLogger) as Koa.Middleware)
  koa.use(router.koa.routes() as unknown as Koa.Middleware)
  const handle = koa.callback()
  const server = createServer((req, res) => void handle(req, res))
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>(r => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  t.equal((await fetch(`${base}/metrics`)).status, 401)
  const forbidden = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer writer' } })
  t.equal(forbidden.status, 403)
  t.equal((await forbidden.json()).code, 'forbidden')
  t.equal((await fetch(`${base}/nope`)).status, 404)

  const res = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer reader' } })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const s = samples(await res.text())
  t.equal(s.get('browser_telemetry_events_emitted_total{category="console"}'), 3)
  t.equal(s.get('browser_telemetry_events_emitted_total{category="network"}'), 1)
  t.equal(s.get('browser_telemetry_events_emitted_total{category="monitor"}'), 2)
  t.equal(s.get('browser_telemetry_events_stored_total{category="console"}'), 3)
  t.equal(s.get('browser_telemetry_events_stored_total{category="network"}'), 1)
  t.equal(s.get('browser_telemetry_events_dropped_total{category="console",reason="invalid"}'), 1)
  t.equal(s.get('browser_telemetry_events_dropped_total{category="console",reason="category_disabled"}'), 1)
  t.equal(s.get('browser_telemetry_store_oldest_seq'), 1)
  t.equal(s.get('browser_telemetry_store_newest_seq'), 6)
  t.equal(s.get('browser_telemetry_store_pending_events'), 0)
  t.equal(s.get('browser_telemetry_store_writable'), 1)
  t.ok(s.has('browser_telemetry_store_bytes'))
  t.equal(s.get('browser_telemetry_monitor_reconnects_total'), 1)
  t.equal(s.get('browser_telemetry_monitor_state{state="collecting"}'), 1)
  t.equal(s.get('browser_telemetry_monitor_state{state="disconnected"}'), 0)
  t.equal(s.get('browser_telemetry_attached_targets{target_type="page"}'), 2)
  t.equal(s.get('browser_telemetry_attached_targets{target_type="worker"}'), 1)
  t.equal(s.get('browser_telemetry_cdp_errors_total{method="Network.getResponseBody"}'), 3)
  t.equal(s.get('browser_telemetry_sse_clients'), 3)
  t.equal(s.get('browser_telemetry_cdp_proxy_connections'), 1)
  t.equal(s.get('browser_telemetry_http_requests_total{operation="getMetrics",status="401"}'), 1)
  t.equal(s.get('browser_telemetry_http_requests_total{operation="getMetrics",status="403"}'), 1)
  t.equal(s.get('browser_telemetry_http_requests_total{operation="unmatched",status="404"}'), 1)
  t.equal(s.get('browser_telemetry_http_request_duration_seconds_count{operation="getMetrics"}'), 2)
  t.equal(s.get('browser_telemetry_sourcemap_scripts_total{outcome="mapped"}'), 4)
  t.equal(s.get('browser_telemetry_sourcemap_scripts_total{outcome="none"}'), 7)
  t.equal(s.get('browser_telemetry_sourcemap_scripts_total{outcome="failed"}'), 2)
  t.equal(s.get('browser_telemetry_sourcemap_loads_total'), 15)
  t.equal(s.get('browser_telemetry_sourcemap_index_written_bytes_total'), 1234)

  // Gauges are read at scrape time; counters keep counting.
  sse = 0
  status.state = 'failed'
  status.cdpErrors = { 'Network.getResponseBody': 4, 'Page.enable': 1 }
  const again = samples(await (await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer reader' } })).text())
  t.equal(again.get('browser_telemetry_sse_clients'), 0)
  t.equal(again.get('browser_telemetry_monitor_state{state="failed"}'), 1)
  t.equal(again.get('browser_telemetry_monitor_state{state="collecting"}'), 0)
  t.equal(again.get('browser_telemetry_cdp_errors_total{method="Network.getResponseBody"}'), 4)
  t.equal(again.get('browser_telemetry_cdp_errors_total{method="Page.enable"}'), 1)
  t.equal(again.get('browser_telemetry_http_requests_total{operation="getMetrics",status="200"}'), 1)
})

t.test('monitor state comes from the monitor, not from monitor_* events; detach stops reading it', async t => {
  const { log, pipeline } = await openStore(t)
  const metrics = createMetrics({ processMetrics: false })
  const detach = metrics.attach({
    pipeline,
    log,
    monitor: { status: () => ({ state: 'starting', targets: {}, reconnects: 1, cdpErrors: {} }) },
  })
  pipeline.emit({ type: 'monitor_reconnected', data: { reconnect_duration_ms: 1 } })
  let s = samples((await metrics.render()).body)
  t.equal(s.get('browser_telemetry_monitor_state{state="starting"}'), 1)
  t.equal(s.get('browser_telemetry_monitor_state{state="collecting"}'), 0)
  detach()
  pipeline.emit({ type: 'monitor_reconnected', data: { reconnect_duration_ms: 1 } })
  s = samples((await metrics.render()).body)
  t.equal(s.get('browser_telemetry_monitor_reconnects_total'), 1)
  t.equal(s.get('browser_telemetry_monitor_state{state="none"}'), 1)
})

t.test('process metrics are on by default and registries are independent', async t => {
  const a = createMetrics()
  const b = createMetrics()
  a.eventsEmitted.inc({ category: 'page' })
  const sa = samples((await a.render()).body)
  const sb = samples((await b.render()).body)
  t.ok(sa.has('process_resident_memory_bytes'))
  t.equal(sa.get('browser_telemetry_events_emitted_total{category="page"}'), 1)
  t.equal(sb.get('browser_telemetry_events_emitted_total{category="page"}'), undefined)
})
