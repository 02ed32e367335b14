// Network and page collectors on a fake TargetSession with fake timers: detach removes everything,
// stale timers never fire, tracking state stays bounded, a stuck body fetch never holds a response.
import t from 'tap'
import { FakeTimers } from './helpers/fake-timers.js'
import { fakeSession } from './helpers/fake-session.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { fakeAccepted } from './helpers/store.js'

function recorder() {
  const events: EventInput[] = []
  const emit = (e: EventInput) => {
    events.push(e)
    return fakeAccepted(e)
  }
  return { events, emit, types: () => events.map(e => e.type) }
}

const request = (id: string, url = `http://x/${id}`) => ({
  requestId: id,
  loaderId: 'L1',
  documentURL: 'http://x/',
  frameId: 'T1',
  type: 'Fetch',
  initiator: { type: 'script' },
  request: { url, method: 'GET', headers: {} },
  timestamp: 1,
  wallTime: 1,
  redirectHasExtraInfo: false,
})
const response = (id: string, mimeType = 'application/json') => ({
  requestId: id,
  loaderId: 'L1',
  frameId: 'T1',
  type: 'Fetch',
  timestamp: 2,
  hasExtraInfo: false,
  response: { url: `http://x/${id}`, status: 200, statusText: '', headers: { 'content-type': mimeType }, mimeType },
})

t.test('detach removes listeners and the idle timer; nothing fires afterwards', async t => {
  const timers = new FakeTimers()
  const f = fakeSession()
  const rec = recorder()
  const detach = await createNetworkCollector({ clock: timers }).attach!(f.session, rec.emit)
  t.same(f.sent, [], "domains are the capture plan's (the monitor enables them)")
  t.equal(timers.pending, 1, 'idle armed at attach (zero requests)')
  t.ok(f.listeners() > 0)
  detach()
  detach() // idempotent
  t.equal(f.listeners(), 0)
  t.equal(timers.pending, 0)
  timers.advance(10_000)
  t.same(rec.events, [])
})

t.test('a timer whose session was aborted (connection replaced) emits nothing', async t => {
  const timers = new FakeTimers()
  const f = fakeSession()
  const rec = recorder()
  await createNetworkCollector({ clock: timers }).attach!(f.session, rec.emit)
  f.abort.abort()
  timers.advance(1000)
  t.same(rec.events, [])
})

t.test('idle: per nav_seq, after the last response, status_text falls back to the reason phrase', async t => {
  const timers = new FakeTimers()
  const f = fakeSession('page', async method =>
    method === 'Network.getResponseBody' ? { body: '{"a":1}', base64Encoded: false } : {},
  )
  const rec = recorder()
  await createNetworkCollector({ clock: timers }).attach!(f.session, rec.emit)
  timers.advance(500)
  t.same(rec.types(), ['network_idle'])
  t.equal((rec.events[0]!.data as { nav_seq?: number }).nav_seq, 0)
  f.fire('Network.requestWillBeSent', request('doc'))
  f.fire('Page.frameNavigated', {
    frame: { id: 'T1', loaderId: 'L2', url: 'http://x/', securityOrigin: '', mimeType: 'text/html' },
    type: 'Navigation',
  })
  timers.advance(1000)
  t.equal(rec.events.filter(e => e.type === 'network_idle').length, 1, 'doc in flight')
  f.fire('Network.responseReceived', response('doc'))
  f.fire('Network.loadingFinished', { requestId: 'doc', timestamp: 3, encodedDataLength: 7 })
  await new Promise(r => setImmediate(r)) // body fetch resolves
  const res = rec.events.find(e => e.type === 'network_response')!
  t.match(res, { data: { status: 200, status_text: 'OK', body: '{"a":1}', mime_type: 'application/json', nav_seq: 1 } })
  timers.advance(499)
  t.equal(rec.events.filter(e => e.type === 'network_idle').length, 1)
  timers.advance(1)
  t.same(
    rec.events.filter(e => e.type === 'network_idle').map(e => e.data.nav_seq),
    [0, 1],
  )
})

t.test(
  'a body fetch that never answers: response emitted without body after the timeout, queue not blocked',
  async t => {
    const timers = new FakeTimers()
    const f = fakeSession('page', method =>
      method === 'Network.getResponseBody' ? new Promise(() => undefined) : Promise.resolve({}),
    )
    const rec = recorder()
    await createNetworkCollector({ clock: timers, bodyTimeoutMs: 2000, bodyConcurrency: 1 }).attach!(
      f.session,
      rec.emit,
    )
    for (const id of ['a', 'b']) {
      f.fire('Network.requestWillBeSent', request(id))
      f.fire('Network.responseReceived', response(id))
      f.fire('Network.loadingFinished', { requestId: id, timestamp: 3, encodedDataLength: 7 })
    }
    t.same(
      rec.events.filter(e => e.type === 'network_response'),
      [],
    )
    const settle = () => new Promise(r => setImmediate(r)) // the timeout's rejection settles in microtasks
    timers.advance(2000)
    await settle()
    t.equal(timers.pending, 1, 'b started once a gave up: its own timeout is running')
    timers.advance(2000)
    await settle()
    const responses = rec.events.filter(e => e.type === 'network_response')
    t.same(
      responses.map(e => [e.data.request_id, 'body' in e.data]),
      [
        ['a', false],
        ['b', false],
      ],
    )
  },
)

t.test('tracking is bounded: size cap and TTL evict requests that never finish', async t => {
  const timers = new FakeTimers()
  const f = fakeSession('worker')
  const rec = recorder()
  await createNetworkCollector({ clock: timers, maxTrackedRequests: 3, requestTtlMs: 1000 }).attach!(
    f.session,
    rec.emit,
  )
  t.same(f.sent, [], "domains are the capture plan's")
  for (let i = 0; i < 10; i++) f.fire('Network.requestWillBeSent', request(`r${i}`))
  // r0 was evicted by the cap: its failure looks like one from before attach.
  f.fire('Network.loadingFailed', {
    requestId: 'r0',
    timestamp: 1,
    type: 'Fetch',
    errorText: 'net::ERR_ABORTED',
    canceled: true,
  })
  const failed = rec.events.find(e => e.type === 'network_loading_failed')!
  t.same(failed.data, {
    session_id: 'S1',
    target_id: 'T1',
    target_type: 'worker',
    request_id: 'r0',
    error_text: 'net::ERR_ABORTED',
    canceled: true,
  })
  f.fire('Network.loadingFailed', {
    requestId: 'r9',
    timestamp: 1,
    type: 'Fetch',
    errorText: 'net::ERR_FAILED',
    canceled: false,
  })
  t.match(rec.events.at(-1), {
    data: { request_id: 'r9', url: 'http://x/r9', resource_type: 'Fetch', frame_id: 'T1', loader_id: 'L1' },
  })
  timers.advance(5000) // r7, r8 expire; the next insert sweeps them
  f.fire('Network.requestWillBeSent', request('late'))
  f.fire('Network.loadingFailed', { requestId: 'r8', timestamp: 1, type: 'Fetch', errorText: 'x', canceled: false })
  t.notOk('url' in rec.events.at(-1)!.data, 'r8 was forgotten by the TTL')
  t.equal(rec.events.filter(e => e.type === 'network_idle').length, 0, 'no idle for workers')
})

t.test("page collector: detach clears the settle timer; an old navigation's timer never fires", async t => {
  const timers = new FakeTimers()
  const f = fakeSession()
  const rec = recorder()
  const nav = (loaderId: string) =>
    f.fire('Page.frameNavigated', {
      frame: { id: 'T1', loaderId, url: 'http://x/', securityOrigin: '', mimeType: 'text/html' },
      type: 'Navigation',
    })
  const detach = await createPageCollector({ clock: timers }).attach!(f.session, rec.emit)
  t.same(f.sent, [], "domains are the capture plan's")
  nav('L1')
  f.fire('Page.domContentEventFired', { timestamp: 10.5 })
  f.fire('Page.loadEventFired', { timestamp: 11.25 })
  timers.advance(500)
  nav('L2') // nav_seq 2: nav 1's timer is gone
  timers.advance(5000)
  t.same(rec.types(), ['page_navigation', 'page_dom_content_loaded', 'page_load', 'page_navigation'])
  t.same(rec.events[2]!.data, { ...f.ctx, nav_seq: 1, cdp_timestamp: 11.25 })
  f.fire('Page.domContentEventFired', { timestamp: 20 })
  f.fire('Page.loadEventFired', { timestamp: 21 })
  t.equal(timers.pending, 1)
  detach()
  t.equal(timers.pending, 0)
  t.equal(f.listeners(), 0)
  timers.advance(5000)
  t.equal(rec.events.filter(e => e.type === 'page_layout_settled').length, 0)
})

t.test('page collector on a worker does nothing', async t => {
  const f = fakeSession('worker')
  const detach = await createPageCollector().attach!(f.session, recorder().emit)
  t.same(f.sent, [])
  t.equal(f.listeners(), 0)
  detach()
})

t.test('with the network category off, no body is fetched', async t => {
  const f = fakeSession('page')
  const rec = recorder()
  await createNetworkCollector({ clock: new FakeTimers(), isEnabled: () => false }).attach!(f.session, rec.emit)
  f.fire('Network.requestWillBeSent', request('a'))
  f.fire('Network.responseReceived', response('a'))
  f.fire('Network.loadingFinished', { requestId: 'a', timestamp: 3, encodedDataLength: 7 })
  t.notOk(f.sent.includes('Network.getResponseBody'))
  t.equal(rec.events.filter(e => e.type === 'network_response').length, 1)
})

t.test('network switched off and on within one navigation: that navigation is reported idle once', async t => {
  const timers = new FakeTimers()
  const f = fakeSession()
  const rec = recorder()
  const collector = createNetworkCollector({ clock: timers })
  const detach = await collector.attach!(f.session, rec.emit)
  timers.advance(600)
  t.same(rec.types(), ['network_idle'])
  detach()
  const detachAgain = await collector.attach!(f.session, rec.emit) // category on again (capture plan)
  timers.advance(600)
  t.same(rec.types(), ['network_idle'], 'nav_seq 0 already reported')
  f.fire('Page.frameNavigated', {
    frame: { id: 'T1', loaderId: 'L2', url: 'http://x/', securityOrigin: '', mimeType: 'text/html' },
    type: 'Navigation',
  })
  timers.advance(600)
  t.same(
    rec.events.map(e => [e.type, (e.data as { nav_seq?: number }).nav_seq]),
    [
      ['network_idle', 0],
      ['network_idle', 1],
    ],
    'the next navigation is',
  )
  detachAgain()
})

t.test('a worker that goes away ends the requests it was answering, under the page; the idle is not held', async t => {
  const timers = new FakeTimers()
  const page = fakeSession()
  const worker = fakeSession('worker', () => Promise.resolve({}), 'W1')
  const rec = recorder()
  const network = createNetworkCollector({ clock: timers })
  await network.attach!(page.session, rec.emit)
  const detachWorker = await network.attach!(worker.session, rec.emit)
  t.equal(timers.pending, 1, 'idle armed at attach')
  // The worker's script, as the page's session starts it; the worker's session answers it.
  const script = {
    ...request('script', 'blob:http://x/w'),
    loaderId: '',
    documentURL: 'blob:http://x/w',
    type: 'Script',
  }
  page.fire('Network.requestWillBeSent', script)
  t.equal(timers.pending, 1, "the worker's script does not hold the page's idle")
  // A fetch of the page that the worker's session answers (the page counts it until its end).
  page.fire('Network.requestWillBeSent', request('held'))
  t.equal(timers.pending, 0, 'a request the page counts: idle waits')
  worker.fire('Network.responseReceived', { ...response('script', 'text/javascript'), loaderId: '' })
  worker.fire('Network.responseReceived', response('held'))
  t.same(rec.types(), ['network_request', 'network_request'], 'no response yet: the bodies never came')
  detachWorker()
  t.same(
    rec.events
      .slice(2)
      .map(e => [
        e.type,
        (e.data as { request_id: string }).request_id,
        (e.data as { session_id: string }).session_id,
        (e.data as { reason?: string }).reason,
      ]),
    [
      ['network_response_incomplete', 'script', 'S1', 'detached'],
      ['network_response_incomplete', 'held', 'S1', 'detached'],
    ],
    "both end with the worker, in the page's session where they started",
  )
  timers.advance(500)
  t.equal(rec.types().at(-1), 'network_idle', 'nothing left that can complete: the page goes idle')
  // A late end from a session that no longer knows the request is not a second end.
  page.fire('Network.loadingFinished', { requestId: 'held', timestamp: 3, encodedDataLength: 1 })
  t.equal(rec.events.length, 5)
})
