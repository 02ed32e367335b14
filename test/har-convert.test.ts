import t from 'tap'
import harValidator from 'har-validator'
import { toHar } from '../src/har/index.js'
import { validateEvent, type Envelope, type TelemetryEvent } from '../src/events/index.js'

const T0 = 1_700_000_000_000_000 // Unix µs
const ctx = {
  session_id: 'S1',
  target_id: 'T1',
  target_type: 'page' as const,
  frame_id: 'F1',
  loader_id: 'L1',
  nav_seq: 1,
}

let seq = 0
function env(
  type: string,
  data: Record<string, unknown>,
  tsOffsetMs: number,
  extra: Partial<TelemetryEvent> = {},
): Envelope {
  const category = type.startsWith('network') ? 'network' : 'page'
  const event = {
    ts: T0 + tsOffsetMs * 1000,
    type,
    category,
    source: { kind: 'cdp', event: 'x' },
    data,
    ...extra,
  } as TelemetryEvent
  const issues = validateEvent(event)
  if (issues.length) throw new Error(`test event ${type} invalid: ${JSON.stringify(issues)}`)
  return { seq: ++seq, event }
}

function fixture(): Envelope[] {
  seq = 0
  return [
    env(
      'network_request',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/',
        request_id: 'L1',
        method: 'GET',
        document_url: 'http://127.0.0.1:8080/',
        headers: { Accept: 'text/html' },
        resource_type: 'Document',
        initiator_type: 'other',
      },
      0,
    ),
    env(
      'page_navigation',
      {
        url: 'http://127.0.0.1:8080/',
        frame_id: 'F1',
        loader_id: 'L1',
        session_id: 'S1',
        target_id: 'T1',
        target_type: 'page',
      },
      5,
    ),
    env(
      'network_response',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/',
        request_id: 'L1',
        method: 'GET',
        status: 200,
        status_text: 'OK',
        headers: { 'Content-Type': 'text/html', 'Set-Cookie': 'a=1\nb=2', 'Content-Length': '11' },
        mime_type: 'text/html',
        resource_type: 'Document',
        body: '<p>hi</p>\n\n',
      },
      12.5,
    ),
    // A redirect chain: same request id, two hops.
    env(
      'network_request',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/old?x=1&y=%20z',
        request_id: 'R2',
        method: 'GET',
        headers: {},
        resource_type: 'Fetch',
      },
      20,
    ),
    env(
      'network_request',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/new',
        request_id: 'R2',
        method: 'GET',
        headers: {},
        resource_type: 'Fetch',
        is_redirect: true,
        redirect_url: 'http://127.0.0.1:8080/old?x=1&y=%20z',
      },
      23,
    ),
    env('page_dom_content_loaded', { ...ctx, url: 'http://127.0.0.1:8080/', cdp_timestamp: 100.5 }, 30),
    env(
      'network_response',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/new',
        request_id: 'R2',
        method: 'GET',
        status: 200,
        status_text: 'OK',
        headers: { 'content-type': 'application/json' },
        mime_type: 'application/json',
        resource_type: 'Fetch',
        body: '{"a":1}',
      },
      31,
    ),
    // A POST that fails.
    env(
      'network_request',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/api',
        request_id: 'P3',
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        post_data: '{"q":"é"}',
        resource_type: 'XHR',
      },
      40,
    ),
    env(
      'network_loading_failed',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/api',
        request_id: 'P3',
        error_text: 'net::ERR_CONNECTION_REFUSED',
        canceled: false,
        resource_type: 'XHR',
      },
      41,
    ),
    // The same request id in another session is another request.
    env(
      'network_request',
      {
        url: 'http://127.0.0.1:9090/w.js',
        request_id: 'L1',
        method: 'GET',
        headers: {},
        session_id: 'S2',
        target_id: 'T2',
        target_type: 'worker',
      },
      42,
    ),
    env('page_load', { ...ctx, url: 'http://127.0.0.1:8080/', cdp_timestamp: 101 }, 50),
    // A failure whose request was in flight before attach: no url, no request.
    env(
      'network_loading_failed',
      { session_id: 'S1', request_id: 'OLD', error_text: 'net::ERR_ABORTED', canceled: true },
      60,
    ),
    // A truncated body.
    env(
      'network_request',
      { ...ctx, url: 'http://127.0.0.1:8080/big.json', request_id: 'B5', method: 'GET', headers: {} },
      70,
    ),
    env(
      'network_response',
      {
        ...ctx,
        url: 'http://127.0.0.1:8080/big.json',
        request_id: 'B5',
        status: 200,
        status_text: 'OK',
        headers: {},
        mime_type: 'application/json',
        body: '[1,2',
      },
      75,
      { truncated: true },
    ),
    // Unrelated events are ignored.
    env('network_idle', { ...ctx }, 80),
  ]
}

t.test('a window of network events becomes a valid HAR 1.2 log with one entry per request hop', async t => {
  const har = toHar(fixture())
  await t.resolves(harValidator.har(har), 'har-validator accepts it')
  const { entries, pages } = har.log
  t.equal(har.log.version, '1.2')
  t.same(
    entries.map(e => [e.request.method, e.request.url, e.response.status]),
    [
      ['GET', 'http://127.0.0.1:8080/', 200],
      ['GET', 'http://127.0.0.1:8080/old?x=1&y=%20z', 0],
      ['GET', 'http://127.0.0.1:8080/new', 200],
      ['POST', 'http://127.0.0.1:8080/api', 0],
      ['GET', 'http://127.0.0.1:9090/w.js', 0],
      ['GET', 'about:blank', 0],
      ['GET', 'http://127.0.0.1:8080/big.json', 200],
    ],
  )
  const [doc, hop1, hop2, post, worker, old, big] = entries as [(typeof entries)[0], ...typeof entries]
  // document
  t.equal(doc.startedDateTime, new Date(T0 / 1000).toISOString())
  t.equal(doc.time, 12.5)
  t.same(doc.timings, { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: 12.5, receive: 0 })
  t.same(doc.request.headers, [{ name: 'Accept', value: 'text/html' }])
  t.same(doc.response.headers, [
    { name: 'Content-Type', value: 'text/html' },
    { name: 'Set-Cookie', value: 'a=1' },
    { name: 'Set-Cookie', value: 'b=2' },
    { name: 'Content-Length', value: '11' },
  ])
  t.same(doc.response.content, { size: 11, mimeType: 'text/html', text: '<p>hi</p>\n\n' })
  t.equal(doc.pageref, 'page_1')
  t.same(doc._seq, [1, 3])
  t.equal(doc._resourceType, 'document', 'lowercase, as DevTools names resource types')
  // redirect chain
  t.equal(hop1.response.redirectURL, 'http://127.0.0.1:8080/new')
  t.equal(hop1.time, 3)
  t.same(hop1.request.queryString, [
    { name: 'x', value: '1' },
    { name: 'y', value: ' z' },
  ])
  t.match(hop1.comment, /redirect response not captured/)
  t.equal(hop2.response.redirectURL, '')
  t.equal(hop2.time, 8)
  t.equal(hop2.response.content.text, '{"a":1}')
  t.equal(hop2.response.content.size, 7)
  t.equal(hop1._requestId, 'R2')
  t.equal(hop2._requestId, 'R2')
  // failed POST
  t.same(post.request.postData, { mimeType: 'application/json', text: '{"q":"é"}' })
  t.equal(post.request.bodySize, 10)
  t.equal(post.response._error, 'net::ERR_CONNECTION_REFUSED')
  t.equal(post.time, 1)
  // other session, never answered in this window
  t.equal(worker._sessionId, 'S2')
  t.equal(worker.pageref, undefined)
  t.match(worker.comment, /no response captured/)
  t.equal(worker.time, 0)
  // failure without request
  t.equal(old.response._error, 'net::ERR_ABORTED (canceled)')
  t.match(old.comment, /request not captured/)
  // truncated body
  t.equal(big.response.content.comment, 'body truncated at capture')
  t.equal(big.response.content.size, 4)
  // pages
  t.same(pages, [
    {
      startedDateTime: new Date(T0 / 1000 + 5).toISOString(),
      id: 'page_1',
      title: 'http://127.0.0.1:8080/',
      pageTimings: { onContentLoad: 25, onLoad: 45 },
      _targetId: 'T1',
    },
  ])
})

t.test('input order does not matter and a page-less window still validates', async t => {
  const events = fixture()
  const forward = toHar(events)
  const reversed = toHar([...events].reverse())
  t.same(reversed, forward)
  const onlyNetwork = toHar(events.filter(e => e.event.category === 'network'))
  await t.resolves(harValidator.har(onlyNetwork))
  t.same(onlyNetwork.log.pages, [])
  t.equal(onlyNetwork.log.entries.length, 7)
  t.ok(onlyNetwork.log.entries.every(e => e.pageref === undefined))
  const empty = toHar([])
  await t.resolves(harValidator.har(empty))
  t.same(empty.log.entries, [])
})

t.test('a captured 3xx response joins its hop and the next request opens a new entry', async t => {
  seq = 0
  const events = [
    env('network_request', { ...ctx, url: 'http://a.test/1', request_id: 'X', method: 'GET', headers: {} }, 0),
    env(
      'network_response',
      {
        ...ctx,
        url: 'http://a.test/1',
        request_id: 'X',
        status: 302,
        status_text: 'Found',
        headers: { Location: '/2' },
        mime_type: '',
      },
      1,
    ),
    env(
      'network_request',
      {
        ...ctx,
        url: 'http://a.test/2',
        request_id: 'X',
        method: 'GET',
        headers: {},
        is_redirect: true,
        redirect_url: 'http://a.test/1',
      },
      2,
    ),
    env(
      'network_response',
      {
        ...ctx,
        url: 'http://a.test/2',
        request_id: 'X',
        status: 200,
        status_text: 'OK',
        headers: {},
        mime_type: 'text/plain',
      },
      3,
    ),
  ]
  const har = toHar(events)
  await t.resolves(harValidator.har(har))
  t.same(
    har.log.entries.map(e => [e.request.url, e.response.status, e.response.redirectURL, e._seq]),
    [
      ['http://a.test/1', 302, '/2', [1, 2]],
      ['http://a.test/2', 200, '', [3, 4]],
    ],
  )
})

t.test('data: URLs are percent-encoded into URIs: har-validator accepts them, nothing is lost', async t => {
  seq = 0
  const raw = `data:text/javascript,self.say("héllo wörld") // 100% <ok> {a|b} ^\`\\ #one#two 😀`
  const events = [
    env(
      'network_request',
      { ...ctx, url: raw, request_id: 'D1', method: 'GET', headers: {}, resource_type: 'Script' },
      0,
    ),
    env(
      'network_response',
      {
        ...ctx,
        url: raw,
        request_id: 'D1',
        status: 200,
        status_text: 'OK',
        headers: {},
        mime_type: 'text/javascript',
      },
      1,
    ),
    env(
      'network_request',
      { ...ctx, url: 'data:text/plain,already%20encoded%2C%22q%22', request_id: 'D2', method: 'GET', headers: {} },
      2,
    ),
  ]
  const har = toHar(events)
  const [a, b] = har.log.entries
  t.equal(
    a!.request.url,
    'data:text/javascript,self.say(%22h%C3%A9llo%20w%C3%B6rld%22)%20//%20100%25%20%3Cok%3E%20%7Ba%7Cb%7D%20%5E%60%5C%20#one%23two%20%F0%9F%98%80',
  )
  t.equal(decodeURIComponent(a!.request.url.replace('#', '%23')), raw, 'decoding gives the URL back')
  t.equal(b!.request.url, 'data:text/plain,already%20encoded%2C%22q%22', 'an encoded URL stays as it is')
  await t.resolves(harValidator.har(har), 'har-validator accepts the HAR')
  // Before: the raw URL as Chromium reported it.
  const rawHar = structuredClone(har)
  rawHar.log.entries[0]!.request.url = raw
  await t.rejects(harValidator.har(rawHar), 'the raw data: URL is refused (format "uri")')
})
