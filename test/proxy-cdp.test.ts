// CDP proxy against real headless Chromium (and a tiny fake upstream for frame-level checks):
// discovery rewriting, Playwright and Puppeteer through the proxy, exact cdp_connect/cdp_disconnect
// pairing and message counts, each disconnect reason produced for real, auth, 503 without a browser.
import t, { type Test } from 'tap'
import { WebSocket, WebSocketServer } from 'ws'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import puppeteer from 'puppeteer-core'
import { CdpProxy, type CdpProxyOptions } from '../src/proxy/cdp-proxy.js'
import { launchChromium, type LaunchedBrowser } from '../src/monitor/launch.js'
import type { EventInput, Emit } from '../src/pipeline/pipeline.js'
import { validateData } from '../src/events/index.js'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { fakeAccepted } from './helpers/store.js'

type Recorded = EventInput & { at: number }

function recorder() {
  const events: Recorded[] = []
  let n = 0
  const emit: Emit = input => {
    // Every event the proxy emits must be valid for the event model.
    const issues = validateData(input.type, input.data)
    if (issues.length) throw new Error(`invalid ${input.type}: ${JSON.stringify(issues)}`)
    // Command records have their own test file; these tests pin the connection pair.
    if (input.type !== 'cdp_command') events.push({ ...input, at: n++ })
    return fakeAccepted(input)
  }
  const disconnects = () => events.filter(e => e.type === 'cdp_disconnect') as (Recorded & { type: 'cdp_disconnect' })[]
  const connects = () => events.filter(e => e.type === 'cdp_connect')
  return { events, emit, disconnects, connects }
}

async function startProxy(tt: Test, opts: Omit<CdpProxyOptions, 'listen'>) {
  const proxy = new CdpProxy({ listen: { host: '127.0.0.1', port: 0 }, ...opts })
  const addr = await proxy.start()
  tt.teardown(() => proxy.close())
  return { proxy, port: addr.port, base: `http://127.0.0.1:${addr.port}` }
}

function openWs(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers })
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
  })
}

/** Sends CDP commands one by one and resolves with the answers. */
async function roundTrips(ws: WebSocket, commands: { method: string; params?: object }[]): Promise<unknown[]> {
  const out: unknown[] = []
  let id = 0
  for (const c of commands) {
    const myId = ++id
    const answer = new Promise<unknown>(resolve => {
      const onMsg = (d: Buffer) => {
        const m = JSON.parse(d.toString()) as { id?: number }
        if (m.id === myId) {
          ws.off('message', onMsg)
          resolve(m)
        }
      }
      ws.on('message', onMsg)
    })
    ws.send(JSON.stringify({ id: myId, ...c }))
    out.push(await answer)
  }
  return out
}

const closeCode = (ws: WebSocket) =>
  new Promise<number>(resolve => {
    if (ws.readyState === WebSocket.CLOSED) resolve(-1)
    else ws.once('close', code => resolve(code))
  })

t.test('no browser: 503 error object on discovery and upgrade, nothing emitted', async t => {
  const rec = recorder()
  const { base, port } = await startProxy(t, { upstream: () => undefined, emit: rec.emit })
  for (const path of ['/json/version', '/json/list', '/json']) {
    const res = await fetch(base + path)
    t.equal(res.status, 503, path)
    const body = (await res.json()) as { code: string; message: string }
    t.equal(body.code, 'browser_unavailable')
    t.match(body.message, /no browser/)
  }
  const err = await openWs(`ws://127.0.0.1:${port}/devtools/browser/x`).then(
    () => undefined,
    (e: Error) => e,
  )
  t.match(err?.message, /Unexpected server response: 503/)
  t.equal((await fetch(base + '/nope')).status, 404)
  const { request } = await import('node:http')
  const bad = await new Promise<number>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '//evil/json/version' }, res => {
      res.resume()
      resolve(res.statusCode!)
    })
      .on('error', reject)
      .end()
  })
  t.equal(bad, 400, 'a malformed request target is a 400')
  t.same(rec.events, [])
})

t.test('fake upstream: exact counts, text and binary frames preserved, dial failure', async t => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise(r => wss.once('listening', r))
  t.teardown(
    () =>
      new Promise<void>(r => {
        for (const c of wss.clients) c.terminate()
        wss.close(() => r())
      }),
  )
  const upPort = (wss.address() as AddressInfo).port
  const seenPaths: string[] = []
  // Echo server: replies to each frame with one frame of the same kind, plus one extra text frame
  // after a "burst" message (so counts in the two directions differ).
  wss.on('connection', (ws, req) => {
    seenPaths.push(req.url ?? '')
    ws.on('message', (data, isBinary) => {
      ws.send(data, { binary: isBinary })
      if (!isBinary && data.toString() === 'burst') ws.send('extra')
    })
  })
  let up: string | undefined = `ws://127.0.0.1:${upPort}/devtools/browser/abc`
  const rec = recorder()
  const { port } = await startProxy(t, { upstream: () => up, emit: rec.emit })

  const opened = Date.now()
  const ws = await openWs(`ws://127.0.0.1:${port}/devtools/page/PAGE1`)
  t.same(rec.connects().length, 1, 'cdp_connect once the client is accepted')
  const got: { text: boolean; data: string }[] = []
  ws.on('message', (d: Buffer, isBinary) =>
    got.push({ text: !isBinary, data: isBinary ? d.toString('hex') : d.toString() }),
  )
  ws.send('hello')
  ws.send(Buffer.from([0, 1, 2, 255]), { binary: true })
  ws.send('burst')
  await waitFor(() => got.length === 4, 5000, 'echoes')
  t.same(got, [
    { text: true, data: 'hello' },
    { text: false, data: '000102ff' },
    { text: true, data: 'burst' },
    { text: true, data: 'extra' },
  ])
  t.same(seenPaths, ['/devtools/page/PAGE1'], 'page path relayed 1:1')
  ws.close()
  await waitFor(() => rec.disconnects().length === 1, 5000, 'cdp_disconnect')
  const closed = Date.now()
  const d = rec.disconnects()[0]!
  t.equal(d.data.reason, 'client_close')
  t.equal(d.data.message_count, 7, '3 client -> browser + 4 browser -> client')
  t.ok(
    Number.isInteger(d.data.duration_ms) && d.data.duration_ms >= 0 && d.data.duration_ms <= closed - opened,
    `duration_ms ${d.data.duration_ms} is whole ms within the connection's life (${closed - opened} ms)`,
  )
  t.same(
    rec.events.map(e => e.type),
    ['cdp_connect', 'cdp_disconnect'],
  )
  t.same(rec.events[0]!.source, { kind: 'local_process' })
  t.same(rec.events[1]!.source, { kind: 'local_process' })

  // Dial failure: the upstream port is closed.
  up = `ws://127.0.0.1:1/devtools/browser/abc`
  const ws2 = await openWs(`ws://127.0.0.1:${port}/devtools/browser/abc`)
  t.equal(await closeCode(ws2), 1011)
  await waitFor(() => rec.disconnects().length === 2, 5000)
  t.same(rec.disconnects()[1]!.data, {
    connection_id: rec.connects()[1]!.data.connection_id,
    duration_ms: rec.disconnects()[1]!.data.duration_ms,
    message_count: 0,
    reason: 'upstream_error',
    telemetry_excluded: 0,
    telemetry_dropped: 0,
  })
  t.not(rec.connects()[1]!.data.connection_id, rec.connects()[0]!.data.connection_id, 'each connection has its own id')
  t.same(
    rec.events.map(e => e.type),
    ['cdp_connect', 'cdp_disconnect', 'cdp_connect', 'cdp_disconnect'],
  )

  // Unknown path: 404, nothing emitted.
  const err = await openWs(`ws://127.0.0.1:${port}/devtools/other/x`).then(
    () => undefined,
    (e: Error) => e,
  )
  t.match(err?.message, /404/)
  t.equal(rec.events.length, 4)
})

t.test('real Chromium: discovery, Playwright, Puppeteer, raw client counts, every reason', async t => {
  const site = await startServer(t, {
    '/': '<html><head><title>proxied</title></head><body><p id="p">hi</p></body></html>',
  })
  let browser: LaunchedBrowser | undefined = await launchChromium()
  t.teardown(() => browser?.close())
  let current: string | undefined = browser.wsUrl
  const listeners = new Set<() => void>()
  const rec = recorder()
  const { proxy, port, base } = await startProxy(t, {
    upstream: () => current,
    onUpstreamChanged: l => {
      listeners.add(l)
      return () => listeners.delete(l)
    },
    emit: rec.emit,
    upstreamLossGraceMs: 60_000,
  })
  const setUpstream = (url: string | undefined) => {
    current = url
    for (const l of listeners) l()
  }

  await t.test('discovery endpoints point at the proxy', async t => {
    const version = (await (await fetch(base + '/json/version')).json()) as {
      webSocketDebuggerUrl: string
      Browser: string
    }
    t.match(version.Browser, /Chrome/)
    t.equal(version.webSocketDebuggerUrl, `ws://127.0.0.1:${port}${new URL(browser!.wsUrl).pathname}`)
    const slash = (await (await fetch(base + '/json/version/')).json()) as { webSocketDebuggerUrl: string }
    t.equal(slash.webSocketDebuggerUrl, version.webSocketDebuggerUrl, 'trailing slash (Playwright) works too')
    const list = (await (await fetch(base + '/json/list')).json()) as {
      type: string
      webSocketDebuggerUrl: string
      devtoolsFrontendUrl: string
    }[]
    const page = list.find(x => x.type === 'page')!
    t.match(page.webSocketDebuggerUrl, new RegExp(`^ws://127\\.0\\.0\\.1:${port}/devtools/page/[A-F0-9]+$`))
    t.match(page.devtoolsFrontendUrl, `ws=127.0.0.1:${port}/devtools/page/`)
    t.notMatch(JSON.stringify(list), `:${browser!.port}/`, 'no browser port left in the answer')
    t.equal(rec.events.length, 0, 'HTTP discovery emits nothing')
  })

  await t.test('Playwright connectOverCDP through the proxy drives a page', async t => {
    const pw = await chromium.connectOverCDP(base)
    const context = pw.contexts()[0]!
    const page = await context.newPage()
    await page.goto(site.url)
    t.equal(await page.title(), 'proxied')
    t.equal(await page.textContent('#p'), 'hi')
    await page.close()
    await pw.close()
    await waitFor(() => rec.disconnects().length === 1, 10000, 'playwright disconnect')
    t.same(
      rec.events.map(e => e.type),
      ['cdp_connect', 'cdp_disconnect'],
    )
    const d = rec.disconnects()[0]!.data
    t.equal(d.reason, 'client_close')
    t.ok(d.message_count > 10, `relayed ${d.message_count} messages`)
  })

  await t.test('Puppeteer connect({browserURL}) through the proxy drives a page', async t => {
    const pp = await puppeteer.connect({ browserURL: base, defaultViewport: null })
    const page = await pp.newPage()
    await page.goto(site.url)
    t.equal(await page.title(), 'proxied')
    t.equal(await page.$eval('#p', el => el.textContent), 'hi')
    await page.close()
    await pp.disconnect()
    await waitFor(() => rec.disconnects().length === 2, 10000, 'puppeteer disconnect')
    t.same(
      rec.events.slice(2).map(e => e.type),
      ['cdp_connect', 'cdp_disconnect'],
    )
    t.equal(rec.disconnects()[1]!.data.reason, 'client_close')
  })

  await t.test('raw client: exact message count, page endpoint, client_close', async t => {
    const before = rec.events.length
    const ws = await openWs(`ws://127.0.0.1:${port}${new URL(browser!.wsUrl).pathname}`)
    const answers = await roundTrips(ws, [
      { method: 'Browser.getVersion' },
      { method: 'Target.getTargets' },
      { method: 'Browser.getVersion' },
    ])
    t.match(answers[0], { id: 1, result: { product: /Chrome/ } })
    ws.close()
    await waitFor(() => rec.events.length === before + 2, 5000)
    const d = rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }
    t.same(rec.events[before]!.type, 'cdp_connect')
    t.same({ reason: d.data.reason, message_count: d.data.message_count }, { reason: 'client_close', message_count: 6 })

    // A page endpoint, relayed 1:1.
    const list = (await (await fetch(base + '/json/list')).json()) as { type: string; webSocketDebuggerUrl: string }[]
    const pageWs = await openWs(list.find(x => x.type === 'page')!.webSocketDebuggerUrl)
    const [res] = await roundTrips(pageWs, [
      { method: 'Runtime.evaluate', params: { expression: '6*7', returnByValue: true } },
    ])
    t.match(res, { result: { result: { value: 42 } } })
    pageWs.close()
    await waitFor(() => rec.events.length === before + 4, 5000)
    t.same((rec.events[before + 3] as Recorded & { type: 'cdp_disconnect' }).data.message_count, 2)
  })

  await t.test("three overlapping clients: each disconnect carries its own connect's connection_id", async t => {
    const before = rec.events.length
    const path = new URL(browser!.wsUrl).pathname
    const idOf = (e: Recorded | undefined) => (e!.data as { connection_id: string }).connection_id
    // A opens, B opens, A closes, C opens, B closes, C closes: 1, 2 and 3 round trips each.
    const a = await openWs(`ws://127.0.0.1:${port}${path}`)
    await roundTrips(a, [{ method: 'Browser.getVersion' }])
    const b = await openWs(`ws://127.0.0.1:${port}${path}`)
    await roundTrips(b, [{ method: 'Browser.getVersion' }, { method: 'Browser.getVersion' }])
    a.close()
    await waitFor(() => rec.events.length === before + 3, 5000, 'A disconnect')
    const c = await openWs(`ws://127.0.0.1:${port}${path}`)
    await roundTrips(c, [
      { method: 'Browser.getVersion' },
      { method: 'Browser.getVersion' },
      { method: 'Browser.getVersion' },
    ])
    b.close()
    await waitFor(() => rec.events.length === before + 5, 5000, 'B disconnect')
    c.close()
    await waitFor(() => rec.events.length === before + 6, 5000, 'C disconnect')
    const ev = rec.events.slice(before)
    t.same(
      ev.map(e => e.type),
      ['cdp_connect', 'cdp_connect', 'cdp_disconnect', 'cdp_connect', 'cdp_disconnect', 'cdp_disconnect'],
    )
    const [idA, idB, idC] = [idOf(ev[0]), idOf(ev[1]), idOf(ev[3])]
    t.equal(new Set([idA, idB, idC]).size, 3, 'three distinct ids')
    const disconnects = [ev[2], ev[4], ev[5]].map(
      e => e!.data as { connection_id: string; message_count: number; reason: string },
    )
    t.same(
      disconnects.map(d => [d.connection_id, d.message_count, d.reason]),
      [
        [idA, 2, 'client_close'],
        [idB, 4, 'client_close'],
        [idC, 6, 'client_close'],
      ],
      'A, B, C in closing order, each with its own count',
    )
  })

  await t.test('upstream URL changes under a live session: upstream_changed', async t => {
    const before = rec.events.length
    const ws = await openWs(
      `ws://127.0.0.1:${port}/devtools/browser/${new URL(browser!.wsUrl).pathname.split('/').pop()}`,
    )
    await roundTrips(ws, [{ method: 'Browser.getVersion' }])
    // No browser for a moment (the monitor lost its own connection): live sessions are left alone.
    setUpstream(undefined)
    t.match((await roundTrips(ws, [{ method: 'Browser.getVersion' }]))[0], { id: 1, result: {} })
    const code = closeCode(ws)
    // The same browser under another spelling of its URL: to the proxy, a different upstream.
    setUpstream(browser!.wsUrl.replace('127.0.0.1', 'localhost'))
    t.equal(await code, 1012, 'client told to reconnect (service restart)')
    await waitFor(() => rec.events.length === before + 2, 5000)
    t.same((rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }).data.reason, 'upstream_changed')
    t.same((rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }).data.message_count, 4)
    setUpstream(browser!.wsUrl)
  })

  await t.test('browser restart (killed, relaunched on the same port): upstream_changed', async t => {
    const before = rec.events.length
    const ws = await openWs(`ws://127.0.0.1:${port}/`)
    await roundTrips(ws, [{ method: 'Browser.getVersion' }, { method: 'Browser.getVersion' }])
    const code = closeCode(ws)
    const oldPort = browser!.port
    browser!.process.kill('SIGKILL')
    await browser!.exited
    t.equal(await code, 1011, 'client closed as soon as the browser dropped')
    await browser!.close()
    browser = await launchChromium({ port: oldPort })
    t.not(browser.wsUrl, current, 'the new browser has a new URL')
    t.equal(rec.events.length, before + 1, 'reason undecided until the upstream changes')
    setUpstream(browser.wsUrl)
    await waitFor(() => rec.events.length === before + 2, 5000)
    t.same((rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }).data.reason, 'upstream_changed')
    t.same((rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }).data.message_count, 4)
    // The client can reconnect to the new browser through the same address.
    const again = await openWs(`ws://127.0.0.1:${port}/`)
    const [v] = await roundTrips(again, [{ method: 'Browser.getVersion' }])
    t.match(v, { result: { product: /Chrome/ } })
    again.close()
    await waitFor(() => rec.events.length === before + 4, 5000)
    t.same((rec.events[before + 3] as Recorded & { type: 'cdp_disconnect' }).data.reason, 'client_close')
  })

  await t.test('proxy close: context_cancelled', async t => {
    const before = rec.events.length
    const ws = await openWs(`ws://127.0.0.1:${port}/`)
    await roundTrips(ws, [{ method: 'Browser.getVersion' }])
    const code = closeCode(ws)
    await proxy.close()
    t.equal(await code, 1001)
    t.equal(rec.events.length, before + 2)
    t.same((rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }).data, {
      connection_id: (rec.events[before] as Recorded & { type: 'cdp_connect' }).data.connection_id,
      duration_ms: (rec.events[before + 1] as Recorded & { type: 'cdp_disconnect' }).data.duration_ms,
      message_count: 2,
      reason: 'context_cancelled',
      telemetry_excluded: 0,
      telemetry_dropped: 0,
    })
  })

  t.test('pairing over the whole run: every disconnect follows its own connect, joined by connection_id', async t => {
    const open = new Set<string>()
    const seen = new Set<string>()
    // The connections the subtests above made: Playwright 1, Puppeteer 1, raw 2 (browser and page),
    // overlapping 3, URL change 1, restart 2 (before and after), proxy close 1; two events each.
    const CONNECTIONS = 11
    t.same(
      { connects: rec.connects().length, disconnects: rec.disconnects().length, events: rec.events.length },
      { connects: CONNECTIONS, disconnects: CONNECTIONS, events: 2 * CONNECTIONS },
      'one connect and one disconnect per connection made',
    )
    for (const e of rec.events) {
      const id = (e.data as { connection_id?: string }).connection_id
      t.match(id, /^[0-9a-f-]{36}$/, `${e.type} carries a connection_id`)
      if (e.type === 'cdp_connect') {
        t.notOk(seen.has(id!), 'ids are not reused')
        seen.add(id!)
        open.add(id!)
      } else {
        t.ok(open.delete(id!), 'disconnect after its own connect')
      }
    }
    t.equal(open.size, 0, 'every connect has exactly one disconnect')
    t.end()
  })
})

t.test('upstream killed mid-session with no replacement: upstream_error after the grace period', async t => {
  const browser = await startBrowser(t)
  const rec = recorder()
  const { port } = await startProxy(t, { upstream: () => browser.wsUrl, emit: rec.emit, upstreamLossGraceMs: 200 })
  const ws = await openWs(`ws://127.0.0.1:${port}/`)
  await roundTrips(ws, [{ method: 'Browser.getVersion' }])
  const code = closeCode(ws)
  browser.process.kill('SIGKILL')
  t.equal(await code, 1011)
  await waitFor(() => rec.disconnects().length === 1, 5000)
  t.same(rec.disconnects()[0]!.data.reason, 'upstream_error')
  t.same(rec.disconnects()[0]!.data.message_count, 2)
  t.same(
    rec.events.map(e => e.type),
    ['cdp_connect', 'cdp_disconnect'],
  )
})

t.test('web pages are refused: Origin header, DNS-name Host without auth', async t => {
  const rec = recorder()
  const { port } = await startProxy(t, { upstream: () => 'ws://127.0.0.1:1/devtools/browser/x', emit: rec.emit })
  const err = await new Promise<Error>(resolve => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { origin: 'https://evil.example' })
    ws.once('error', resolve)
  })
  t.match(err.message, /Unexpected server response: 403/)
  const { request } = await import('node:http')
  const status = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/json/version', headers }, res => {
        res.resume()
        resolve(res.statusCode!)
      })
        .on('error', reject)
        .end()
    })
  t.equal(await status({ host: 'rebound.evil.example:9222' }), 403, 'DNS rebinding: Host is a name')
  t.equal(await status({ origin: 'https://evil.example' }), 403)
  t.equal(
    await status({ host: `localhost:${port}` }),
    503,
    'localhost passes (and there is no browser behind 127.0.0.1:1)',
  )
  t.same(rec.events, [])
  const open = await startProxy(t, {
    upstream: () => undefined,
    emit: rec.emit,
    allowOrigins: ['https://devtools.example'],
  })
  t.equal(
    (await fetch(`${open.base}/json/version`, { headers: { origin: 'https://devtools.example' } })).status,
    503,
    'an allowed origin passes',
  )
})

t.test('bearer auth (scope cdp): header or ?token=', async t => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise(r => wss.once('listening', r))
  t.teardown(
    () =>
      new Promise<void>(r => {
        for (const c of wss.clients) c.terminate()
        wss.close(() => r())
      }),
  )
  const upPort = (wss.address() as AddressInfo).port
  wss.on('connection', ws => ws.on('message', (d, b) => ws.send(d, { binary: b })))
  const rec = recorder()
  const tokens = new Map([
    ['good', new Set(['cdp'])],
    ['readonly', new Set(['read'])],
  ])
  const { port, base } = await startProxy(t, {
    upstream: () => `ws://127.0.0.1:${upPort}/devtools/browser/abc`,
    emit: rec.emit,
    auth: { verify: tok => tokens.get(tok) },
  })
  const url = `ws://127.0.0.1:${port}/devtools/browser/abc`
  t.match((await openWs(url).catch((e: Error) => e)) as Error, { message: /401/ })
  t.match((await openWs(url, { authorization: 'Bearer nope' }).catch((e: Error) => e)) as Error, { message: /401/ })
  t.match((await openWs(url, { authorization: 'Bearer readonly' }).catch((e: Error) => e)) as Error, { message: /403/ })
  t.equal(rec.events.length, 0, 'rejected upgrades emit nothing')
  const noAuth = await fetch(base + '/json/version')
  t.equal(noAuth.status, 401)
  t.match(noAuth.headers.get('www-authenticate'), /^Bearer/)
  t.same(await noAuth.json(), {
    code: 'unauthorized',
    message: 'missing bearer token: send "Authorization: Bearer <token>" or ?token=<token>',
  })
  t.equal((await fetch(base + '/json/version', { headers: { authorization: 'Bearer readonly' } })).status, 403)

  const ok = await openWs(url, { authorization: 'Bearer good' })
  ok.close()
  await waitFor(() => rec.disconnects().length === 1, 5000)
  const okQuery = await openWs(url + '?token=good')
  okQuery.close()
  await waitFor(() => rec.disconnects().length === 2, 5000)
  t.same(
    rec.events.map(e => e.type),
    ['cdp_connect', 'cdp_disconnect', 'cdp_connect', 'cdp_disconnect'],
  )
})
