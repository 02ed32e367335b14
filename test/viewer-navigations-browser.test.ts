// Navigations as the readers derive them from what real Chromium did: a page that starts a worker
// from a 10 KB data: URL and holds an OOPIF is one navigation (its page's), never one per worker or
// frame; no layout shift is invented where none was reported; titles from URLs are bounded.
import t from 'tap'
import { startServer } from './helpers/http.js'
import { startCollecting } from './helpers/collector-harness.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'
import { createConsoleCollector } from '../collectors/console.js'
import { createVitalsCollector } from '../collectors/vitals.js'
import { buildNavigations, inNavigation } from '../src/viewer/model/navigations.js'
import { toHar } from '../src/har/index.js'

t.test('a data: worker and an OOPIF are not navigations; titles are bounded', async t => {
  const other = await startServer(t, { '/inner': '<script>console.log("from the frame")</script>' })
  const server = await startServer(t)
  // A worker from a data: URL of 10 KB (a comment pads it), as bundlers inline workers.
  const worker = `data:text/javascript,${encodeURIComponent(`console.error("from the worker") /*${'y'.repeat(10_000)}*/`)}`
  server.route(
    '/p',
    `<!doctype html><title>p</title><body><script>
      new Worker(${JSON.stringify(worker)})
      document.body.append(Object.assign(document.createElement('iframe'), { src: 'http://localhost:${other.port}/inner' }))
    </script>`,
  )
  server.route('/favicon.ico', (_req, res) => {
    res.writeHead(204)
    res.end()
  })
  const h = await startCollecting(t, [
    createNetworkCollector(),
    createPageCollector(),
    createConsoleCollector(),
    createVitalsCollector(),
  ])
  const page = h.firstPage()
  await h.navigate(page, `${server.url}p`)
  const fromWorker = await h.waitEvent('console_error', e => e.data.target_type === 'worker')
  await h.waitEvent('console_log', e => e.data.target_type === 'iframe')
  await h.waitEvent('network_idle', e => e.data.target_id === page.targetId && e.data.nav_seq === 1)
  t.equal(fromWorker.data.nav_seq, 1, "the worker's events carry the page's nav_seq (what made it a navigation)")
  const stored = await h.stored()

  const navs = buildNavigations(stored)
  t.same(
    navs.map(n => n.target_id),
    navs.map(() => page.targetId),
    'every navigation is the page target',
  )
  const nav = navs.find(n => n.nav_seq === 1)!
  t.match(nav, { started: true, url: `${server.url}p`, title: `${server.url}p` })
  t.equal(nav.cls, undefined, 'no layout shift reported: no CLS shown')
  // The worker's and the frame's events still show in the page's navigation.
  const envelope = stored.find(e => e.seq === fromWorker.seq)!
  t.equal(inNavigation(envelope, nav), true, "the worker's error is in its page's navigation")
  // The HAR: one page, its title the page's URL.
  t.same(
    toHar(stored).log.pages.map(p => p.title),
    [`${server.url}p`],
  )
})

t.test('a page at a 10 KB data: URL: its navigation and HAR page titles are cut, its URL kept', async t => {
  const h = await startCollecting(t, [createNetworkCollector(), createPageCollector()])
  const page = h.firstPage()
  const url = `data:text/html,<title>d</title><p>${'z'.repeat(10_000)}</p>`
  await h.navigate(page, url)
  await h.waitEvent('network_idle', e => e.data.target_id === page.targetId && e.data.nav_seq === 1)
  const stored = await h.stored()
  const nav = buildNavigations(stored).find(n => n.nav_seq === 1)!
  const encoded = nav.url
  t.equal(encoded, url.slice(0, 8192), 'the URL is kept, to the URL bound (8 KiB)')
  t.equal(nav.title, `${encoded.slice(0, 54)}…`, 'the title: the media type and 40 characters of data')
  t.equal(nav.title.length, 55)
  t.same(
    toHar(stored).log.pages.map(p => p.title),
    [nav.title],
    "the HAR page's title is cut the same way",
  )
})
