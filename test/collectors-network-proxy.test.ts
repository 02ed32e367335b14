// proxy_error against real Chromium behind a local proxy (a PAC script sends each test host to it or
// to a dead port): a refused tunnel, proxy auth asked for, a proxy that cannot be reached, each as
// proxy_error right after the network_loading_failed it explains; ordinary failures get none.
import t, { type Test } from 'tap'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { startCollecting } from './helpers/collector-harness.js'
import { waitFor } from './helpers/http.js'
import { closedPort } from './helpers/ports.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'

const PAGE = `<!doctype html><title>proxied</title>
<img src="https://refused.test/a.png">
<img src="https://auth.test/b.png">
<img src="http://auth.test/c.png">
<img src="http://dead.test/d.png">
<img src="http://closed.test/e.png">
<img src="https://noscheme.test/f.png">
<img src="https://foo.test/g.png">
<img src="https://hangup.test/h.png">
<img src="http://foo.test/i.png">`

/** A forward proxy: serves the page, refuses tunnels, asks for credentials, hangs up on closed.test. */
async function startProxy(t: Test): Promise<number> {
  const server: Server = createServer((req, res) => {
    const host = new URL(req.url ?? '/', 'http://x').hostname
    if (host === 'page.test') {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(PAGE)
    } else if (host === 'foo.test') {
      res.writeHead(407, { 'proxy-authenticate': 'Foo x', 'content-length': '0' })
      res.end()
    } else if (host === 'auth.test') {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="proxy"', 'content-length': '0' })
      res.end()
    } else {
      req.socket.destroy()
    }
  })
  server.on('connect', (req, socket: Socket) => {
    if (req.url?.startsWith('hangup.test')) return void socket.destroy()
    if (req.url?.startsWith('noscheme.test'))
      return void socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n')
    if (req.url?.startsWith('foo.test'))
      return void socket.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Foo x\r\nContent-Length: 0\r\n\r\n',
      )
    const status = req.url?.startsWith('auth.test') ? '407 Proxy Authentication Required' : '403 Forbidden'
    const extra = status.startsWith('407') ? 'Proxy-Authenticate: Basic realm="proxy"\r\n' : ''
    socket.end(`HTTP/1.1 ${status}\r\n${extra}Content-Length: 0\r\n\r\n`)
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>(r => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  return (server.address() as AddressInfo).port
}

t.test('proxy failures: proxy_error beside network_loading_failed, with code, raw_code and status', async t => {
  const port = await startProxy(t)
  const dead = await closedPort()
  const pac = `function FindProxyForURL(url, host) {
    if (host === 'dead.test') return 'PROXY 127.0.0.1:${dead}';
    return 'PROXY 127.0.0.1:${port}';
  }`
  const h = await startCollecting(t, [createNetworkCollector(), createPageCollector()], {
    extraArgs: [`--proxy-pac-url=data:application/x-ns-proxy-autoconfig;base64,${Buffer.from(pac).toString('base64')}`],
  })
  const page = h.firstPage()
  await h.navigate(page, 'http://page.test/')
  const ctx = page.context()
  const failedUrls = [
    'https://refused.test/a.png',
    'https://auth.test/b.png',
    'http://dead.test/d.png',
    'http://closed.test/e.png',
    'https://noscheme.test/f.png',
    'https://foo.test/g.png',
    'https://hangup.test/h.png',
  ]
  await waitFor(() => h.ofType('network_loading_failed').length === failedUrls.length, 20_000, 'every failure')
  // By URL: the browser may fetch more from page.test (a favicon) whenever it likes.
  const answeredUrls = ['http://page.test/', 'http://auth.test/c.png', 'http://foo.test/i.png']
  await waitFor(
    () => answeredUrls.every(url => h.ofType('network_response', e => e.data.url === url).length === 1),
    20_000,
    'the page and the two 407 answers',
  )
  const byUrl = (url: string) => h.ofType('proxy_error', e => e.data.url === url)
  const expected: [string, string, string, number][] = [
    ['https://refused.test/a.png', 'tunnel_connection_failed', 'net::ERR_TUNNEL_CONNECTION_FAILED', 502],
    // A tunnel answered 407 with a scheme Chromium supports, and no credentials to give: a refused tunnel.
    ['https://auth.test/b.png', 'tunnel_connection_failed', 'net::ERR_TUNNEL_CONNECTION_FAILED', 502],
    ['http://auth.test/c.png', 'proxy_auth_required', '407 Proxy Authentication Required', 407],
    ['http://dead.test/d.png', 'proxy_connection_failed', 'net::ERR_PROXY_CONNECTION_FAILED', 502],
    ['https://noscheme.test/f.png', 'proxy_auth_required', 'net::ERR_PROXY_AUTH_UNSUPPORTED', 407],
    ['https://foo.test/g.png', 'proxy_auth_required', 'net::ERR_PROXY_AUTH_UNSUPPORTED', 407],
    ['http://foo.test/i.png', 'proxy_auth_required', '407 Proxy Authentication Required', 407],
  ]
  await waitFor(() => h.ofType('proxy_error').length === expected.length, 10_000, 'every proxy_error')
  t.same(
    h
      .ofType('proxy_error')
      .map(e => [e.data.url!, e.data.code, e.data.raw_code, e.data.status] as [string, string, string, number])
      .sort((x, y) => x[0].localeCompare(y[0])),
    [...expected].sort((x, y) => x[0].localeCompare(y[0])),
  )
  // One of them whole: the request's context, method and resource type, after the failure it explains.
  const refused = byUrl('https://refused.test/a.png')[0]!
  const failure = h.ofType('network_loading_failed', e => e.data.url === 'https://refused.test/a.png')[0]!
  t.same(refused.data, {
    session_id: ctx.session_id,
    target_id: ctx.target_id,
    target_type: 'page',
    nav_seq: ctx.nav_seq,
    url: 'https://refused.test/a.png',
    frame_id: failure.data.frame_id,
    loader_id: failure.data.loader_id,
    request_id: failure.data.request_id,
    code: 'tunnel_connection_failed',
    raw_code: 'net::ERR_TUNNEL_CONNECTION_FAILED',
    status: 502,
    method: 'GET',
    resource_type: 'Image',
  })
  t.same(refused.source, { kind: 'cdp', event: 'Network.loadingFailed' })
  t.equal(refused.seq, failure.seq + 1, 'right after the network_loading_failed it explains')
  const answered = byUrl('http://auth.test/c.png')[0]!
  const response = h.ofType('network_response', e => e.data.url === 'http://auth.test/c.png')[0]!
  t.equal(answered.data.request_id, response.data.request_id)
  t.equal(answered.seq, response.seq + 1, 'right after the 407 network_response')
  // A connection the proxy hung up on is not a proxy failure Chromium names: no proxy_error.
  t.same(byUrl('http://closed.test/e.png'), [])
  t.same(byUrl('https://hangup.test/h.png'), [])
  t.same(
    h.ofType('network_loading_failed', e => e.data.url === 'http://closed.test/e.png').map(e => e.data.error_text),
    ['net::ERR_EMPTY_RESPONSE'],
  )
  t.equal(h.pipeline.stats.invalid, 0, 'every event valid')
  // What readers get: stored with its category.
  const stored = (await h.stored()).filter(e => e.event.type === 'proxy_error')
  t.same(
    stored.map(e => e.event.category),
    expected.map(() => 'network'),
  )
})
