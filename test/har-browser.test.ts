// HAR from what real Chromium did: network + page collectors through the monitor, then toHar.
import t from 'tap'
import harValidator from 'har-validator'
import { startServer, waitFor } from './helpers/http.js'
import { startCollecting } from './helpers/collector-harness.js'
import { closedPort } from './helpers/ports.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'
import { toHar } from '../src/har/index.js'

t.test('a real page load becomes a valid HAR with exactly one entry per request hop', async t => {
  const deadPort = await closedPort()
  const seen: string[] = []
  const server = await startServer(t)
  server.server.prependListener('request', req => {
    seen.push(`${req.method} ${req.url}`)
  })
  server.route(
    '/',
    `<!doctype html><title>har</title><script>
    Promise.all([
      fetch('/hop1').then((r) => r.json()),
      fetch('/data.json?x=1').then((r) => r.text()),
      fetch('/post', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' }).then((r) => r.text()),
      fetch('http://127.0.0.1:${deadPort}/nothing').catch(() => 'failed'),
    ]).then(() => { document.title = 'done' })
  </script>`,
  )
  server.route('/hop1', (_req, res) => {
    res.writeHead(302, { location: '/hop2' })
    res.end()
  })
  server.route('/hop2', (_req, res) => {
    res.writeHead(301, { location: '/final.json' })
    res.end()
  })
  server.route('/final.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' })
    res.end('{"final":true}')
  })
  server.route('/data.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('[1,2,3]')
  })
  server.route('/post', (_req, res) => {
    res.writeHead(201, { 'content-type': 'text/plain' })
    res.end('created')
  })
  server.route('/favicon.ico', (_req, res) => {
    res.writeHead(204)
    res.end()
  })

  const h = await startCollecting(t, [createNetworkCollector(), createPageCollector()])
  const page = h.firstPage()
  await h.navigate(page, server.url)
  await waitFor(async () => (await h.evaluate(page, 'document.title')) === 'done', 15_000, 'page scripts done')
  // Every request the server saw (and the failed one) has its final event before we export.
  await h.waitEvent('network_loading_failed', e => (e.data.url ?? '').includes(`:${deadPort}/`), 15_000)
  await waitFor(
    () => h.ofType('network_response', e => (e.data.url ?? '').endsWith('/final.json'))[0],
    15_000,
    'final hop response',
  )

  const har = toHar(await h.stored())
  await t.resolves(harValidator.har(har), 'har-validator accepts it')
  const entries = har.log.entries.filter(
    e => e.request.url.startsWith(server.origin) || e.request.url.includes(`:${deadPort}/`),
  )
  const fromServer = entries
    .filter(e => e.request.url.startsWith(server.origin))
    .map(e => `${e.request.method} ${e.request.url.slice(server.origin.length)}`)
  t.same([...fromServer].sort(), [...seen].sort(), 'one entry per request the server received, no more, no less')

  const byPath = (p: string) => entries.filter(e => e.request.url === server.origin + p)
  t.equal(byPath('/').length, 1)
  const [doc] = byPath('/')
  t.equal(doc!.response.status, 200)
  t.match(doc!.response.content.text, /<title>har<\/title>/)
  t.equal(doc!.pageref, 'page_1')
  const [hop1] = byPath('/hop1')
  const [hop2] = byPath('/hop2')
  const [final] = byPath('/final.json')
  t.equal(hop1!.response.redirectURL, server.origin + '/hop2')
  t.equal(hop2!.response.redirectURL, server.origin + '/final.json')
  t.equal(hop1!._requestId, final!._requestId, 'one request id across the chain')
  t.equal(final!.response.status, 200)
  t.equal(final!.response.content.text, '{"final":true}')
  const [data] = byPath('/data.json?x=1')
  t.same(data!.request.queryString, [{ name: 'x', value: '1' }])
  t.equal(data!.response.content.mimeType, 'application/json')
  const [post] = byPath('/post')
  t.same(post!.request.postData, { mimeType: 'text/plain', text: 'hello' })
  t.equal(post!.response.status, 201)
  const failed = entries.filter(e => e.request.url.includes(`:${deadPort}/`))
  t.equal(failed.length, 1)
  t.equal(failed[0]!.response.status, 0)
  t.match(failed[0]!.response._error, /^net::ERR_/)
  for (const e of entries) {
    t.ok(e.time >= 0 && Date.parse(e.startedDateTime) > 0, `${e.request.url} has a start and a duration`)
  }
  t.equal(har.log.pages.length, 1)
  t.equal(har.log.pages[0]!.title, server.url)
  t.ok(har.log.pages[0]!.pageTimings.onLoad >= 0, 'onLoad from page_load')
  t.ok(har.log.pages[0]!.pageTimings.onContentLoad >= 0, 'onContentLoad from page_dom_content_loaded')
})
