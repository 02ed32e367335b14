// Attach mode against a real Chromium: existing tabs, OOPIF + worker target types, nav_seq rules.
import t from 'tap'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { consoleCollector, recordingEmit } from './helpers/monitor.js'
import { Monitor, type TargetSession } from '../src/monitor/index.js'

t.test('attaches to a running Chromium with open tabs; events carry the target context', async t => {
  const server = await startServer(t, {
    '/one': '<title>one</title>one',
    '/two': '<title>two</title>two',
  })
  const browser = await startBrowser(t, { startUrl: `${server.url}one` })
  const opened = await fetch(`${browser.httpUrl}/json/new?${server.url}two`, { method: 'PUT' })
  t.equal(opened.status, 200)
  await waitFor(
    async () => {
      const list = (await (await fetch(`${browser.httpUrl}/json/list`)).json()) as { title: string }[]
      return list.some(x => x.title === 'two') && list.some(x => x.title === 'one')
    },
    10000,
    'both tabs loaded',
  )

  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = consoleCollector()
  const monitor = new Monitor({ cdpUrl: browser.httpUrl, emit: rec.emit, collectors: [collector] })
  const states: string[] = []
  monitor.events.on('state', s => states.push(s))
  t.teardown(() => monitor.stop())
  await monitor.start()

  t.equal(monitor.state, 'collecting')
  t.same(states, ['collecting'])
  t.equal(monitor.browserWsUrl, browser.wsUrl)
  const pages = monitor
    .targets()
    .filter(x => x.targetType === 'page')
    .sort((a, b) => a.context.url!.localeCompare(b.context.url!))
  t.equal(pages.length, 2)
  t.same(
    pages.map(p => p.context.url),
    [`${server.url}one`, `${server.url}two`],
  )
  for (const p of pages) {
    t.equal(p.context.nav_seq, 1, 'the document loaded before attach is announced from the frame tree: navigation 1')
    t.equal(p.context.session_id, p.sessionId)
    t.equal(p.context.target_id, p.targetId)
    t.equal(p.context.frame_id, p.targetId, 'root frame id is the target id')
    t.type(p.context.loader_id, 'string')
    t.notOk(Object.values(p.context).includes(''), 'no empty-string fields')
  }
  t.equal(collector.attached.filter(s => s.targetType === 'page').length, 2, 'collector attached to each existing tab')
  t.equal(rec.ofType('monitor_reconnected').length, 0, 'startup is not a reconnect')
  t.same(monitor.targetCounts(), { page: 2 })
  t.same(monitor.health(), { state: 'collecting', targets: 2 })

  const two = collector.attached.find(s => s.context().url?.endsWith('/two'))!
  await two.send('Runtime.evaluate', { expression: 'console.log("hello from two")' })
  const log = await waitFor(
    () => rec.ofType('console_log').find(e => (e.data as { text: string }).text === 'hello from two'),
    5000,
    'console_log',
  )
  t.match(log.data, {
    session_id: two.sessionId,
    target_id: two.targetId,
    target_type: 'page',
    url: `${server.url}two`,
    nav_seq: 1,
  })

  // A tab opened after start is auto-attached and resumed (it loads).
  const attached = new Promise(r => monitor.events.on('target-attached', r))
  await fetch(`${browser.httpUrl}/json/new?${server.url}one`, { method: 'PUT' })
  await attached
  await waitFor(() => monitor.targets().filter(x => x.targetType === 'page').length === 3, 5000, 'third tab')
  await waitFor(
    () => monitor.targets().filter(x => x.context.url === `${server.url}one`).length === 2,
    5000,
    'new tab loaded (not left paused)',
  )

  await monitor.stop()
  t.equal(monitor.state, 'stopped')
  t.equal(collector.detached, collector.attached.length, 'every collector detach ran on stop')
  t.same(monitor.targets(), [])
  t.equal(monitor.browserWsUrl, undefined)
})

t.test('OOPIF and dedicated worker get their target_type; nav_seq counts top-level navigations only', async t => {
  const other = await startServer(t, {
    '/frame': '<p>cross-site frame</p><script>console.log("in frame")</script>',
  })
  const server = await startServer(t, {
    '/main': `<iframe id="x" src="http://localhost:${other.port}/frame"></iframe><iframe id="same" src="/same"></iframe>
      <script>window.w = new Worker('/worker.js')</script>`,
    '/same': 'same-origin frame',
    '/same2': 'same-origin frame 2',
    '/next': 'next page',
    '/worker.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end('setInterval(() => console.log("tick from worker"), 100)')
    },
  })
  const browser = await startBrowser(t)
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = consoleCollector()
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: rec.emit, collectors: [collector] })
  t.teardown(() => monitor.stop())
  await monitor.start()

  const page = collector.attached.find(s => s.targetType === 'page')!
  t.ok(page, 'the start tab is attached')
  t.equal(page.context().nav_seq, 0)
  await page.send('Page.navigate', { url: `${server.url}main` })
  const frame = (await waitFor(
    () => collector.attached.find(s => s.targetType === 'iframe'),
    10000,
    'iframe target',
  )) as TargetSession
  const worker = (await waitFor(
    () => collector.attached.find(s => s.targetType === 'worker'),
    10000,
    'worker target',
  )) as TargetSession
  await waitFor(() => page.context().url === `${server.url}main`, 5000, 'main url')
  t.equal(page.context().nav_seq, 1, 'one top-level navigation')

  await waitFor(() => frame.context().url === `http://localhost:${other.port}/frame`, 5000, 'frame url')
  t.match(frame.context(), {
    target_type: 'iframe',
    target_id: frame.targetId,
    frame_id: frame.targetId,
    session_id: frame.sessionId,
  })
  t.equal(frame.context().nav_seq, 1, 'an OOPIF carries the nav_seq of the page that owns it')
  const frameLog = await waitFor(
    () => rec.ofType('console_log').find(e => (e.data as { text: string }).text === 'in frame'),
    10000,
    'frame console',
  )
  t.match(frameLog.data, { target_type: 'iframe', session_id: frame.sessionId, nav_seq: 1 })
  const workerLog = await waitFor(
    () => rec.ofType('console_log').find(e => (e.data as { text: string }).text === 'tick from worker'),
    10000,
    'worker console',
  )
  t.match(workerLog.data, {
    target_type: 'worker',
    session_id: worker.sessionId,
    url: `${server.url}worker.js`,
    nav_seq: 1,
  })
  t.notOk('frame_id' in workerLog.data, 'workers have no frame_id (omitted, not "")')
  t.same(
    monitor
      .targets()
      .map(x => x.targetType)
      .sort(),
    ['iframe', 'page', 'worker'],
  )

  // Sub-frame navigations (same-process and OOPIF) leave nav_seq alone.
  await page.send('Runtime.evaluate', { expression: 'document.getElementById("same").src = "/same2"' })
  await waitFor(
    async () => {
      const r = await page.send('Runtime.evaluate', {
        expression: 'document.getElementById("same").contentDocument?.body?.textContent',
      })
      return r.result.value === 'same-origin frame 2'
    },
    5000,
    'subframe navigated',
  )
  t.equal(page.context().nav_seq, 1, 'sub-frame navigation does not increment nav_seq')

  // A top-level navigation increments it; the iframe and worker targets go away cleanly.
  await page.send('Page.navigate', { url: `${server.url}next` })
  await waitFor(() => page.context().url === `${server.url}next`, 5000, 'next url')
  t.equal(page.context().nav_seq, 2)
  await waitFor(() => monitor.targets().length === 1, 5000, 'children detached')
  t.ok(frame.signal.aborted && worker.signal.aborted, 'child sessions aborted')
  await t.rejects(frame.send('Runtime.evaluate', { expression: '1' }), /detached/)
})

t.test('a crashed renderer: collectors detach, then attach afresh on the surviving session', async t => {
  const server = await startServer(t, { '/c': '<title>c</title>c' })
  const browser = await startBrowser(t, { startUrl: `${server.url}c` })
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = consoleCollector()
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: rec.emit, collectors: [collector] })
  const crashed: string[] = []
  const detachedIds: string[] = []
  monitor.events.on('target-detached', (i: { sessionId: string }) => detachedIds.push(i.sessionId))
  t.teardown(() => monitor.stop())
  await monitor.start()
  const page = collector.attached.find(s => s.targetType === 'page')!
  await waitFor(() => page.context().url === `${server.url}c`, 5000, 'loaded')
  page.on('Inspector.targetCrashed', () => crashed.push(page.sessionId))
  // chrome://crash kills the renderer reliably (Page.crash is sometimes ignored right after a load).
  void page.send('Page.navigate', { url: 'chrome://crash' }).catch(() => undefined)
  await waitFor(() => page.signal.aborted, 20000, 'crashed target state torn down')
  t.same(crashed, [page.sessionId], 'collectors heard the crash before their detach ran')
  t.same(detachedIds, [page.sessionId])
  t.equal(collector.detached, 1)
  const fresh = (await waitFor(
    () => collector.attached.find(s => s.targetId === page.targetId && s !== page),
    10000,
    'fresh state',
  )) as TargetSession
  t.equal(fresh.sessionId, page.sessionId, 'same CDP session')
  t.equal(fresh.context().nav_seq, 0, 'fresh per-target state')
  // Not Page.reload: the crashing navigation may have become the current entry.
  await fresh.send('Page.navigate', { url: `${server.url}c` })
  await waitFor(() => fresh.context().url === `${server.url}c` && fresh.context().nav_seq! >= 1, 15000, 'loaded again')
  t.equal(fresh.context().nav_seq, 1, 'one top-level navigation since the fresh state')
  await fresh.send('Runtime.evaluate', { expression: 'console.log("alive again")' })
  const log = await waitFor(
    () => rec.ofType('console_log').find(e => (e.data as { text: string }).text === 'alive again'),
    5000,
    'events after crash',
  )
  t.match(log.data, { session_id: page.sessionId, nav_seq: 1 })
  t.equal(monitor.debugCounts().sessions, 1)
})

t.test('a service worker and a shared worker are attached with their target_type', async t => {
  const js = (body: string) => (_req: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/javascript' })
    res.end(body)
  }
  const server = await startServer(t, {
    '/sw-page': `<script>navigator.serviceWorker.register('/sw.js'); window.sw = new SharedWorker('/shared.js')</script>`,
    '/sw.js': js(
      'self.addEventListener("install", () => self.skipWaiting()); setInterval(() => console.log("tick from sw"), 100)',
    ),
    '/shared.js': js('onconnect = () => {}; setInterval(() => console.log("tick from shared"), 100)'),
  })
  const browser = await startBrowser(t)
  const { pipeline } = await openStore(t)
  const collector = consoleCollector()
  const rec = recordingEmit(pipeline)
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: rec.emit, collectors: [collector] })
  t.teardown(() => monitor.stop())
  await monitor.start()
  const page = collector.attached.find(s => s.targetType === 'page')!
  await page.send('Page.navigate', { url: `${server.url}sw-page` })
  // Shared and service workers serve several pages: their output carries no nav_seq (absent, not 0).
  for (const [text, type] of [
    ['tick from sw', 'service_worker'],
    ['tick from shared', 'shared_worker'],
  ] as const) {
    const log = await waitFor(
      () => rec.ofType('console_log').find(e => (e.data as { text: string }).text === text),
      10000,
      text,
    )
    t.match(log.data, { target_type: type })
    t.notOk('nav_seq' in (log.data as object), `${type}: no nav_seq`)
  }
  const sw = await waitFor(
    () => monitor.targets().find(x => x.targetType === 'service_worker'),
    10000,
    'service worker',
  )
  const shared = await waitFor(
    () => monitor.targets().find(x => x.targetType === 'shared_worker'),
    10000,
    'shared worker',
  )
  t.equal(sw.context.url, `${server.url}sw.js`)
  t.equal(shared.context.url, `${server.url}shared.js`)
  t.equal(monitor.targets().filter(x => x.targetId === sw.targetId).length, 1, 'one session per target (no duplicates)')
})
