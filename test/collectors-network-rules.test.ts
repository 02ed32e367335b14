// Pure parts of the network collector: MIME classification, body cutting, the body-fetch queue, the
// bounded request table and the network_idle rule on a fake clock.
import t from 'tap'
import { FakeTimers } from './helpers/fake-timers.js'
import { BodyFetchQueue, cutBody, cutUtf8, isTextMime, postDataText } from '../collectors/network-body.js'
import { NetworkIdleRule } from '../collectors/network-idle.js'
import { RequestTable } from '../collectors/network-requests.js'
import { Bounds } from '../src/pipeline/bounds.js'

t.test('isTextMime keeps the documented text types and nothing else', async t => {
  for (const m of [
    'application/json',
    'application/json; charset=utf-8',
    'TEXT/HTML',
    'text/plain;charset=UTF-8',
    'text/xml',
    'application/xml',
    'text/csv',
    'application/x-www-form-urlencoded',
    'application/graphql',
    'application/ld+json',
    'application/problem+json',
    'application/atom+xml',
    'application/graphql-response+json',
    'application/xhtml+xml',
    'application/yaml',
    'application/x-yaml',
    'text/yaml',
    'text/x-yaml',
    'application/yaml; charset=utf-8',
    'application/openapi+yaml',
  ])
    t.equal(isTextMime(m), true, m)
  for (const m of [
    'image/png',
    'application/javascript',
    'text/javascript',
    'text/css',
    'application/octet-stream',
    'font/woff2',
    '',
    undefined,
  ]) {
    t.equal(isTextMime(m), false, String(m))
  }
})

t.test('cutBody: under the cap untouched, over it cut on a character boundary with truncated', async t => {
  t.same(cutBody('hello', false, 10), { body: 'hello', truncated: false })
  t.same(cutBody('0123456789', false, 10), { body: '0123456789', truncated: false })
  t.same(cutBody('0123456789a', false, 10), { body: '0123456789', truncated: true })
  // 'é' is 2 bytes: 5 of them are 10 bytes; a cap of 9 keeps 4 (8 bytes), never half a character.
  t.same(cutBody('ééééé', false, 10), { body: 'ééééé', truncated: false })
  t.same(cutBody('ééééé', false, 9), { body: 'éééé', truncated: true })
  t.same(cutBody('a😀b', false, 4), { body: 'a', truncated: true })
  t.same(cutBody('a😀b', false, 5), { body: 'a😀', truncated: true })
  const b64 = (s: string) => Buffer.from(s).toString('base64')
  t.same(cutBody(b64('{"a":1}'), true, 100), { body: '{"a":1}', truncated: false })
  t.same(cutBody(b64('x'.repeat(100)), true, 10), { body: 'x'.repeat(10), truncated: true })
  t.same(cutBody(b64('ééééé'), true, 9), { body: 'éééé', truncated: true })
  t.same(cutBody(b64('ab'), true, 2), { body: 'ab', truncated: false })
  t.same(cutBody('', true, 2), { body: '', truncated: false })
  const big = JSON.stringify({ data: 'y'.repeat(5 * 1024 * 1024) })
  const cut = cutBody(big, false, 65536)
  t.equal(cut.truncated, true)
  t.equal(Buffer.byteLength(cut.body), 65536)
  t.equal(cut.body, big.slice(0, 65536))
  t.equal(cutUtf8(Buffer.from('abc'), 10), 'abc')
})

t.test("BodyFetchQueue bounds concurrency, cancels overflow and a detached owner's queued jobs", async t => {
  const bounds = new Bounds()
  const q = new BodyFetchQueue(bounds, 2, 2)
  const log: string[] = []
  const releases: (() => void)[] = []
  const job = (name: string, owner: object) => ({
    owner,
    run: () => {
      log.push(`run ${name}`)
      return new Promise<void>(r => releases.push(r))
    },
    cancel: () => log.push(`cancel ${name}`),
  })
  const a = {},
    b = {}
  for (const n of ['1', '2', '3', '4', '5']) q.submit(job(n, n === '4' ? b : a))
  t.same(log, ['run 1', 'run 2', 'cancel 5'])
  t.equal(bounds.evictions.get('body_fetch_dropped'), 1, 'the overflow is counted')
  t.equal(q.running, 2)
  t.equal(q.pending, 2)
  q.cancelOwner(b)
  t.same(log, ['run 1', 'run 2', 'cancel 5', 'cancel 4'])
  releases.shift()!()
  await new Promise(r => setImmediate(r))
  t.same(log.at(-1), 'run 3')
  t.equal(q.running, 2)
  releases.splice(0).forEach(r => r())
  await new Promise(r => setImmediate(r))
  t.equal(q.running, 0)
  t.equal(q.pending, 0)
})

t.test('RequestTable evicts by TTL and size cap, oldest first', async t => {
  let now = 0
  const evicted: string[] = []
  const table = new RequestTable<number>({ ttlMs: 100, maxSize: 3, now: () => now, onEvict: id => evicted.push(id) })
  table.set('a', 1)
  now = 10
  table.set('b', 2)
  now = 20
  table.set('c', 3)
  table.set('b', 22) // update keeps position
  t.equal(table.get('b'), 22)
  table.set('d', 4) // over cap: a goes
  t.same(evicted, ['a'])
  t.equal(table.delete('c'), 3)
  t.equal(table.delete('c'), undefined)
  now = 115 // b (added at 10) is older than 100 ms
  table.set('e', 5)
  t.same(evicted, ['a', 'b'])
  t.equal(table.size, 2)
})

t.test('network_idle: 500 ms after the last request, once per navigation, zero requests too', async t => {
  const timers = new FakeTimers()
  const fired: [number, number][] = []
  const idle = new NetworkIdleRule({ timers, onIdle: n => fired.push([n, timers.now()]) }, 0)
  // No request at all: idle 500 ms after attach.
  timers.advance(499)
  t.same(fired, [])
  timers.advance(1)
  t.same(fired, [[0, 500]])
  // Same navigation: does not fire again.
  idle.start('r0')
  idle.done('r0')
  timers.advance(2000)
  t.same(fired, [[0, 500]])

  // Navigation 1: the document request was in flight before the commit.
  idle.start('doc')
  idle.navigate(1)
  timers.advance(1000)
  t.same(fired.length, 1, 'in flight blocks idle')
  idle.start('img')
  idle.start('doc') // redirect hop of doc reuses its id: still two in flight
  idle.done('doc')
  timers.advance(1000)
  t.equal(fired.length, 1)
  idle.done('img')
  const lastDone = timers.now()
  timers.advance(300)
  idle.start('xhr') // a new request inside the quiet period restarts it
  timers.advance(400)
  idle.done('xhr')
  timers.advance(499)
  t.equal(fired.length, 1)
  timers.advance(1)
  t.same(fired[1], [1, lastDone + 300 + 400 + 500])
  idle.done('never-started') // unknown ids are ignored
  t.equal(idle.inFlight, 0)
})

t.test('network_idle: a timer of an old navigation or a disposed session never fires', async t => {
  const timers = new FakeTimers()
  const fired: number[] = []
  const idle = new NetworkIdleRule({ timers, onIdle: n => fired.push(n) }, 3)
  timers.advance(400)
  idle.navigate(4) // restarts the quiet period for the new navigation
  timers.advance(400)
  t.same(fired, [])
  timers.advance(100)
  t.same(fired, [4])
  idle.navigate(5)
  t.equal(timers.pending, 1)
  idle.dispose()
  t.equal(timers.pending, 0)
  timers.advance(5000)
  idle.start('a')
  idle.done('a')
  idle.navigate(6)
  timers.advance(5000)
  t.same(fired, [4])
  t.equal(timers.pending, 0)
})

t.test('network_idle: a hanging request keeps the page busy', async t => {
  const timers = new FakeTimers()
  const fired: number[] = []
  const idle = new NetworkIdleRule({ timers, onIdle: n => fired.push(n) }, 1)
  idle.start('hang')
  timers.advance(60_000)
  t.same(fired, [])
  t.equal(idle.armed, false)
})

t.test('postDataText: text stays text (capped), binary summarised, multipart per part', async t => {
  const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64')
  t.same(postDataText('a=1&b=2', false, 'application/x-www-form-urlencoded', 100), {
    body: 'a=1&b=2',
    truncated: false,
  })
  t.same(postDataText('x'.repeat(10), false, 'text/plain', 4), { body: 'xxxx', truncated: true })
  t.same(
    postDataText(b64('{"é":1}'), true, 'application/json', 100),
    { body: '{"é":1}', truncated: false },
    'base64 text decoded',
  )
  t.same(postDataText(b64('ééé'), true, 'text/plain', 3), { body: 'é', truncated: true }, 'cut on a character boundary')
  t.same(postDataText(b64(Buffer.from([0, 1, 2, 255])), true, 'application/octet-stream; x=1', 100), {
    body: '[binary application/octet-stream, 4 bytes]',
    truncated: false,
  })
  t.same(postDataText(b64(Buffer.from([0xff, 0xfe])), true, undefined, 100), {
    body: '[binary, 2 bytes]',
    truncated: false,
  })
  const body = Buffer.concat([
    Buffer.from('--XY\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n'),
    Buffer.from(
      '--XY\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n',
    ),
    Buffer.from([0, 1, 2, 255, 254]),
    Buffer.from('\r\n--XY--\r\n'),
  ])
  t.same(
    postDataText(b64(body), true, 'multipart/form-data; boundary=XY', 10_000),
    {
      body:
        '--XY\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n' +
        '--XY\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n[binary, 5 bytes]\r\n' +
        '--XY--\r\n',
      truncated: false,
    },
    'the text part verbatim, the file part summarised with its headers',
  )
  t.same(
    postDataText(b64(body), true, 'multipart/form-data; boundary=XY', 20),
    { body: '--XY\r\nContent-Dispos', truncated: true },
    'capped after summarising',
  )
})
