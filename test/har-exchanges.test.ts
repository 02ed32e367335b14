// The one join of network events (src/har/exchanges.ts): redirect hops, orphans, sessions apart, and
// the HAR export and the viewer's network rows built from it agree hop for hop.
import t from 'tap'
import type { Envelope } from '../src/events/index.js'
import { joinExchanges, toHar } from '../src/har/index.js'
import { headerValue } from '../src/util/headers.js'
import { joinNetwork } from '../src/viewer/model.js'

let seq = 0
const ev = (type: string, data: Record<string, unknown>): Envelope =>
  ({
    seq: ++seq,
    event: { ts: 1_700_000_000_000_000 + seq * 1000, type, category: 'network', source: { kind: 'cdp' }, data },
  }) as unknown as Envelope

const req = (id: string, url: string, session = 'S1') =>
  ev('network_request', { session_id: session, request_id: id, method: 'GET', url, headers: {} })
const res = (id: string, url: string, status = 200, session = 'S1') =>
  ev('network_response', { session_id: session, request_id: id, method: 'GET', url, status, headers: {} })
const fail = (id: string, session = 'S1') =>
  ev('network_loading_failed', { session_id: session, request_id: id, error_text: 'net::ERR_FAILED' })

t.test('redirect hops, an orphan response, a failure, the same request id in two sessions', async t => {
  seq = 0
  const events = [
    res('0', 'http://a.test/before-attach'), // 1: orphan (its request was never seen)
    req('1', 'http://a.test/r1'), // 2
    req('1', 'http://a.test/r2'), // 3: a redirect: closes hop r1
    res('1', 'http://a.test/r2', 200), // 4
    req('2', 'http://a.test/x'), // 5
    req('2', 'http://b.test/x', 'S2'), // 6: same id, another session: its own exchange
    fail('2'), // 7
    res('2', 'http://b.test/x', 404, 'S2'), // 8
    res('2', 'http://a.test/x', 200), // 9: after the failure closed S1's hop: an orphan
  ]
  const ex = joinExchanges(events)
  t.same(
    ex.map(e => e.envelopes.map(x => x.seq)),
    [[1], [2], [3, 4], [5, 7], [6, 8], [9]],
    'one exchange per hop, each with its envelopes',
  )
  t.same(ex[1]!.redirectedTo, { ts: events[2]!.event.ts, url: 'http://a.test/r2' }, 'the first hop redirected')
  t.equal(ex[2]!.redirectedTo, undefined)
  t.equal(ex[3]!.failure?.seq, 7)
  t.equal(ex[4]!.response?.event.data.status, 404)

  const har = toHar(events)
  t.same(
    har.log.entries.map(e => e._seq),
    [[1], [2], [3, 4], [5, 7], [6, 8], [9]],
    'HAR: one entry per exchange',
  )
  t.equal(har.log.entries[1]!.response.redirectURL, 'http://a.test/r2')
  const rows = joinNetwork(events)
  t.same(
    rows.map(r => r.envelopes.map(x => x.seq)),
    [[1], [2], [3, 4], [5, 7], [6, 8], [9]],
    'viewer: the same rows',
  )
  t.same(
    rows.map(r => r.seq),
    [1, 2, 3, 5, 6, 9],
    'a row starts at its first envelope',
  )
  t.equal(rows[1]!.redirectedTo, 'http://a.test/r2')
})

t.test('headerValue: any case of the name, undefined when absent', async t => {
  const h = { 'Content-Type': 'text/html', 'X-Two': 'a\nb' }
  t.equal(headerValue(h, 'content-type'), 'text/html')
  t.equal(headerValue(h, 'x-two'), 'a\nb')
  t.equal(headerValue(h, 'content-length'), undefined)
  t.equal(headerValue(undefined, 'content-type'), undefined)
})
