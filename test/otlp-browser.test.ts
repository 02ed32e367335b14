// OTLP export of a real Chromium session: the daemon launches headless Chromium and exports to the
// test receiver (official OTLP definitions). One heavy page with a console error, a failed request
// and a request carrying the agent's W3C traceparent; its Web Vitals as `browser.web_vital` records
// and a long animation frame as a span of the navigation's trace.
import t from 'tap'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { startServer } from './helpers/http.js'
import { heavyHandler, heavyHtml } from './helpers/heavy-page.js'
import { closedPort } from './helpers/ports.js'
import { tempDir } from './helpers/store.js'
import { startReceiver } from './helpers/otlp-receiver.js'
import { ackedBy } from './helpers/ship.js'
import { EventLog } from '../src/store/event-log.js'
import { join } from 'node:path'

const AGENT_TRACE = '0af7651916cd43dd8448eb211c80319c'
const AGENT_SPAN = 'b7ad6b7169203331'

t.test(
  'a real session: every envelope once as a LogRecord, spans nest, traceparent linked, metrics arrive',
  async t => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const refusing = await closedPort()
    const site = await startServer(t, {
      '/otlp.html': (_req, res) => {
        const extra = `<script>
console.error('otlp boom', 42)
fetch('/api/traced', { headers: { traceparent: '00-${AGENT_TRACE}-${AGENT_SPAN}-01' } }).then(r => r.text())
fetch('http://127.0.0.1:${refusing}/nope').catch(() => {})
setTimeout(function otlpBlock() { const end = performance.now() + 120; while (performance.now() < end) {} }, 50)
</script>`
        res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' })
        res.end(heavyHtml('otlp').replace('</body>', `${extra}</body>`))
      },
      '/api/traced': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"ok":true}')
      },
    })
    for (const p of ['/css/', '/js/', '/img/', '/data/'])
      for (let i = 0; i < 40; i++)
        site.route(
          `${p}${i}.${p === '/css/' ? 'css' : p === '/js/' ? 'js' : p === '/img/' ? 'png' : 'json'}`,
          heavyHandler,
        )
    const dir = await tempDir(t)
    const config = parseServeConfig(
      [
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        dir,
        '--proxy-listen',
        'off',
        '--otlp-endpoint',
        receiver.url,
        '--otlp-metrics-interval',
        '500ms',
      ],
      {},
    )
    const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
    t.teardown(() => d.close())
    const [logsSink, tracesSink] = d.sinks.sinks
    t.equal(logsSink!.name, 'otlp_logs')
    t.equal(tracesSink!.name, 'otlp_traces')

    // Wait for the page's navigation to settle (a committed event), then for both sinks to pass it.
    const pageUrl = `${site.url}otlp.html`
    const committed = (...needles: string[]) =>
      new Promise<number>(resolve => {
        const off = d.log.onCommit(records => {
          for (const r of records) {
            if (!needles.every(n => r.json.includes(n))) continue
            off()
            resolve(r.seq)
          }
        })
      })
    const settled = committed('"type":"page_navigation_settled"', 'otlp.html')
    // FCP and TTFB are stored once reported; the long frame comes with the page's next report.
    const fcp = committed('"type":"page_web_vital"', '"name":"FCP"', 'otlp.html')
    const ttfb = committed('"type":"page_web_vital"', '"name":"TTFB"', 'otlp.html')
    const longFrame = committed('"type":"page_long_animation_frame"', 'otlpBlock')
    await d.monitor!.openPage(pageUrl)
    await Promise.all([settled, fcp, ttfb, longFrame])
    const upTo = d.log.lastSeq
    await ackedBy(logsSink!, upTo)
    await ackedBy(tracesSink!, upTo)

    // Logs: every envelope up to upTo exactly once (screenshots are off by default).
    const page = await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })
    const stored = page.records.filter(r => r.seq <= upTo)
    const logs = receiver.logs()
    const count = new Map<number, number>()
    for (const l of logs) {
      const seq = l.attributes['browser.telemetry.seq'] as number
      count.set(seq, (count.get(seq) ?? 0) + 1)
    }
    t.same(
      stored.filter(r => count.get(r.seq) !== 1).map(r => r.seq),
      [],
      `each of the ${stored.length} stored envelopes arrived exactly once`,
    )
    t.ok(stored.length > 400, `a heavy session (${stored.length} events)`)
    const bySeq = new Map(logs.map(l => [l.attributes['browser.telemetry.seq'] as number, l]))
    for (const r of stored) {
      const env = JSON.parse(r.json) as { event: { ts: number; type: string; category: string; data: unknown } }
      const l = bySeq.get(r.seq)
      if (!l) continue
      const name = env.event.type === 'page_web_vital' ? 'browser.web_vital' : env.event.type
      if (l.eventName !== name || l.attributes['browser.telemetry.category'] !== env.event.category) {
        t.fail(`seq ${r.seq}: ${l.eventName} / ${String(l.attributes['browser.telemetry.category'])}`)
        break
      }
      if (l.time !== BigInt(env.event.ts) * 1000n) {
        t.fail(`seq ${r.seq}: time ${l.time} != ts ${env.event.ts}`)
        break
      }
    }
    const boom = logs.find(
      l => l.eventName === 'console_error' && String(l.attributes['exception.message']).includes('otlp boom'),
    )
    t.ok(boom, 'the console error, with exception.message')
    t.equal(boom?.attributes['url.full'], pageUrl)
    t.equal(boom?.resource['browser.id'], d.browserId)
    const failedLog = logs.find(l => l.eventName === 'network_loading_failed')
    t.match(failedLog?.attributes['error.type'], /^net::ERR_CONNECTION_REFUSED$/)

    // Traces: the page's root span, request spans inside it, the traceparent link.
    const spans = receiver.spans()
    const roots = spans.filter(s => s.name === 'page_navigation' && s.attributes['url.full'] === pageUrl)
    t.equal(roots.length, 1, 'one root span for the navigation')
    const root = roots[0]!
    t.equal(root.attributes['browser.navigation.ended_by'], 'settled')
    const children = spans.filter(s => s.parentSpanId === root.spanId)
    const requestSpans = children.filter(s => s.attributes['browser.request.id'] !== undefined)
    // document + 20 css + 40 js + 30 img + 30 fetches + traced + failed
    t.ok(requestSpans.length >= 122, `request spans under the root (${requestSpans.length})`)
    for (const s of requestSpans) {
      if (s.traceId !== root.traceId || s.start < root.start || s.end > root.end || s.end < s.start) {
        t.fail(`span ${s.name} ${String(s.attributes['url.full'])} is not inside its root`)
        break
      }
    }
    const traced = requestSpans.find(s => String(s.attributes['url.full']).endsWith('/api/traced'))
    t.same(
      traced?.links.map(l => [l.traceId, l.spanId]),
      [[AGENT_TRACE, AGENT_SPAN]],
      'the traced request links to the agent trace',
    )
    t.equal(traced?.attributes['http.response.status_code'], 200)
    const failed = requestSpans.find(s => String(s.attributes['url.full']).includes(`:${refusing}/nope`))
    t.equal(failed?.status?.code, 2, 'the failed request span has status ERROR')
    t.same(
      root.events.map(e => e.name).filter(n => n === 'DOMContentLoaded' || n === 'load'),
      ['DOMContentLoaded', 'load'],
      'page milestones as span events',
    )
    t.ok(
      root.events.some(e => e.name === 'exception' && String(e.attributes['exception.message']).includes('otlp boom')),
      'the console error as an exception event',
    )
    t.ok(
      root.events.some(e => e.name === 'layout_shift'),
      'layout shifts as span events',
    )

    // Web Vitals: the OpenTelemetry browser event, its attributes the stored values.
    const vitals = stored
      .map(r => ({ seq: r.seq, env: JSON.parse(r.json) as { event: { type: string; data: Record<string, unknown> } } }))
      .filter(x => x.env.event.type === 'page_web_vital')
    // FCP and TTFB are final by now; CLS is final once the page is hidden, which a loaded machine can
    // reach before the read. Each one stored is exported below.
    const names = vitals.map(v => String(v.env.event.data.name)).sort()
    t.same(
      names.filter(n => n !== 'CLS'),
      ['FCP', 'TTFB'],
      'the vitals final so far',
    )
    for (const v of vitals) {
      const l = bySeq.get(v.seq)!
      const data = v.env.event.data
      t.equal(l.eventName, 'browser.web_vital')
      t.same(
        [l.attributes.name, l.attributes.value, l.attributes.delta, l.attributes.id, l.attributes.rating],
        [data.name, data.value, data.delta, data.id, data.rating],
        `${String(data.name)}: name, value, delta, id, rating`,
      )
      t.equal(l.traceId, root.traceId, 'in the navigation trace')
    }
    // The long animation frame: a child span of the navigation's root, timed by the frame.
    const frameRec = stored.find(
      r => r.json.includes('"type":"page_long_animation_frame"') && r.json.includes('otlpBlock'),
    )!
    const frame = (JSON.parse(frameRec.json) as { event: { data: { start_time: number; duration: number } } }).event
      .data
    const frameSpans = spans.filter(
      s => s.name === 'long_animation_frame' && s.attributes['browser.telemetry.seq'] === frameRec.seq,
    )
    t.equal(frameSpans.length, 1, 'one span for the long frame')
    const fs = frameSpans[0]!
    t.equal(fs.traceId, root.traceId)
    t.equal(fs.parentSpanId, root.spanId)
    t.equal(fs.start, BigInt(Math.round(frame.start_time * 1000)) * 1000n)
    t.equal(fs.end - fs.start, BigInt(Math.round(frame.duration * 1000)) * 1000n)
    t.equal(fs.attributes['code.function'], 'otlpBlock')
    t.equal(fs.attributes['code.filepath'], pageUrl)
    t.equal(fs.attributes['browser.long_animation_frame.invoker'], 'TimerHandler:setTimeout')

    // Metrics: exported on the interval from the /metrics registry.
    await receiver.until(() => receiver.lastMetrics().has('browser_telemetry_events_stored_total'), 'metrics export')
    const sinkState = receiver.lastMetrics().get('browser_telemetry_sink_state') ?? []
    t.ok(
      sinkState.some(p => p.attributes.sink === 'otlp_logs'),
      'per-sink series are exported too',
    )
    const h = (await (await fetch(`${d.url}/healthz`)).json()) as { sinks: Record<string, { state: string }> }
    t.same(Object.keys(h.sinks).sort(), ['otlp_logs', 'otlp_metrics', 'otlp_traces'])

    // The page is still shown: its LCP (not poor here) is held by the daemon, and stored when the
    // daemon stops (its own detach counts as leaving the page).
    const lcpOf = (records: { json: string }[]) =>
      records.filter(r => r.json.includes('"type":"page_web_vital"') && r.json.includes('"name":"LCP"'))
    t.same(lcpOf((await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })).records), [], 'LCP held while shown')
    await d.close()
    const reopened = await EventLog.open({ path: join(dir, 'events'), retentionIntervalMs: 0 })
    t.teardown(() => reopened.close())
    const lcp = lcpOf((await reopened.read({ order: 'asc', cursor: 1, limit: 100_000 })).records).map(
      r => (JSON.parse(r.json) as { event: { data: { url: string; rating: string; attribution: object } } }).event.data,
    )
    t.equal(lcp.length, 1, 'stored once when the daemon stopped')
    t.equal(lcp[0]?.url, pageUrl)
    t.equal(lcp[0]?.rating, 'good')
  },
)
