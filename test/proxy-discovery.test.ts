// Pure rewriting of DevTools discovery answers and the upgrade path table.
import t from 'tap'
import { rewriteDiscovery, upstreamPathFor, saneHost, httpBaseOf } from '../src/proxy/discovery.js'
import { proxyAuthRequired } from '../src/proxy/cdp-proxy.js'

t.test('rewriteDiscovery points every WebSocket URL at the proxy', async t => {
  const list = [
    {
      id: 'P1',
      type: 'page',
      url: 'http://127.0.0.1:9333/json',
      webSocketDebuggerUrl: 'ws://127.0.0.1:9333/devtools/page/P1',
      devtoolsFrontendUrl: '/devtools/inspector.html?ws=127.0.0.1:9333/devtools/page/P1',
      devtoolsFrontendUrlCompat: 'https://x/inspector.html?experiments=true&ws=127.0.0.1:9333/devtools/page/P1',
    },
  ]
  t.same(
    rewriteDiscovery(list, 'proxy.local:9222'),
    [
      {
        id: 'P1',
        type: 'page',
        url: 'http://127.0.0.1:9333/json',
        webSocketDebuggerUrl: 'ws://proxy.local:9222/devtools/page/P1',
        devtoolsFrontendUrl: '/devtools/inspector.html?ws=proxy.local:9222/devtools/page/P1',
        devtoolsFrontendUrlCompat: 'https://x/inspector.html?experiments=true&ws=proxy.local:9222/devtools/page/P1',
      },
    ],
    'the page url itself is untouched',
  )
  t.same(
    rewriteDiscovery(
      { Browser: 'Chrome/1', webSocketDebuggerUrl: 'ws://127.0.0.1:9333/devtools/browser/B' },
      '10.0.0.5:9222',
      'tok',
    ),
    { Browser: 'Chrome/1', webSocketDebuggerUrl: 'ws://10.0.0.5:9222/devtools/browser/B?token=tok' },
  )
  t.equal(rewriteDiscovery('x', 'h:1'), 'x')
})

t.test('upstreamPathFor relays browser and page paths 1:1, / to the current browser', async t => {
  const b = 'ws://127.0.0.1:9333/devtools/browser/abc-1'
  t.equal(upstreamPathFor('/', b), b)
  t.equal(upstreamPathFor('/devtools/browser', b), b)
  t.equal(upstreamPathFor('/devtools/browser/zzz', b), 'ws://127.0.0.1:9333/devtools/browser/zzz')
  t.equal(upstreamPathFor('/devtools/page/ABC123', b), 'ws://127.0.0.1:9333/devtools/page/ABC123')
  t.equal(upstreamPathFor('/devtools/page/../../etc', b), undefined)
  t.equal(upstreamPathFor('/json/version', b), undefined)
  t.equal(httpBaseOf(b).toString(), 'http://127.0.0.1:9333/')
  t.equal(saneHost('127.0.0.1:9222'), '127.0.0.1:9222')
  t.equal(saneHost('[::1]:9222'), '[::1]:9222')
  t.equal(saneHost('evil/path'), undefined)
  t.equal(saneHost(undefined), undefined)
})

t.test('proxyAuthRequired: on when asked, always off loopback', async t => {
  t.same(
    ['127.0.0.1', '127.8.0.1', 'localhost', '::1', '[::1]', '0.0.0.0', '::', '10.0.0.5', 'vm.internal'].map(h =>
      proxyAuthRequired(h, false),
    ),
    [false, false, false, false, false, true, true, true, true],
  )
  t.equal(proxyAuthRequired('127.0.0.1', true), true)
})
