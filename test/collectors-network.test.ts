// Network collector against real Chromium through the Monitor: exact request/response/failure data,
// redirects, network_idle timing, hanging requests, OOPIF and worker sessions, big bodies.
import t from 'tap'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { startServer, waitFor, type TestServer } from './helpers/http.js'
import { startCollecting, type Recorded } from './helpers/collector-harness.js'
import { closedPort } from './helpers/ports.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'
import { CAPTURE_CATEGORIES, fixedCapture, type Collector, type TargetSession } from '../src/monitor/index.js'

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)
const PAGE = `<img src="/img.png"><script>
fetch('/api/data', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ q: 1 }) })
</script>`

function json(body: unknown, delayMs = 0) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }, delayMs)
  }
}
function redirect(to: string, status: number) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { location: to })
    res.end()
  }
}
/** A request that never gets an answer (the test server drops the socket on teardown). */
function hang(seen: { count: number }) {
  return (_req: IncomingMessage, _res: ServerResponse) => {
    seen.count++
  }
}
function routes(server: TestServer, hung: { count: number }) {
  server.route('/page', PAGE)
  server.route('/empty', '<p>nothing to load</p>')
  server.route('/img.png', (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' })
    res.end(PNG)
  })
  server.route('/api/data', (req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"ok":true}')
    })
  })
  server.route('/r1', redirect('/r2', 302))
  server.route('/r2', redirect('/final', 301))
  server.route('/final', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('done')
  })
  server.route('/redirects', `<script>setTimeout(() => fetch('/r1'), 50)</script>`)
  server.route('/slow', json({ slow: true }, 300))
  server.route('/slowpage', `<script>fetch('/slow')</script>`)
  server.route('/hang', hang(hung))
  server.route(
    '/hangpage',
    `<script>window.ctrl = new AbortController(); fetch('/hang', { signal: ctrl.signal }).catch(() => 0)</script>`,
  )
  server.route('/big', json({ data: 'x'.repeat(5 * 1024 * 1024) }))
}

t.test('request, response and loading_failed carry exact fields; body only for text types', async t => {
  const server = await startServer(t)
  const hung = { count: 0 }
  routes(server, hung)
  const h = await startCollecting(t, [createNetworkCollector()])
  const page = h.firstPage()
  const ids = { session_id: page.sessionId, target_id: page.targetId, target_type: 'page' as const }

  // The start tab made no request at all and still goes idle.
  const firstIdle = await h.waitEvent('network_idle', e => e.data.target_id === page.targetId)
  t.same(firstIdle.data, page.context(), 'network_idle is context only')
  t.equal(firstIdle.data.nav_seq, 0)
  t.same(firstIdle.source, { kind: 'cdp' })

  await page.send('Page.navigate', { url: `${server.url}page` })
  const apiResponse = await h.waitEvent('network_response', e => e.data.url === `${server.url}api/data`)
  const loaderId = page.context().loader_id!
  t.type(loaderId, 'string')

  const docReq = h.ofType('network_request', e => e.data.url === `${server.url}page`)
  t.equal(docReq.length, 1)
  const { headers: docReqHeaders, ...docReqData } = docReq[0]!.data
  // The document request starts before its navigation commits: context of the previous document (nav_seq 0).
  t.same(docReqData, {
    ...ids,
    nav_seq: 0,
    url: `${server.url}page`,
    frame_id: page.targetId,
    loader_id: loaderId,
    request_id: docReq[0]!.data.request_id,
    method: 'GET',
    document_url: `${server.url}page`,
    resource_type: 'Document',
    initiator_type: 'other',
  })
  t.match(docReqHeaders, { 'Upgrade-Insecure-Requests': '1' })
  t.same(docReq[0]!.source, { kind: 'cdp', event: 'Network.requestWillBeSent' })

  const apiReq = h.ofType('network_request', e => e.data.url === `${server.url}api/data`)[0]!
  const { headers: apiReqHeaders, ...apiReqData } = apiReq.data
  t.same(apiReqData, {
    ...ids,
    nav_seq: 1,
    url: `${server.url}api/data`,
    frame_id: page.targetId,
    loader_id: loaderId,
    request_id: apiReq.data.request_id,
    method: 'POST',
    document_url: `${server.url}page`,
    resource_type: 'Fetch',
    initiator_type: 'script',
    post_data: '{"q":1}',
  })
  t.equal(apiReqHeaders['content-type'], 'application/json')

  const { headers: apiResHeaders, ...apiResData } = apiResponse.data
  t.same(apiResData, {
    ...ids,
    nav_seq: 1,
    url: `${server.url}api/data`,
    frame_id: page.targetId,
    loader_id: loaderId,
    request_id: apiReq.data.request_id,
    method: 'POST',
    status: 200,
    status_text: 'OK',
    mime_type: 'application/json',
    resource_type: 'Fetch',
    body: '{"ok":true}',
  })
  t.equal(apiResHeaders['content-type'], 'application/json')
  t.same(apiResponse.source, { kind: 'cdp', event: 'Network.loadingFinished' })
  t.equal(apiResponse.truncated, undefined)

  const docRes = await h.waitEvent('network_response', e => e.data.url === `${server.url}page`)
  t.equal(docRes.data.body, PAGE, 'HTML body kept')
  t.equal(docRes.data.mime_type, 'text/html')
  t.equal(docRes.data.request_id, docReq[0]!.data.request_id)
  const img = await h.waitEvent('network_response', e => e.data.url === `${server.url}img.png`)
  t.equal(img.data.mime_type, 'image/png')
  t.equal(img.data.resource_type, 'Image')
  t.notOk('body' in img.data, 'no body for a binary type')
  const answered = h
    .ofType('network_response')
    .map(r => [h.ofType('network_request', q => q.data.request_id === r.data.request_id)[0]!.seq, r.seq])
  t.ok(answered.length >= 3 && answered.every(([q, r]) => q! < r!), 'each response after its request')

  // A refused connection and a request the page aborts.
  const port = await closedPort()
  await h.evaluate(page, `fetch('http://127.0.0.1:${port}/nope').catch(() => 0)`)
  const refused = await h.waitEvent('network_loading_failed', e => e.data.url === `http://127.0.0.1:${port}/nope`)
  t.same(refused.data, {
    ...ids,
    nav_seq: 1,
    url: `http://127.0.0.1:${port}/nope`,
    frame_id: page.targetId,
    loader_id: loaderId,
    request_id: refused.data.request_id,
    error_text: 'net::ERR_CONNECTION_REFUSED',
    canceled: false,
    resource_type: 'Fetch',
  })
  t.same(refused.source, { kind: 'cdp', event: 'Network.loadingFailed' })
  await h.evaluate(page, `window.c2 = new AbortController(); fetch('/hang', { signal: c2.signal }).catch(() => 0); 1`)
  await waitFor(() => hung.count === 1, 5000, 'hang request reached the server')
  await h.evaluate(page, 'c2.abort()')
  const aborted = await h.waitEvent('network_loading_failed', e => e.data.url === `${server.url}hang`)
  t.equal(aborted.data.canceled, true)
  t.equal(aborted.data.error_text, 'net::ERR_ABORTED')

  const ids2 = new Set(h.ofType('network_request').map(e => e.data.request_id))
  t.equal(ids2.size, h.ofType('network_request').length, 'request_id unique within the session (no redirects here)')
  t.equal(h.pipeline.stats.invalid, 0)
})

t.test('redirect chain: one id, is_redirect + redirect_url per hop, one response, idle not held back', async t => {
  const server = await startServer(t)
  routes(server, { count: 0 })
  const h = await startCollecting(t, [createNetworkCollector()])
  const page = h.firstPage()
  await page.send('Page.navigate', { url: `${server.url}redirects` })
  const final = await h.waitEvent('network_response', e => e.data.url === `${server.url}final`)
  const chain = h.ofType('network_request', e => e.data.request_id === final.data.request_id)
  t.same(
    chain.map(e => [e.data.url, e.data.is_redirect, e.data.redirect_url]),
    [
      [`${server.url}r1`, undefined, undefined],
      [`${server.url}r2`, true, `${server.url}r1`],
      [`${server.url}final`, true, `${server.url}r2`],
    ],
  )
  t.notOk('is_redirect' in chain[0]!.data || 'redirect_url' in chain[0]!.data, 'absent, not false/""')
  t.equal(h.ofType('network_response', e => e.data.request_id === final.data.request_id).length, 1)
  t.same(
    [final.data.status, final.data.status_text, final.data.body, final.data.mime_type],
    [200, 'OK', 'done', 'text/plain'],
  )
  const nav = page.context().nav_seq
  const idle = await h.waitEvent('network_idle', e => e.data.target_id === page.targetId && e.data.nav_seq === nav)
  // A lower bound (a 500 ms timer, on the loop's millisecond clock): load only makes the idle later.
  // Measured 500-505 ms over 11 fresh-clone suite runs (quiet to load 14), 500-537 over 3 runs of
  // this file at load 5-16.
  t.ok(idle.at - final.at >= 450, `idle ${Math.round(idle.at - final.at)} ms after the last response`)
  t.ok(idle.seq > final.seq)
})

t.test('network_idle waits 500 ms after the last response of the navigation, once', async t => {
  const server = await startServer(t)
  routes(server, { count: 0 })
  const h = await startCollecting(t, [createNetworkCollector()])
  const page = h.firstPage()
  await page.send('Page.navigate', { url: `${server.url}slowpage` })
  const slow = await h.waitEvent('network_response', e => e.data.url === `${server.url}slow`)
  const idle = await h.waitEvent('network_idle', e => e.data.target_id === page.targetId && e.data.nav_seq === 1)
  const lastResponse = Math.max(...h.ofType('network_response', e => e.data.nav_seq === 1).map(e => e.at))
  t.equal(lastResponse, slow.at)
  t.ok(idle.at - lastResponse >= 450, `idle ${Math.round(idle.at - lastResponse)} ms after the last response`)
  // Measured 500-504 ms over 11 fresh-clone suite runs (quiet to load 14) and 500-653 over 3 runs
  // of this file at load 5-16: 7.7x under this bound, which is 10x the 500 ms rule (an idle left to
  // a later event would miss it).
  t.ok(idle.at - lastResponse < 5000, `and not absurdly late (${Math.round(idle.at - lastResponse)} ms)`)
  t.same(idle.data, page.context())
  // A later request in the same navigation does not produce a second idle for it.
  await h.evaluate(page, `fetch('/final').then((r) => r.text())`)
  await h.waitEvent('network_response', e => e.data.url === `${server.url}final`)
  await page.send('Page.navigate', { url: `${server.url}empty` })
  await h.waitEvent('network_idle', e => e.data.target_id === page.targetId && e.data.nav_seq === 2)
  t.equal(h.ofType('network_idle', e => e.data.nav_seq === 1).length, 1)
})

t.test('a hanging request blocks idle (navigation_settled still fires); two tabs are independent', async t => {
  const server = await startServer(t)
  const hung = { count: 0 }
  routes(server, hung)
  const h = await startCollecting(t, [createNetworkCollector(), createPageCollector()])
  const a = h.firstPage()
  await a.send('Page.navigate', { url: `${server.url}hangpage` })
  await waitFor(() => hung.count === 1, 5000, 'hang request reached the server')
  const settledA = await h.waitEvent(
    'page_navigation_settled',
    e => e.data.target_id === a.targetId && e.data.nav_seq === 1,
  )
  const loadA = h.ofType('page_load', e => e.data.target_id === a.targetId && e.data.nav_seq === 1)[0]!
  // A lower bound (the 1 s layout timer): load only makes the settling later. Measured 1,001-1,005
  // ms over 3 runs of this file at load 5-16.
  t.ok(
    settledA.at - loadA.at >= 900,
    `navigation settled ${Math.round(settledA.at - loadA.at)} ms after load: after the 1 s layout period`,
  )

  const b = await h.openTab()
  await b.send('Page.navigate', { url: `${server.url}empty` })
  const idleB = await h.waitEvent(
    'network_idle',
    e => e.data.target_id === b.targetId && e.data.url === `${server.url}empty`,
  )
  t.equal(idleB.data.session_id, b.sessionId)
  await h.waitEvent(
    'page_navigation_settled',
    e => e.data.target_id === b.targetId && e.data.url === `${server.url}empty`,
  )
  t.same(
    h.ofType('network_idle', e => e.data.target_id === a.targetId && e.data.nav_seq === 1),
    [],
    'the hanging tab never went idle',
  )

  // Ending the hang lets tab A go idle 500 ms later.
  await h.evaluate(a, 'ctrl.abort()')
  const failed = await h.waitEvent('network_loading_failed', e => e.data.target_id === a.targetId)
  const idleA = await h.waitEvent('network_idle', e => e.data.target_id === a.targetId && e.data.nav_seq === 1)
  // A lower bound (the same 500 ms timer): load only makes the idle later. Measured 499-501 ms over
  // 11 fresh-clone suite runs (quiet to load 14), 500-529 over 3 runs of this file at load 5-16.
  t.ok(idleA.at - failed.at >= 450, `idle ${Math.round(idleA.at - failed.at)} ms after the abort`)
})

t.test('OOPIF and worker requests carry their own session and context', async t => {
  const other = await startServer(t, {
    '/inner': `<script>fetch('/inner-data')</script>`,
    '/inner-data': json({ inner: 1 }),
  })
  const server = await startServer(t, {
    '/frames': `<iframe src="http://localhost:${other.port}/inner"></iframe><script>new Worker('/worker.js')</script>`,
    '/worker.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end("fetch('/from-worker')")
    },
    '/from-worker': json({ worker: 1 }),
  })
  const h = await startCollecting(t, [createNetworkCollector()])
  const page = h.firstPage()
  await page.send('Page.navigate', { url: `${server.url}frames` })
  const innerRes = await h.waitEvent(
    'network_response',
    e => e.data.url === `http://localhost:${other.port}/inner-data`,
  )
  const frame = h.sessions.find(s => s.targetType === 'iframe')!
  t.ok(frame, 'the cross-origin iframe has its own target')
  const innerReq = h.ofType(
    'network_request',
    e => e.data.request_id === innerRes.data.request_id && e.data.session_id === frame.sessionId,
  )[0]!
  t.match(innerReq.data, {
    session_id: frame.sessionId,
    target_id: frame.targetId,
    target_type: 'iframe',
    frame_id: frame.targetId,
    url: `http://localhost:${other.port}/inner-data`,
    document_url: `http://localhost:${other.port}/inner`,
    resource_type: 'Fetch',
  })
  t.equal(innerReq.data.nav_seq, page.context().nav_seq, "an OOPIF request carries its page's nav_seq")
  t.equal(innerReq.data.nav_seq, 1)
  t.equal(innerRes.data.session_id, frame.sessionId)
  t.equal(innerRes.data.body, '{"inner":1}')

  const workerRes = await h.waitEvent('network_response', e => e.data.url === `${server.url}from-worker`)
  const worker = h.sessions.find(s => s.targetType === 'worker')!
  t.match(workerRes.data, {
    session_id: worker.sessionId,
    target_id: worker.targetId,
    target_type: 'worker',
    body: '{"worker":1}',
    status: 200,
  })
  const workerReq = h.ofType('network_request', e => e.data.url === `${server.url}from-worker`)[0]!
  t.equal(workerReq.data.session_id, worker.sessionId)
  t.equal(workerReq.data.target_type, 'worker')
  t.equal(workerReq.data.nav_seq, 1, "a dedicated worker's request carries its page's nav_seq")
  t.equal(workerRes.data.nav_seq, 1)
  t.equal(
    h.ofType('network_idle', e => e.data.session_id === frame.sessionId || e.data.session_id === worker.sessionId)
      .length,
    0,
    'idle is computed for page targets only',
  )
  t.equal(h.pipeline.stats.invalid, 0)
})

t.test('a 5 MB JSON response: body cut to the cap, event flagged truncated', async t => {
  const server = await startServer(t)
  routes(server, { count: 0 })
  const h = await startCollecting(t, [createNetworkCollector()])
  const page = h.firstPage()
  await page.send('Page.navigate', { url: `${server.url}empty` })
  await h.waitEvent('network_response', e => e.data.url === `${server.url}empty`)
  t.equal(await h.evaluate(page, `fetch('/big').then((r) => r.text()).then((t) => t.length)`), 5 * 1024 * 1024 + 11)
  const big = await h.waitEvent('network_response', e => e.data.url === `${server.url}big`)
  t.equal(big.truncated, true)
  t.equal(Buffer.byteLength(big.data.body!), 65536)
  t.equal(big.data.body, '{"data":"' + 'x'.repeat(65536 - 9))
  const stored = (await h.stored()).find(e => e.seq === big.seq)!
  t.equal(stored.event.truncated, true, 'the stored envelope carries truncated: true')
  t.equal((stored.event.data as { body: string }).body.length, 65536)
  const small = createNetworkCollector({ bodyMaxBytes: 10 })
  t.equal(small.name, 'network', 'the cap is configurable')
})

t.test('body cap 0 (--network-body-max-bytes 0): no body fetched, none inlined, every event still there', async t => {
  const server = await startServer(t)
  routes(server, { count: 0 })
  const jsonBody = JSON.stringify({ items: 'j'.repeat(100 * 1024) })
  server.route('/json-sink', (req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"ok":1}')
    })
  })
  // Every command any collector (or the monitor) sends on a target session, by method.
  const sent: string[] = []
  const spy: Collector = {
    name: 'send-spy',
    attach(s: TargetSession) {
      const send = s.send.bind(s)
      Object.assign(s, {
        send: ((method, params) => {
          sent.push(method)
          return send(method, params)
        }) as TargetSession['send'],
      })
      return () => undefined
    },
  }
  const h = await startCollecting(t, [spy, createNetworkCollector({ bodyMaxBytes: 0 })], {
    capture: fixedCapture(CAPTURE_CATEGORIES, 0),
  })
  const page = h.firstPage()
  // /page: an image and a small inline JSON POST; then a 100 KB POST (hasPostData without postData).
  await page.send('Page.navigate', { url: `${server.url}page` })
  const api = await h.waitEvent('network_response', e => e.data.url === `${server.url}api/data`)
  t.equal(
    await h.evaluate(
      page,
      `fetch('/json-sink', { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(jsonBody)} }).then((r) => r.status)`,
    ),
    200,
  )
  const sink = await h.waitEvent('network_response', e => e.data.url === `${server.url}json-sink`)
  const doc = h.ofType('network_response', e => e.data.url === `${server.url}page`)[0]!
  t.same(
    [doc.data.status, doc.data.mime_type, doc.data.body],
    [200, 'text/html', undefined],
    'the HTML document: response without body',
  )
  t.same(
    [api.data.status, api.data.mime_type, api.data.body, sink.data.body],
    [200, 'application/json', undefined, undefined],
    'JSON responses without body',
  )
  for (const url of [`${server.url}api/data`, `${server.url}json-sink`]) {
    const req = h.ofType('network_request', e => e.data.url === url)
    t.same(
      req.map(e => [e.data.method, e.data.post_data, e.truncated]),
      [['POST', undefined, undefined]],
      `${url}: one request, no post_data`,
    )
  }
  // The image may answer after the fetches under load: wait for it, then count it exactly once.
  await h.waitEvent('network_response', e => e.data.url === `${server.url}img.png`)
  t.equal(h.ofType('network_response', e => e.data.url === `${server.url}img.png`).length, 1, 'the image response too')
  t.same(
    sent.filter(m => m === 'Network.getResponseBody' || m === 'Network.getRequestPostData'),
    [],
    'no body fetched',
  )
  t.ok(sent.length > 0, "the spy sees the session's commands")
  t.equal(h.pipeline.stats.invalid, 0)
})

t.test('a request in flight before attach fails without url, frame, loader and resource type', async t => {
  const server = await startServer(t)
  const hung = { count: 0 }
  routes(server, hung)
  const h = await startCollecting(t, [createNetworkCollector()], {
    startUrl: `${server.url}hangpage`,
    beforeMonitor: async () => {
      await waitFor(() => hung.count === 1, 10000, 'pre-attach request')
    },
  })
  const page = h.firstPage()
  await h.evaluate(page, 'ctrl.abort()')
  const failed: Recorded<'network_loading_failed'> = await h.waitEvent('network_loading_failed')
  const { request_id, ...rest } = failed.data
  t.type(request_id, 'string')
  t.same(
    rest,
    {
      session_id: page.sessionId,
      target_id: page.targetId,
      target_type: 'page',
      nav_seq: 1,
      error_text: 'net::ERR_ABORTED',
      canceled: true,
    },
    'nav_seq 1: the page loaded before attach was announced from its frame tree',
  )
  // ... and the page was not considered busy by a request we never saw start.
  await h.waitEvent('network_idle', e => e.data.target_id === page.targetId)
})

t.test(
  'post_data fetched when Chromium leaves it out: 200 KB form, multipart with a file, 100 KB JSON fetch',
  async t => {
    const received: Record<string, number> = {}
    const sink = (name: string) => (req: IncomingMessage, res: ServerResponse) => {
      let n = 0
      req.on('data', (c: Buffer) => {
        n += c.length
      })
      req.on('end', () => {
        received[name] = n
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end('ok')
      })
    }
    const formValue = 'v'.repeat(200 * 1024)
    const server = await startServer(t, {
      '/forms': `<form id="f" method="POST" action="/form-sink"><input name="big" value="${formValue}"></form>`,
      '/form-sink': sink('form'),
      '/upload': sink('upload'),
      '/json': sink('json'),
    })
    const h = await startCollecting(t, [createNetworkCollector()])
    const page = h.firstPage()
    await page.send('Page.navigate', { url: `${server.url}forms` })
    await h.waitEvent('network_response', e => e.data.url === `${server.url}forms`)
    const jsonBody = JSON.stringify({ items: 'j'.repeat(100 * 1024 - 12) })
    t.equal(Buffer.byteLength(jsonBody), 100 * 1024)
    await h.evaluate(
      page,
      `(async () => {
    await fetch('/json', { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(jsonBody)} })
    const fd = new FormData()
    fd.append('note', 'hello multipart')
    fd.append('file', new Blob([new Uint8Array([0, 1, 2, 255, 254])], { type: 'application/octet-stream' }), 'a.bin')
    await fetch('/upload', { method: 'POST', body: fd })
  })()`,
    )

    const jsonReq = await h.waitEvent('network_request', e => e.data.url === `${server.url}json`)
    t.equal(jsonReq.data.method, 'POST')
    t.equal(jsonReq.truncated, true, '100 KB body cut to the 64 KiB cap')
    t.equal(jsonReq.data.post_data, jsonBody.slice(0, 65536), 'the JSON body up to the cap, byte-exact')

    const upload = await h.waitEvent('network_request', e => e.data.url === `${server.url}upload`)
    const multipart = upload.data.post_data ?? ''
    t.match(
      upload.data.headers['Content-Type'] ?? upload.data.headers['content-type'],
      /^multipart\/form-data; boundary=/,
    )
    t.match(
      multipart,
      /Content-Disposition: form-data; name="note"\r\n\r\nhello multipart\r\n/,
      'the text field as text',
    )
    // eslint-disable-next-line no-control-regex -- raw binary bytes are what must not appear
    t.notMatch(multipart, /[\u0000-\u0008]/, 'no raw binary in post_data')
    t.notOk(upload.truncated)
    const uploadRes = await h.waitEvent('network_response', e => e.data.url === `${server.url}upload`)
    t.ok(upload.seq < uploadRes.seq, 'the request event (waiting for its body) still precedes its response')

    await page.send('Runtime.evaluate', { expression: `document.getElementById('f').submit()` })
    const formReq = await h.waitEvent('network_request', e => e.data.url === `${server.url}form-sink`, 20000)
    t.equal(formReq.data.method, 'POST')
    t.equal(formReq.truncated, true)
    t.equal(formReq.data.post_data, ('big=' + formValue).slice(0, 65536), 'the form body (urlencoded) up to the cap')
    await waitFor(() => received.form !== undefined, 10000, 'form received')
    t.equal(received.form, 4 + formValue.length, 'the page really sent 200 KB')
    t.equal(h.pipeline.stats.invalid, 0)
  },
)

t.test('YAML bodies (application/yaml, application/x-yaml, text/yaml) are captured as text, both ways', async t => {
  const spec = 'openapi: 3.0.0\ninfo:\n  title: Petstore\n  version: 1.0.0\n'
  const server = await startServer(t, {
    '/empty': '<p>yaml</p>',
    '/openapi.yaml': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/yaml' })
      res.end(spec)
    },
    '/config.yml': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-yaml; charset=utf-8' })
      res.end('a: 1\npassword: hunter2\n')
    },
    '/echo': (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', c => chunks.push(c as Buffer))
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/yaml' })
        res.end(Buffer.concat(chunks))
      })
    },
  })
  const h = await startCollecting(t, [createNetworkCollector()])
  const page = h.firstPage()
  await page.send('Page.navigate', { url: `${server.url}empty` })
  await h.waitEvent('network_response', e => e.data.url === `${server.url}empty`)
  const sent = 'kind: Pet\nname: Rex\ntags:\n  - dog\n'
  t.equal(
    await h.evaluate(
      page,
      `Promise.all([fetch('/openapi.yaml').then(r => r.text()), fetch('/config.yml').then(r => r.text()),
        fetch('/echo', { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: ${JSON.stringify(sent)} }).then(r => r.text())]).then(a => a.join('|'))`,
    ),
    `${spec}|a: 1\npassword: hunter2\n|${sent}`,
  )
  const spec$ = await h.waitEvent('network_response', e => e.data.url === `${server.url}openapi.yaml`)
  const config = await h.waitEvent('network_response', e => e.data.url === `${server.url}config.yml`)
  const echo = await h.waitEvent('network_response', e => e.data.url === `${server.url}echo`)
  const post = h.ofType('network_request', e => e.data.url === `${server.url}echo`)[0]!
  t.match(spec$.data, { mime_type: 'application/yaml', body: spec })
  t.match(echo.data, { mime_type: 'text/yaml', body: sent })
  t.equal(post.data.post_data, sent, 'the request body too')
  // Stored as the pipeline masks it: a YAML secret is masked like a JSON one.
  const stored = (await h.stored()).find(e => e.seq === config.seq)!
  t.equal((stored.event.data as { body?: string }).body, 'a: 1\npassword: "[redacted:8]"\n')
})
