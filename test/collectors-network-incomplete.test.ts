// Responses whose body never completes keep their status: network_response_incomplete, once, when
// the request ends any way other than loadingFinished (a failure, the main frame navigating to a new
// document, detach, the time bound), on a fake session with fake timers; then the HAR join and the
// session viewer's network rows show it.
import t from 'tap'
import { FakeTimers } from './helpers/fake-timers.js'
import { fakeSession } from './helpers/fake-session.js'
import { createNetworkCollector } from '../collectors/network.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import type { Envelope } from '../src/events/index.js'
import { toHar } from '../src/har/index.js'
import { joinNetwork, netSummary } from '../src/viewer/model/network-rows.js'
import { fakeAccepted } from './helpers/store.js'

function recorder() {
  const events: EventInput[] = []
  const emit = (e: EventInput) => {
    events.push(e)
    return fakeAccepted(e)
  }
  return { events, emit }
}

const request = (id: string, loaderId = 'L1') => ({
  requestId: id,
  loaderId,
  documentURL: 'http://x/',
  frameId: 'T1',
  type: 'Fetch',
  initiator: { type: 'script' },
  request: { url: `http://x/${id}`, method: 'GET', headers: {} },
  timestamp: 1,
  wallTime: 1,
  redirectHasExtraInfo: false,
})
const response = (id: string, status = 200) => ({
  requestId: id,
  loaderId: 'L1',
  frameId: 'T1',
  type: 'Fetch',
  timestamp: 2,
  hasExtraInfo: false,
  response: {
    url: `http://x/${id}`,
    status,
    statusText: 'OK',
    headers: { 'content-type': 'text/event-stream' },
    mimeType: 'text/event-stream',
  },
})

/** What the collector emitted for each request: [type, request_id, status or reason]. */
const summary = (events: EventInput[]) =>
  events.map(e => {
    const d = e.data as { request_id?: string; status?: number; reason?: string }
    return [e.type, d.request_id, d.reason ?? d.status ?? null]
  })

async function attach(timers = new FakeTimers(), opts = {}) {
  const f = fakeSession('page')
  const rec = recorder()
  const detach = await createNetworkCollector({ clock: timers, bodyMaxBytes: 0, ...opts }).attach!(f.session, rec.emit)
  return { f, rec, detach, timers }
}

t.test('a failure after the headers: the headers first, then the failure; no headers, no extra event', async t => {
  const { f, rec } = await attach()
  f.fire('Network.requestWillBeSent', request('a'))
  f.fire('Network.responseReceived', response('a', 206))
  f.fire('Network.loadingFailed', { requestId: 'a', timestamp: 3, type: 'Fetch', errorText: 'net::ERR_ABORTED' })
  f.fire('Network.requestWillBeSent', request('b'))
  f.fire('Network.loadingFailed', { requestId: 'b', timestamp: 3, type: 'Fetch', errorText: 'net::ERR_FAILED' })
  t.same(summary(rec.events), [
    ['network_request', 'a', null],
    ['network_response_incomplete', 'a', 'failed'],
    ['network_loading_failed', 'a', null],
    ['network_request', 'b', null],
    ['network_loading_failed', 'b', null],
  ])
  const inc = rec.events[1]!.data as Record<string, unknown>
  t.match(inc, {
    status: 206,
    status_text: 'OK',
    headers: { 'content-type': 'text/event-stream' },
    mime_type: 'text/event-stream',
    method: 'GET',
    resource_type: 'Fetch',
    url: 'http://x/a',
    loader_id: 'L1',
  })
  t.notOk('body' in inc)
})

t.test('the main frame navigates: the old document’s open bodies end, once; the new document’s do not', async t => {
  const { f, rec } = await attach()
  f.fire('Network.requestWillBeSent', request('old'))
  f.fire('Network.responseReceived', response('old'))
  f.fire('Network.requestWillBeSent', request('waiting')) // no headers yet: nothing to keep
  f.fire('Network.requestWillBeSent', request('doc', 'L2'))
  f.fire('Network.responseReceived', { ...response('doc'), loaderId: 'L2' })
  f.fire('Page.frameNavigated', { frame: { id: 'T1', loaderId: 'L2', url: 'http://x/next' }, type: 'Navigation' })
  f.fire('Page.frameNavigated', { frame: { id: 'F2', parentId: 'T1', loaderId: 'L9', url: 'http://x/if' } })
  // A late report of the old request's end is not a second end.
  f.fire('Network.loadingFailed', { requestId: 'old', timestamp: 4, type: 'Fetch', errorText: 'net::ERR_ABORTED' })
  t.same(
    summary(rec.events).filter(s => s[0] !== 'network_request'),
    [['network_response_incomplete', 'old', 'navigated']],
  )
})

t.test('detach (tab closed, daemon stopping): every open body ends as detached', async t => {
  const { f, rec, detach, timers } = await attach()
  for (const id of ['s1', 's2']) {
    f.fire('Network.requestWillBeSent', request(id))
    f.fire('Network.responseReceived', response(id))
  }
  f.fire('Network.requestWillBeSent', request('done'))
  f.fire('Network.responseReceived', response('done'))
  f.fire('Network.loadingFinished', { requestId: 'done', timestamp: 3, encodedDataLength: 1 })
  detach()
  t.same(
    summary(rec.events).filter(s => s[0] !== 'network_request'),
    [
      ['network_response', 'done', 200],
      ['network_response_incomplete', 's1', 'detached'],
      ['network_response_incomplete', 's2', 'detached'],
    ],
  )
  t.equal(timers.pending, 0, 'no timer left behind')
})

t.test('the time bound: a body still open after the request TTL ends as timeout, by a timer', async t => {
  const timers = new FakeTimers()
  const { f, rec } = await attach(timers, { requestTtlMs: 60_000, idleQuietMs: 1_000_000 })
  f.fire('Network.requestWillBeSent', request('poll'))
  f.fire('Network.responseReceived', response('poll'))
  timers.advance(59_999)
  t.same(summary(rec.events).length, 1, 'not yet')
  timers.advance(1)
  t.same(summary(rec.events), [
    ['network_request', 'poll', null],
    ['network_response_incomplete', 'poll', 'timeout'],
  ])
  // Finished requests leave no timer running.
  f.fire('Network.requestWillBeSent', request('quick'))
  f.fire('Network.responseReceived', response('quick'))
  f.fire('Network.loadingFinished', { requestId: 'quick', timestamp: 3, encodedDataLength: 1 })
  t.equal(timers.pending, 1, 'only the idle rule')
})

t.test('the HAR join gives the entry its status, marked incomplete', async t => {
  const ctx = { session_id: 'S', target_id: 'T', url: 'http://x/s' }
  const headers = { 'content-type': 'text/plain' }
  const env = (seq: number, ts: number, event: Record<string, unknown>) =>
    ({ seq, event: { ts, source: { kind: 'cdp' }, ...event } }) as unknown as Envelope
  const envelopes = [
    env(1, 1_000_000, {
      type: 'network_request',
      category: 'network',
      data: { ...ctx, request_id: 'r1', method: 'GET', headers: {} },
    }),
    env(2, 2_000_000, {
      type: 'network_response_incomplete',
      category: 'network',
      data: {
        ...ctx,
        request_id: 'r1',
        status: 200,
        status_text: 'OK',
        headers,
        mime_type: 'text/plain',
        reason: 'failed',
      },
    }),
    env(3, 2_000_001, {
      type: 'network_loading_failed',
      category: 'network',
      data: { ...ctx, request_id: 'r1', error_text: 'net::ERR_ABORTED', canceled: true },
    }),
    env(4, 3_000_000, {
      type: 'network_request',
      category: 'network',
      data: { ...ctx, request_id: 'r2', method: 'GET', headers: {} },
    }),
    env(5, 4_000_000, {
      type: 'network_response_incomplete',
      category: 'network',
      data: {
        ...ctx,
        request_id: 'r2',
        status: 206,
        status_text: '',
        headers,
        mime_type: 'text/plain',
        reason: 'detached',
      },
    }),
  ]
  const har = toHar(envelopes)
  t.same(
    har.log.entries.map(e => [
      e._requestId,
      e.response.status,
      e.response._incomplete,
      e.response._error ?? null,
      e.time,
      e._seq,
    ]),
    [
      ['r1', 200, 'failed', 'net::ERR_ABORTED (canceled)', 1000.001, [1, 2, 3]],
      ['r2', 206, 'detached', null, 1000, [4, 5]],
    ],
    'one entry per request, with the status that arrived',
  )
  t.equal(har.log.entries[1]!.comment, 'body never completed (detached): status and headers as they arrived')
  t.same(
    joinNetwork(envelopes).map(r => [netSummary(r).status, netSummary(r).mime, netSummary(r).error ?? null]),
    [
      [200, 'text/plain', 'net::ERR_ABORTED'],
      [206, 'text/plain', null],
    ],
    'the session viewer shows the same statuses',
  )
})
