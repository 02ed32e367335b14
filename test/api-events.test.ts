// Paging GET /browsers/{id}/telemetry/events with the real client (@onkernel/sdk): every event of
// the window exactly once, in order, asc and desc, with and without (sparse) category filters.
import t, { type Test } from 'tap'
import { BROWSER_ID, startApi, type TestApi } from './helpers/api.js'
import type { Category, Envelope } from '../src/events/index.js'
import type { EventInput } from '../src/pipeline/pipeline.js'

const N = 3000
const STEP_US = 10_000 // 10 ms between events: 30 s of data
const BASE_US = Date.parse('2026-03-04T05:00:00Z') * 1000
const NOW_US = BASE_US + 60_000_000 // "now" is 60 s after the first event

/** Mostly connection events; console every 7th; captcha (sparse) every 500th; page every 1000th. */
function eventFor(i: number): EventInput {
  if (i % 500 === 250)
    return { type: 'captcha_solve_result', data: { captcha_type: 'turnstile', status: 'success', duration_ms: i } }
  if (i % 1000 === 999) return { type: 'page_load', data: { cdp_timestamp: i, nav_seq: 1 } }
  if (i % 7 === 0) return { type: 'console_log', data: { level: 'log', text: `line ${i}`, args: [String(i)] } }
  return { type: 'cdp_connect', data: {} }
}

async function seeded(t: Tap): Promise<TestApi> {
  let i = 0
  const api = await startApi(t, {
    pipeOpts: {
      clock: () => BASE_US + i * STEP_US,
      categories: ['console', 'page', 'connection', 'captcha', 'control'],
    },
    deps: { now: () => NOW_US },
  })
  let rejected = 0
  for (i = 0; i < N; i++) if (api.pipeline.emit(eventFor(i)).dropped !== undefined) rejected++
  t.equal(rejected, 0, 'every seed event accepted')
  await api.log.flush()
  t.equal(api.log.lastSeq, N)
  return api
}
type Tap = Test

/** The whole log, read directly from the store. */
async function everything(api: TestApi): Promise<Envelope[]> {
  const page = await api.log.read({ order: 'asc', limit: N + 10, cursor: 1 })
  return page.records.map(r => JSON.parse(r.json) as Envelope)
}

async function collect(api: TestApi, query: Record<string, unknown>): Promise<{ items: Envelope[]; pages: number[] }> {
  const items: Envelope[] = []
  for await (const e of api.client.browsers.telemetry.events(BROWSER_ID, query as never))
    items.push(e as unknown as Envelope)
  // Page sizes of the same walk: the real client stops on an empty page, so none may be empty before the end.
  const pages: number[] = []
  let page = await api.client.browsers.telemetry.events(BROWSER_ID, query as never)
  for (;;) {
    pages.push(page.getPaginatedItems().length)
    if (!page.hasNextPage()) break
    page = await page.getNextPage()
  }
  return { items, pages }
}

const seqs = (list: Envelope[]) => list.map(e => e.seq)
const inCats = (cats: Category[]) => (e: Envelope) => cats.includes(e.event.category)
/** RFC-3339 with microseconds. */
const tsIso = (us: number) =>
  new Date(Math.floor(us / 1000)).toISOString().replace('Z', String(us % 1000).padStart(3, '0') + 'Z')

t.test('real client pages: every event of the window exactly once, in order', async t => {
  t.setTimeout(120_000)
  const api = await seeded(t)
  const all = await everything(api)
  t.equal(all.length, N)

  await t.test('asc, unfiltered, whole window', async t => {
    const { items, pages } = await collect(api, { since: '2m', limit: 100 })
    t.same(seqs(items), seqs(all), 'same seqs, same order, no duplicate, no hole')
    t.same(items, all, 'same envelopes byte for byte (as parsed)')
    t.equal(pages.length, 30)
    t.ok(pages.every(n => n === 100))
  })

  await t.test('asc, default since (5m) and default limit (20)', async t => {
    const { items, pages } = await collect(api, {})
    t.same(seqs(items), seqs(all))
    t.ok(pages.every(n => n === 20))
  })

  const windowStart = BASE_US + 1000 * STEP_US + 5 // just after event 1000
  const windowEnd = BASE_US + 2500 * STEP_US // until is exclusive: event 2500 is out
  const inWindow = (e: Envelope) => e.event.ts >= windowStart && e.event.ts < windowEnd

  await t.test('asc, RFC-3339 window (until exclusive)', async t => {
    const { items } = await collect(api, { since: tsIso(windowStart), until: tsIso(windowEnd), limit: 37 })
    const expected = all.filter(inWindow)
    t.equal(expected[0]!.seq, 1002, 'window starts after event 1000 (seq 1001)')
    t.equal(expected[expected.length - 1]!.seq, 2500)
    t.same(seqs(items), seqs(expected))
  })

  for (const cats of [
    ['captcha'],
    ['page'],
    ['captcha', 'page'],
    ['console'],
    ['console', 'captcha', 'page', 'monitor'],
  ] as Category[][]) {
    await t.test(`asc, category=${cats.join(',')} (compared to the unfiltered read)`, async t => {
      const unfiltered = (await collect(api, { since: '2m', limit: 100 })).items
      const { items, pages } = await collect(api, { since: '2m', limit: 4, category: cats })
      const expected = unfiltered.filter(inCats(cats))
      t.ok(expected.length > 0)
      t.same(seqs(items), seqs(expected))
      t.ok(
        pages.slice(0, -1).every(n => n > 0),
        `no empty page before the end: ${pages.join(',')}`,
      )
    })
  }

  await t.test('desc, unfiltered: newest first, down to the oldest', async t => {
    const { items, pages } = await collect(api, { order: 'desc', limit: 100 })
    t.same(seqs(items), seqs(all).reverse())
    t.equal(pages.length, 30)
  })

  await t.test('desc with until and sparse categories', async t => {
    const cats: Category[] = ['captcha', 'page']
    const { items, pages } = await collect(api, { order: 'desc', until: tsIso(windowEnd), limit: 3, category: cats })
    const expected = all.filter(e => e.event.ts < windowEnd && inCats(cats)(e)).reverse()
    t.same(seqs(items), seqs(expected))
    t.ok(expected.length >= 4, 'several pages')
    t.ok(
      pages.every(n => n > 0),
      `no empty page: ${pages.join(',')}`,
    )
  })

  await t.test('repeated and comma-joined category parameters on the wire, any mix', async t => {
    const get = async (qs: string) => {
      const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/events?since=2m&limit=100&${qs}`)
      t.equal(res.status, 200)
      return seqs(JSON.parse(await res.text()) as Envelope[])
    }
    const expected = all
      .filter(inCats(['captcha', 'page', 'console']))
      .slice(0, 100)
      .map(e => e.seq)
    t.same(await get('category=captcha&category=page&category=console'), expected)
    t.same(await get('category=captcha%2Cpage%2Cconsole'), expected)
    t.same(await get('category=captcha,page&category=console'), expected)
  })

  await t.test('headers on every 200; bare JSON array body with a JSON content type', async t => {
    const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/events?since=2m&limit=2`)
    t.equal(res.headers.get('x-has-more'), 'true')
    t.equal(res.headers.get('x-next-offset'), '3')
    t.match(res.headers.get('content-type'), /^application\/json/)
    const text = await res.text()
    t.equal(
      text,
      `[${(await api.log.read({ order: 'asc', limit: 2, cursor: 1 })).records.map(r => r.json).join(',')}]`,
      'stored JSON served as is',
    )
    const last = await api.get(`/browsers/${BROWSER_ID}/telemetry/events?offset=${N}`)
    t.equal(last.headers.get('x-has-more'), 'false')
    t.equal(last.headers.get('x-next-offset'), '0')
    t.equal(JSON.parse(await last.text()).length, 1)
    const none = await api.get(
      `/browsers/${BROWSER_ID}/telemetry/events?since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:01Z`,
    )
    t.equal(none.status, 200)
    t.equal(await none.text(), '[]')
    t.equal(none.headers.get('x-has-more'), 'false')
    t.equal(none.headers.get('x-next-offset'), '0')
  })

  await t.test('client errors: desc + since -> 400, unknown browser -> 404', async t => {
    await t.rejects(collect(api, { order: 'desc', since: '5m' }), {
      status: 400,
      message: /^400 invalid since: cannot be combined with order=desc/,
    })
    await t.rejects(
      (async () => {
        for await (const _ of api.client.browsers.telemetry.events('nope')) {
          /* */
        }
      })(),
      { status: 404, message: '404 browser "nope" not found' },
    )
  })
})

t.test('an empty store answers an empty list', async t => {
  const api = await startApi(t)
  const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/events`)
  t.equal(res.status, 200)
  t.equal(await res.text(), '[]')
  t.equal(res.headers.get('x-has-more'), 'false')
  t.equal(res.headers.get('x-next-offset'), '0')
  t.same((await collect(api, {})).items, [])
})
