// Initial domain setup failures, against a fake CDP endpoint (HTTP /json/version + a WebSocket
// speaking just enough protocol), and the backoff rule.
import t, { type Test } from 'tap'
import { WebSocketServer } from 'ws'
import { startServer } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { recordingEmit } from './helpers/monitor.js'
import { backoffDelay, ConnectError, InitStepError, Monitor, targetTypeOf } from '../src/monitor/index.js'

async function fakeCdp(t: Test, reject: string) {
  const server = await startServer(t)
  const wss = new WebSocketServer({ server: server.server })
  const received: string[] = []
  wss.on('connection', ws => {
    ws.on('message', raw => {
      const msg = JSON.parse(String(raw)) as { id: number; method: string }
      received.push(msg.method)
      if (msg.method === reject)
        ws.send(JSON.stringify({ id: msg.id, error: { code: -32000, message: `${reject} is not allowed here` } }))
      else if (msg.method === 'Target.getTargets') ws.send(JSON.stringify({ id: msg.id, result: { targetInfos: [] } }))
      else ws.send(JSON.stringify({ id: msg.id, result: {} }))
    })
  })
  t.teardown(() => {
    for (const c of wss.clients) c.terminate()
    wss.close()
  })
  const wsUrl = `ws://127.0.0.1:${server.port}/devtools/browser/fake`
  server.route('/json/version', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ Browser: 'Fake/1.0', webSocketDebuggerUrl: wsUrl }))
  })
  return { httpUrl: server.origin, wsUrl, received, wss }
}

t.test('Target.setAutoAttach rejected: monitor_init_failed names it, start() rejects, state failed', async t => {
  const fake = await fakeCdp(t, 'Target.setAutoAttach')
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const monitor = new Monitor({ cdpUrl: fake.httpUrl, emit: rec.emit })
  const err = await monitor.start().then(
    () => undefined,
    (e: unknown) => e,
  )
  t.type(err, InitStepError)
  t.equal((err as InitStepError).step, 'Target.setAutoAttach')
  t.match((err as Error).message, /Target\.setAutoAttach failed: Target\.setAutoAttach is not allowed here/)
  t.same(
    rec.inputs.map(e => [e.type, e.data, e.source]),
    [['monitor_init_failed', { step: 'Target.setAutoAttach' }, { kind: 'local_process' }]],
  )
  t.equal(monitor.state, 'failed')
  t.same(fake.received, ['Target.setDiscoverTargets', 'Target.setAutoAttach'])
  t.equal(rec.ofType('monitor_reconnected').length, 0)
  await monitor.stop()
})

t.test('Target.setDiscoverTargets rejected: the step is named', async t => {
  const fake = await fakeCdp(t, 'Target.setDiscoverTargets')
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const monitor = new Monitor({ cdpUrl: fake.wsUrl, emit: rec.emit })
  await t.rejects(monitor.start(), { name: 'InitStepError', step: 'Target.setDiscoverTargets' })
  t.same(
    rec.ofType('monitor_init_failed').map(e => e.data),
    [{ step: 'Target.setDiscoverTargets' }],
  )
})

t.test('nothing listening: start() rejects with a connect error', async t => {
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const server = await startServer(t)
  const port = server.port
  await new Promise<void>(r => {
    server.server.closeAllConnections()
    server.server.close(() => r())
  })
  const monitor = new Monitor({ cdpUrl: `ws://127.0.0.1:${port}/devtools/browser/x`, emit: rec.emit })
  await t.rejects(monitor.start(), ConnectError)
  t.same(
    rec.ofType('monitor_init_failed').map(e => e.data),
    [{ step: 'connect' }],
  )
  t.equal(monitor.state, 'failed')
})

t.test('backoff: initial, doubling, capped', async t => {
  const o = { initialBackoffMs: 250, maxBackoffMs: 2000 }
  t.same(
    [1, 2, 3, 4, 5, 10].map(n => backoffDelay(n, o)),
    [250, 500, 1000, 2000, 2000, 2000],
  )
})

t.test('target_type mapping', async t => {
  t.same(
    [
      'page',
      'iframe',
      'worker',
      'service_worker',
      'shared_worker',
      'background_page',
      'webview',
      'auction_worklet',
      '',
    ].map(targetTypeOf),
    ['page', 'iframe', 'worker', 'service_worker', 'shared_worker', 'background_page', 'other', 'other', 'other'],
  )
})
