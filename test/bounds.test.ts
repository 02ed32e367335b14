// Bounded state: URL / header caps, byte-bounded request table with counted
// eviction, SSE byte buffer (final comment, lossless resume), SSE and CDP-proxy connection caps,
// attached-target cap against a real Chromium.
import t from 'tap'
import { connect } from 'node:net'
import { get as httpGet } from 'node:http'
import { WebSocketServer, WebSocket } from 'ws'
import { createParser } from 'eventsource-parser'
import { Bounds, cutUtf8 } from '../src/pipeline/bounds.js'
import { RequestTable } from '../collectors/network-requests.js'
import { CdpProxy } from '../src/proxy/cdp-proxy.js'
import { Monitor } from '../src/monitor/index.js'
import { pino } from 'pino'
import CDP from 'chrome-remote-interface'
import { BROWSER_ID, TOKEN, startApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'
import { dechunk } from './helpers/sse.js'
import { startBrowser } from './helpers/browser.js'
import { openStore } from './helpers/store.js'

t.test('cutUtf8 / capUrl / capHeaders: exact byte bounds, character boundaries, counted', async t => {
  t.equal(cutUtf8('ééé', 5), 'éé')
  t.equal(cutUtf8('a😀b', 4), 'a')
  t.equal(cutUtf8('abc', 10), 'abc')
  const bounds = new Bounds({ maxUrlBytes: 1000, maxHeaderBytes: 2000 })
  let flagged = 0
  const long = 'http://a/' + 'é'.repeat(100_000)
  const url = bounds.capUrl(long, () => flagged++)
  t.ok(Buffer.byteLength(url) <= 1000 && Buffer.byteLength(url) >= 999, `${Buffer.byteLength(url)} bytes`)
  t.ok(long.startsWith(url))
  t.equal(flagged, 1)
  t.equal(bounds.evictions.get('url_cut'), 1)
  t.equal(
    bounds.capUrl('http://short/', () => flagged++),
    'http://short/',
  )
  t.equal(flagged, 1, 'short URLs untouched, not flagged')
  const headers: Record<string, string> = {}
  for (let i = 0; i < 100; i++) headers[`x-h${i}`] = 'v'.repeat(50)
  let hcut = 0
  const capped = bounds.capHeaders(headers, () => hcut++)
  const bytes = Object.entries(capped).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0)
  t.ok(bytes <= 2000 && bytes > 1900, `header set ${bytes} bytes`)
  t.equal(hcut, 1)
  t.same(Object.keys(capped).slice(0, 3), ['x-h0', 'x-h1', 'x-h2'], 'first headers kept in order')
  t.same(bounds.capHeaders({ a: 'b' }), { a: 'b' })
  t.equal(bounds.limits.maxUrlBytes, 1000)
  t.same(bounds.evictions.get('headers_cut'), 1, 'header cut counted on this Bounds only')
  t.equal(new Bounds().evictions.size, 0, 'another Bounds starts at zero')
})

t.test('RequestTable: byte bound evicts oldest first, counted; byte accounting exact on replace/delete', async t => {
  const evicted: string[] = []
  const table = new RequestTable<{ url: string }>({
    ttlMs: 1e9,
    maxSize: 1e6,
    maxBytes: 10_000,
    sizeOf: v => v.url.length,
    onEvict: id => evicted.push(id),
  })
  for (let i = 0; i < 30; i++) table.set(`r${i}`, { url: 'u'.repeat(1000) })
  t.equal(table.size, 10)
  t.equal(table.bytes, 10_000)
  t.same(
    evicted,
    Array.from({ length: 20 }, (_, i) => `r${i}`),
    'oldest first',
  )
  table.set('r29', { url: 'u'.repeat(5000) }) // grows the newest: older ones go, never the entry just written
  t.equal(table.bytes, 5000 + 5 * 1000)
  t.ok(table.get('r29'))
  table.delete('r29')
  t.equal(table.bytes, 5000)
  table.set('huge', { url: 'u'.repeat(50_000) })
  t.equal(table.size, 1, 'a single over-bound entry is kept alone (its event still needs it), all others go')
  table.clear()
  t.equal(table.bytes, 0)
})

t.test(
  'SSE: a lagging client past its byte buffer gets a final comment, is closed, and resumes losslessly',
  async t => {
    t.setTimeout(60_000)
    const api = await startApi(t, {
      deps: { streams: { bufferEvents: 1_000_000, bufferBytes: 1024 * 1024 } },
      logOpts: { commitMaxEvents: 16 },
    })
    const sock = connect(Number(new URL(api.url).port), '127.0.0.1')
    await new Promise<void>(r => sock.once('connect', () => r()))
    const chunks: Buffer[] = []
    let closed = false
    sock.on('close', () => {
      closed = true
    })
    sock.write(
      `GET /browsers/${BROWSER_ID}/telemetry/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: text/event-stream\r\n\r\n`,
    )
    await waitFor(() => api.app.streams.size === 1, 10_000, 'client registered')
    sock.pause()
    const big = 'x'.repeat(20_000)
    const total = 1000 // ~20 MB
    for (let i = 0; i < total; i++) {
      api.pipeline.emit({ type: 'console_log', data: { level: 'log', text: big, args: [String(i)] } })
      if (i % 50 === 49) await api.log.flush()
    }
    await api.log.flush()
    await waitFor(() => api.app.streams.stats.slowDisconnects === 1, 30_000, 'lagging client closed')
    t.equal(api.app.streams.size, 0)
    sock.on('data', (c: Buffer) => chunks.push(c))
    sock.resume()
    await waitFor(() => closed, 30_000, 'socket closed')
    const text = Buffer.concat(chunks).toString('utf8')
    const body = dechunk(text.slice(text.indexOf('\r\n\r\n') + 4))
    const got: number[] = []
    const comments: string[] = []
    createParser({ onEvent: e => got.push(Number(e.id)), onComment: c => comments.push(c) }).feed(body)
    t.ok(got.length > 0 && got.length < total, `got ${got.length} of ${total} before the cut`)
    t.same(
      got,
      Array.from({ length: got.length }, (_, i) => i + 1),
      'a contiguous prefix',
    )
    t.match(comments[comments.length - 1], /lagging.*Last-Event-ID/, 'the final comment says why and how to resume')
    t.ok(body.endsWith('\n\n'), 'ends after the comment')
    // Resume: everything after the last frame received.
    const ac = new AbortController()
    const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/stream`, {
      signal: ac.signal,
      headers: { 'last-event-id': String(got[got.length - 1]) },
    })
    const resumed: number[] = []
    const p = createParser({ onEvent: e => resumed.push(Number(e.id)) })
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    while (resumed.length < total - got.length) {
      const { value, done } = await reader.read()
      if (done) break
      p.feed(dec.decode(value, { stream: true }))
    }
    t.same(
      resumed,
      Array.from({ length: total - got.length }, (_, i) => got.length + 1 + i),
      'nothing lost',
    )
    ac.abort()
  },
)

t.test('SSE client cap: 429 too_many_streams with an error object; a slot frees on close', async t => {
  const api = await startApi(t, { deps: { streams: { maxClients: 2 } } })
  const open = async () => {
    const ac = new AbortController()
    const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/stream`, { signal: ac.signal })
    return { res, ac }
  }
  const a = await open()
  const b = await open()
  t.same([a.res.status, b.res.status], [200, 200])
  const c = await open()
  t.equal(c.res.status, 429)
  t.equal(c.res.headers.get('retry-after'), '5')
  t.same(await c.res.json(), {
    code: 'too_many_streams',
    message: 'at most 2 telemetry streams may be open at once; retry later',
  })
  t.equal(api.app.streams.stats.refused, 1)
  a.ac.abort()
  await waitFor(() => api.app.streams.size === 1, 10_000, 'slot freed')
  const d = await open()
  t.equal(d.res.status, 200)
  b.ac.abort()
  d.ac.abort()
})

t.test('CDP proxy connection cap: 503 too_many_connections with an error object before the upgrade', async t => {
  const upstream = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise(r => upstream.once('listening', r))
  t.teardown(() => new Promise<void>(r => upstream.close(() => r())))
  const browserUrl = `ws://127.0.0.1:${(upstream.address() as { port: number }).port}/devtools/browser/fake`
  const { pipeline } = await openStore(t)
  const proxy = new CdpProxy({
    listen: { host: '127.0.0.1', port: 0 },
    upstream: () => browserUrl,
    emit: pipeline.emit,
    maxConnections: 2,
  })
  const addr = await proxy.start()
  t.teardown(() => proxy.close())
  const url = `ws://127.0.0.1:${addr.port}/devtools/browser/fake`
  const opened = (ws: WebSocket) =>
    new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
  const a = new WebSocket(url)
  const b = new WebSocket(url)
  await Promise.all([opened(a), opened(b)])
  await waitFor(() => proxy.connectionCount === 2, 10_000, 'two relays')
  // What a WebSocket client sees: the upgrade answered with a plain HTTP 503 and a JSON error object.
  const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpGet(
      `http://127.0.0.1:${addr.port}/devtools/browser/fake`,
      {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
      },
      res => {
        let body = ''
        res.on('data', c => {
          body += c
        })
        res.on('end', () => resolve({ status: res.statusCode!, body }))
      },
    )
    req.on('upgrade', () => reject(new Error('upgraded past the cap')))
    req.on('error', reject)
  })
  t.equal(refused.status, 503)
  t.same(JSON.parse(refused.body), {
    code: 'too_many_connections',
    message: 'at most 2 CDP proxy connections may be open at once; retry later',
  })
  t.equal(proxy.refusedConnections, 1)
  a.close()
  await waitFor(() => proxy.connectionCount === 1, 10_000, 'slot freed')
  const c = new WebSocket(url)
  await opened(c)
  b.close()
  c.close()
})

t.test('attached targets are capped: more tabs are left unwatched, counted and logged', async t => {
  t.setTimeout(60_000)
  const browser = await startBrowser(t)
  const { pipeline } = await openStore(t)
  const lines: string[] = []
  const logger = pino(
    { level: 'warn' },
    {
      write: (l: string) => {
        lines.push(l)
      },
    },
  )
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: pipeline.emit, logger, maxTargets: 3 })
  await monitor.start()
  t.teardown(() => monitor.stop())
  const initial = monitor.targets().length
  const cdp = await CDP({ target: browser.wsUrl })
  t.teardown(() => cdp.close())
  for (let i = 0; i < 6; i++) await cdp.Target.createTarget({ url: 'about:blank' })
  await waitFor(() => monitor.refusedTargets >= 6 - (3 - initial), 30_000, 'refusals counted')
  t.equal(monitor.targets().length, 3, 'never more than the cap attached')
  t.equal(monitor.refusedTargets, 6 - (3 - initial))
  t.ok(
    lines.some(l => l.includes('attached target cap reached')),
    'a warning was logged',
  )
})
