// `fleet serve` against the VM's own API on the same events: a real nats-server, the real shipper,
// a second browser in the same stream. Every query is asked of both; bodies and paging headers
// must be identical, page after page, in both orders, and so must the 400s.
import t, { type Test } from 'tap'
import { waitFor } from './helpers/http.js'
import {
  BROWSER_ID,
  OTHER_BROWSER_ID,
  READ_TOKEN,
  TOKEN,
  WRITE_TOKEN,
  BASE_US,
  STEP_US,
  fleetFixture,
} from './helpers/fleet-serve.js'

type Tap = Test

const N = 3000

interface Answer {
  status: number
  body: string
  hasMore: string | null
  nextOffset: string | null
}

/** token '' sends no Authorization header. */
async function ask(base: string, path: string, token = TOKEN): Promise<Answer> {
  const res = await fetch(base + path, { headers: token ? { authorization: `Bearer ${token}` } : {} })
  return {
    status: res.status,
    body: await res.text(),
    hasMore: res.headers.get('x-has-more'),
    nextOffset: res.headers.get('x-next-offset'),
  }
}

const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString()

t.test('fleet serve answers every read exactly like the VM', async t => {
  t.setTimeout(150_000)
  const fx = await fleetFixture(t, N)
  const vm = fx.api.url
  const fleet = fx.fleet.url
  const events = (id: string, q: string) => `/browsers/${encodeURIComponent(id)}/telemetry/events${q ? '?' + q : ''}`

  /** One query asked of both; identical status, body and headers. Returns the VM's answer. */
  const same = async (t: Tap, q: string, path = events(BROWSER_ID, q)): Promise<Answer> => {
    const a = await ask(vm, path)
    const b = await ask(fleet, path)
    t.same(b, a, `same answer: ${q}`)
    return a
  }

  /** Pages with X-Next-Offset until X-Has-More is not true; every page identical. Returns the seqs read. */
  const pageToEnd = async (t: Tap, q: string, maxPages = 1000): Promise<{ seqs: number[]; pages: number }> => {
    const seqs: number[] = []
    let pages = 0
    let offset: string | undefined
    let identical = 0
    for (; pages < maxPages; pages++) {
      const query = offset ? `${q}&offset=${offset}` : q
      const a = await ask(vm, events(BROWSER_ID, query))
      const b = await ask(fleet, events(BROWSER_ID, query))
      if (JSON.stringify(a) === JSON.stringify(b)) identical++
      else t.same(b, a, `page ${pages} of ${q}`)
      t.equal(a.status, 200)
      const body = JSON.parse(a.body) as { seq: number }[]
      seqs.push(...body.map(e => e.seq))
      if (a.hasMore !== 'true') break
      t.not(body.length, 0, 'never an empty page while more exists')
      offset = a.nextOffset!
    }
    t.equal(identical, pages + 1, `all ${pages + 1} pages of ${q} identical`)
    return { seqs, pages: pages + 1 }
  }

  await t.test('paging to the end, asc and desc, unfiltered', async t => {
    const asc = await pageToEnd(t, 'limit=100')
    t.equal(asc.seqs.length, N, 'every event, asc')
    t.same(
      asc.seqs,
      Array.from({ length: N }, (_, i) => i + 1),
      'in seq order, no hole, no duplicate',
    )
    t.equal(asc.pages, 30)
    const desc = await pageToEnd(t, 'order=desc&limit=100')
    t.same(
      desc.seqs,
      Array.from({ length: N }, (_, i) => N - i),
      'every event, newest first',
    )
    const seven = await pageToEnd(t, 'limit=7&since=36s', 1000)
    t.equal(seven.seqs[0], 401, 'since=36s with now pinned 40 s after the first event starts at event 401 (ts 4.00 s)')
  })

  await t.test('categories: one, several (repeated and comma-joined), sparse, both orders', async t => {
    const captcha = await pageToEnd(t, 'category=captcha&limit=1')
    t.same(captcha.seqs, [251, 751, 1251, 1751, 2251, 2751], 'a sparse category, one per page')
    const sparse = await pageToEnd(t, 'category=captcha&category=page&order=desc&limit=7')
    t.same(
      sparse.seqs,
      [3000, 2751, 2251, 2000, 1751, 1251, 1000, 751, 251],
      'two sparse categories merged newest first',
    )
    const consoleNet = await pageToEnd(t, 'category=console%2Cnetwork&limit=100')
    const expected: number[] = []
    for (let i = 0; i < N; i++)
      if (i % 500 !== 250 && i % 1000 !== 999 && (i % 7 === 0 || i % 3 === 0)) expected.push(i + 1)
    t.same(consoleNet.seqs, expected, 'console and network, comma-joined, every match once')
    const mixed = await pageToEnd(t, 'category=console&category=network,page&order=desc&limit=100')
    t.equal(mixed.seqs.length, expected.length + 3, 'repeated + comma-joined, desc: console, network and page')
    await same(t, 'category=connection&limit=100&order=desc')
    await same(t, 'category=control&limit=100', events(BROWSER_ID, 'category=control&limit=100&since=1h'))
  })

  await t.test('time windows: RFC-3339 and durations (now pinned), until bounding pages', async t => {
    const from = BASE_US + 1000 * STEP_US
    const to = BASE_US + 1234 * STEP_US
    const r = await pageToEnd(t, `since=${iso(from)}&until=${iso(to)}&limit=100`)
    t.same(
      r.seqs,
      Array.from({ length: 234 }, (_, i) => 1001 + i),
      '[since, until) by event ts',
    )
    const d = await pageToEnd(t, 'since=30s&until=20s&limit=100')
    t.same(
      d.seqs,
      Array.from({ length: 1000 }, (_, i) => 1001 + i),
      'durations ago',
    )
    const u = await pageToEnd(t, `order=desc&until=${iso(to)}&limit=100&category=console`)
    t.equal(u.seqs[0], 1233, 'desc ends at until (event 1235): the newest console event before it')
    await same(t, 'since=2026-03-04T05:00:05.5Z&limit=3')
    await same(t, 'since=2026-03-04T06:00:00%2B01:00&limit=3')
    await same(t, 'since=1s&limit=100', events(BROWSER_ID, 'since=1s&limit=100'))
    await same(t, `since=${iso(BASE_US + 10_000 * STEP_US)}`)
    await same(t, 'until=2026-01-01T00:00:00Z&order=desc')
  })

  await t.test('offsets: mid-stream, at the ends, beyond, both orders', async t => {
    for (const q of [
      'offset=1500&limit=7',
      'offset=1500&limit=7&order=desc',
      'offset=1&limit=1',
      'offset=1&limit=1&order=desc',
      'offset=3000&limit=5',
      'offset=3001&limit=5',
      'offset=3001&limit=5&order=desc',
      'offset=0&limit=2',
      'offset=99999&limit=2',
      `offset=${Number.MAX_SAFE_INTEGER}&limit=2`,
      `offset=${Number.MAX_SAFE_INTEGER}&order=desc&limit=2`,
      'offset=1500&limit=7&since=2099-01-01T00:00:00Z',
      `offset=1500&limit=7&until=${iso(BASE_US + 1503 * STEP_US)}`,
    ])
      await same(t, q)
    const max = await ask(fleet, events(BROWSER_ID, `offset=${Number.MAX_SAFE_INTEGER}&limit=2`))
    t.same(max, { status: 200, body: '[]', hasMore: 'false', nextOffset: '0' }, 'MAX_SAFE_INTEGER: an empty last page')
  })

  await t.test('the same 400 error objects for the same bad parameters', async t => {
    for (const q of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'order=desc&since=1m',
      'since=10s&until=1m',
      'category=bogus',
      'category=console,bogus',
      'since=yesterday',
      'until=2026-02-30T00:00:00Z',
      'offset=-1',
      'offset=abc',
      `offset=${Number.MAX_SAFE_INTEGER + 1}`,
      'order=sideways',
    ]) {
      const a = await same(t, q)
      t.equal(a.status, 400, `400 for ${q}`)
      t.equal((JSON.parse(a.body) as { code: string }).code, 'bad_request')
    }
  })

  await t.test('hostile parameters: the same answers as the VM, bounded', async t => {
    const every = 'console,network,page,interaction,control,connection,system,screenshot,captcha,monitor'
    await same(t, `category=${every}&limit=100&offset=2950`)
    await same(t, `category=${Array(500).fill('captcha').join(',')}&limit=2`)
    await same(t, `${Array(200).fill('category=page').join('&')}&order=desc&limit=2`)
    for (const q of [
      `since=${'9'.repeat(2000)}`,
      'offset=1e3',
      'limit=1e2',
      'offset=1500.0',
      'order=DESC',
      'since=5x',
    ]) {
      const a = await same(t, q)
      t.equal(a.status, 400, `400 for ${q.slice(0, 40)}`)
    }
    await same(t, 'unknown=1&limit=2&offset=5')
  })

  await t.test('the other browser is served from the same stream, filtered', async t => {
    const r = await ask(fleet, events(OTHER_BROWSER_ID, 'limit=100&since=1h'))
    t.equal(r.status, 200)
    const body = JSON.parse(r.body) as { seq: number }[]
    t.same(
      body.map(e => e.seq),
      Array.from({ length: 100 }, (_, i) => i + 1),
      "the other browser's own seqs, none of the VM's",
    )
    t.equal(r.hasMore, 'true')
    t.equal(r.nextOffset, '101')
  })

  await t.test('unknown browser 404, bad ids 400, no token 401, wrong scope 403', async t => {
    const unknown = await ask(fleet, events('nope', 'limit=1'))
    t.same(
      { status: unknown.status, body: JSON.parse(unknown.body) },
      { status: 404, body: { code: 'not_found', message: 'browser "nope" not found' } },
    )
    t.same(unknown, await ask(vm, events('nope', 'limit=1')), 'as the VM answers an id it does not serve')
    const stream404 = await ask(fleet, '/browsers/nope/telemetry/stream')
    t.equal(stream404.status, 404)
    for (const [id, why] of [
      ['x'.repeat(129), '129 characters'],
      ['a b', 'a space'],
      ['vm~1', 'a tilde'],
      ['é', 'non-ASCII'],
    ] as const) {
      const r = await ask(fleet, events(id, 'limit=1'))
      t.equal(r.status, 400, `400 for an id with ${why}`)
      t.same(JSON.parse(r.body), {
        code: 'bad_request',
        message: 'invalid id: a browser id is 1-128 characters of letters, digits, ".", "_", "-"',
        details: [
          { code: 'invalid_input', message: 'id: a browser id is 1-128 characters of letters, digits, ".", "_", "-"' },
        ],
      })
    }
    const huge = await ask(fleet, events('x'.repeat(100_000), 'limit=1'))
    t.ok(huge.status === 400 || huge.status === 414 || huge.status === 431, `a 100 kB id is refused (${huge.status})`)
    t.equal((await ask(fleet, events('x'.repeat(128), 'limit=1'))).status, 404, '128 characters: a valid id, unknown')

    const noToken = await ask(fleet, events(BROWSER_ID, 'limit=1'), '')
    t.equal(noToken.status, 401)
    t.same(noToken, await ask(vm, events(BROWSER_ID, 'limit=1'), ''), '401 as the VM answers it')
    t.equal((await ask(fleet, events(BROWSER_ID, 'limit=1'), 'wrong')).status, 401)
    const wrongScope = await ask(fleet, events(BROWSER_ID, 'limit=1'), WRITE_TOKEN)
    t.equal(wrongScope.status, 403)
    t.same(wrongScope, await ask(vm, events(BROWSER_ID, 'limit=1'), WRITE_TOKEN), '403 as the VM answers it')
    t.equal((await ask(fleet, events(BROWSER_ID, 'limit=1'), READ_TOKEN)).status, 200, 'read scope suffices')
  })

  await t.test('two fleet serve processes side by side give the same pages', async t => {
    const second = await fx.startFleet()
    for (const q of ['limit=100', 'order=desc&limit=7&offset=2000', 'category=captcha,page&limit=3']) {
      const a = await ask(fleet, events(BROWSER_ID, q))
      const b = await ask(second.url, events(BROWSER_ID, q))
      t.same(b, a, q)
    }
  })

  await t.test('/healthz and /openapi.json', async t => {
    const h = await fetch(fleet + '/healthz')
    t.equal(h.status, 200)
    const body = (await h.json()) as { status: string; nats: { state: string; stream: string } }
    t.equal(body.status, 'ok')
    t.equal(body.nats.state, 'connected')
    t.equal(body.nats.stream, 'BT')
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } }
    const doc = (await (await fetch(fleet + '/openapi.json', auth)).json()) as { paths: Record<string, unknown> }
    t.same(Object.keys(doc.paths).sort(), [
      '/browsers/{id}/telemetry/events',
      '/browsers/{id}/telemetry/stream',
      '/healthz',
      '/openapi.json',
    ])
    const vmDoc = (await (await fetch(vm + '/openapi.json', auth)).json()) as { paths: Record<string, unknown> }
    t.same(
      doc.paths['/browsers/{id}/telemetry/events'],
      vmDoc.paths['/browsers/{id}/telemetry/events'],
      'the events operation is documented exactly as the VM documents it',
    )
  })

  await t.test('the next page continues where the last one ended: kept reader, hint, search', async t => {
    const stats = fx.fleet.source.stats
    const first = await same(t, 'limit=100&offset=1000')
    t.equal(first.nextOffset, '1100')
    let before = { ...stats }
    const second = await same(t, 'limit=100&offset=1100')
    t.equal(second.nextOffset, '1200')
    t.equal(stats.keptReaders - before.keptReaders, 1, 'the reader of the page before continued')
    t.equal(stats.consumers - before.consumers, 0, 'no new consumer')
    t.equal(stats.gets - before.gets, 1, 'one probe (the browser exists), no seek')

    // Another filter at the same cursor has no reader kept: the hint gives its position in one probe.
    before = { ...stats }
    await same(t, 'limit=100&offset=1200&category=console')
    t.equal(stats.hinted - before.hinted, 1)
    t.equal(stats.gets - before.gets, 2, 'the browser, then the hint confirmed; no binary search')
    t.equal(stats.consumers - before.consumers, 1)

    // The record the hint names (seq 1199) is removed from the stream: the hint must not be trusted.
    const reader = fx.fleet.source.browser(BROWSER_ID)
    const at = await reader.seek('seq', 1199, 1, Number.MAX_SAFE_INTEGER)
    const { connect } = await import('@nats-io/transport-node')
    const { jetstreamManager } = await import('@nats-io/jetstream')
    const nc = await connect({ servers: fx.nats.url })
    t.teardown(() => nc.close())
    const jsm = await jetstreamManager(nc)
    const msg = await jsm.streams.getMessage('BT', { seq: at, next_by_subj: 'telemetry.br-test-1.*' } as never)
    t.equal(msg?.header.get('Telemetry-Seq'), '1199')
    t.equal(await jsm.streams.deleteMessage('BT', msg!.seq), true)
    before = { ...stats }
    await same(t, 'limit=100&offset=1200&category=network')
    t.ok(stats.gets - before.gets > 3, `searched instead (${stats.gets - before.gets} probes)`)

    // A kept reader whose consumer the server no longer has: a new one, same answer.
    await same(t, 'limit=100&offset=2000')
    for await (const c of jsm.consumers.list('BT')) await jsm.consumers.delete('BT', c.name)
    before = { ...stats }
    await same(t, 'limit=100&offset=2100')
    t.equal(stats.keptReaders - before.keptReaders, 1, 'the kept reader was tried')
    t.equal(stats.consumers - before.consumers, 1, 'and replaced')
  })

  await t.test('NATS down: 503 error objects, never a 500; back when it returns', async t => {
    await fx.nats.kill('SIGKILL')
    const r = await ask(fleet, events(BROWSER_ID, 'limit=1'))
    t.equal(r.status, 503)
    const body = JSON.parse(r.body) as { code: string; message: string }
    t.equal(body.code, 'unavailable')
    t.match(body.message, /^the fleet stream cannot be read now: /)
    t.equal((await ask(fleet, '/browsers/nope/telemetry/stream')).status, 503, 'the stream route too')
    // The client learns of the lost connection from its socket: /healthz follows within moments.
    const h = await waitFor(
      async () => {
        const r = await fetch(fleet + '/healthz')
        return r.status === 503 ? r : undefined
      },
      10_000,
      '/healthz to report the lost connection',
    )
    t.equal(((await h.json()) as { nats: { state: string } }).nats.state, 'reconnecting')
    await fx.nats.start()
    t.ok(await fx.fleet.source.connected(20_000), 'reconnected')
    await same(t, 'limit=5&offset=10')
  })
})
