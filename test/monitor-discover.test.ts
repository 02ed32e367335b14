// /json/version discovery (src/monitor/discover.ts) against a local HTTP server: the answer, each
// refusal with its message, and the byte and time bounds on a hostile endpoint.
import t from 'tap'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { fetchBrowserWsUrl, resolveBrowserWsUrl } from '../src/monitor/discover.js'
import { startServer } from './helpers/http.js'
import { closedPort } from './helpers/ports.js'

const WS = 'ws://127.0.0.1:1/devtools/browser/abc'

t.test('answers the webSocketDebuggerUrl of /json/version', async t => {
  const s = await startServer(t, {
    '/json/version': (_q, r) => {
      r.writeHead(200, { 'content-type': 'application/json' })
      r.end(JSON.stringify({ Browser: 'x', webSocketDebuggerUrl: WS }))
    },
  })
  t.equal(await fetchBrowserWsUrl(s.origin), WS)
  t.equal(await fetchBrowserWsUrl(`${s.origin}///`), WS, 'trailing slashes ignored')
  t.equal(await resolveBrowserWsUrl(s.origin), WS)
  t.equal(
    await resolveBrowserWsUrl(`ws://127.0.0.1:${s.port}/devtools/browser/old`),
    WS,
    'a ws URL is refreshed from the same host:port',
  )
})

t.test('refusals say what is wrong', async t => {
  const s = await startServer(t, {
    '/bad/json/version': (_q, r) => {
      r.writeHead(200)
      r.end('not json')
    },
    '/nows/json/version': (_q, r) => {
      r.writeHead(200)
      r.end(JSON.stringify({ webSocketDebuggerUrl: 'http://x' }))
    },
    '/huge/json/version': (_q, r) => {
      r.writeHead(200)
      r.end('x'.repeat(1 << 20))
    },
  })
  await t.rejects(fetchBrowserWsUrl(`${s.origin}/missing`), {
    message: `${s.origin}/missing/json/version answered 404`,
  })
  await t.rejects(fetchBrowserWsUrl(`${s.origin}/bad`), {
    message: `${s.origin}/bad/json/version has no webSocketDebuggerUrl`,
  })
  await t.rejects(fetchBrowserWsUrl(`${s.origin}/nows`), {
    message: `${s.origin}/nows/json/version has no webSocketDebuggerUrl`,
  })
  await t.rejects(fetchBrowserWsUrl(`${s.origin}/huge`), {
    message: `cannot reach ${s.origin}/huge/json/version: answer over 65536 bytes`,
  })
  const ws = `ws://127.0.0.1:${s.port}/devtools/browser/given`
  t.equal(await resolveBrowserWsUrl(ws), ws, 'a ws URL falls back to itself when /json/version fails')
})

t.test('unreachable and silent endpoints', async t => {
  const port = await closedPort()
  await t.rejects(fetchBrowserWsUrl(`http://127.0.0.1:${port}`), {
    message: `cannot reach http://127.0.0.1:${port}/json/version: connect ECONNREFUSED 127.0.0.1:${port}`,
  })

  // Accepts the connection and never answers.
  const silent = createServer(() => undefined)
  await new Promise<void>(r => silent.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>(r => silent.close(() => r())))
  const sp = (silent.address() as AddressInfo).port
  silent.on('connection', sock => t.teardown(() => sock.destroy()))
  await t.rejects(fetchBrowserWsUrl(`http://127.0.0.1:${sp}`, 100), {
    message: `cannot reach http://127.0.0.1:${sp}/json/version: no answer within 100 ms`,
  })
})
