// GET /browsers/{id}/telemetry/actions over a stored session: the actions the module derives from
// the same window, paged by start time (ties never split), until bounding the window, the schema
// the OpenAPI document publishes, and bad input answered with the error object.
import t, { type Test } from 'tap'
import { Value } from '@sinclair/typebox/value'
import { deriveActions, type Action } from '../src/actions/index.js'
import type { Envelope } from '../src/events/index.js'
import { pageOf, registerActionRoutes, type ActionRouteDeps } from '../src/api/routes/actions.js'
import { ActionSchema } from '../src/api/schemas.js'
import type { EventInput as PipelineInput } from '../src/pipeline/pipeline.js'
import { BROWSER_ID, startApi, type TestApi } from './helpers/api.js'
import { at, shopSession } from './helpers/agent-session.js'

const PATH = `/browsers/${BROWSER_ID}/telemetry/actions`
const iso = (us: number) =>
  new Date(Math.floor(us / 1000)).toISOString().replace('Z', `${String(us % 1000).padStart(3, '0')}Z`)
const NOW = at(60_000)

/** The shop session stored through the pipeline at its own times; the actions route on the log. */
async function stored(t: Test, deps: Partial<ActionRouteDeps> = {}): Promise<{ api: TestApi; envelopes: Envelope[] }> {
  let clock = at(0)
  const api: TestApi = await startApi(t, {
    pipeOpts: { clock: () => clock },
    deps: {
      now: () => NOW,
      routes: [r => registerActionRoutes(r, { reader: { read: q => api.log.read(q) }, now: () => NOW, ...deps })],
    },
  })
  for (const e of shopSession().envelopes) {
    clock = e.event.ts
    const r = api.pipeline.emit({ type: e.event.type, source: e.event.source, data: e.event.data } as PipelineInput)
    if (r.dropped !== undefined) throw new Error(`${e.event.type} dropped: ${r.dropped}`)
  }
  await api.log.flush()
  const page = await api.log.read({ order: 'asc', cursor: 1, limit: 1000 })
  return { api, envelopes: page.records.map(r => JSON.parse(r.json) as Envelope) }
}

async function getPage(api: TestApi, query: string) {
  const res = await api.get(`${PATH}?${query}`)
  const body = (await res.json()) as unknown
  return { res, body, more: res.headers.get('x-has-more'), next: res.headers.get('x-next-offset') }
}

t.test('pages of the derived actions: exact, in start order, until bounds the window', async t => {
  const { api, envelopes } = await stored(t)
  t.equal(envelopes.length, 36, 'the whole session stored')
  const all = deriveActions(envelopes)
  t.equal(all.length, 10)
  for (const a of all) t.ok(Value.Check(ActionSchema, a), `${a.title}: valid against the published schema`)

  const since = `since=${encodeURIComponent(iso(at(0)))}`
  const p1 = await getPage(api, `${since}&limit=4`)
  t.equal(p1.res.status, 200)
  t.match(p1.res.headers.get('content-type'), /^application\/json/)
  t.same(
    (p1.body as Action[]).map(a => [a.action_id, a.kind, a.title]),
    [
      ['a1', 'setup', 'set up (2 commands)'],
      ['a3', 'setup', 'set up (4 commands)'],
      ['a7', 'navigate', 'go to /checkout?step=1'],
      ['a12', 'click', 'click #buy'],
    ],
  )
  t.same(p1.body, all.slice(0, 4), 'the same actions as derived from the stored window')
  t.same([p1.more, p1.next], ['true', String(at(297))], 'the next page starts at the fill')
  const p2 = await getPage(api, `${since}&limit=4&offset=${p1.next}`)
  t.same(p2.body, all.slice(4, 8))
  t.same([p2.more, p2.next], ['true', String(at(2099))])
  const p3 = await getPage(api, `${since}&limit=4&offset=${p2.next}`)
  t.same(p3.body, all.slice(8))
  t.same([p3.more, p3.next], ['false', '0'])
  const whole = await getPage(api, since)
  t.same(whole.body, all, 'default limit 100: everything on one page')

  // until is exclusive: the fill's first command (answered at 300 ms) is outside.
  const cut = await getPage(api, `${since}&until=${encodeURIComponent(iso(at(300)))}`)
  t.same(
    (cut.body as Action[]).map(a => [a.kind, a.command_seqs]),
    [
      ['setup', [1, 2]],
      ['setup', [3, 4, 5, 11]],
      ['navigate', [7]],
      ['click', [12, 13, 14, 15, 16, 18]],
    ],
  )
  t.equal((cut.body as Action[])[3]!.effects_end_ts, undefined, 'the last effects window runs to the window end')
  // The default window is the last 5 minutes before now (60 s after the session): all of it.
  t.same((await getPage(api, '')).body, all)
  t.same((await getPage(api, `since=${encodeURIComponent(iso(at(3500)))}`)).body, [], 'a window without commands')
})

t.test('bad input: the error object, naming the parameter', async t => {
  const { api } = await stored(t, { maxRecords: 20 })
  const cases: [string, number, string][] = [
    ['limit=0', 400, 'invalid limit: expected an integer from 1 to 1000, got "0"'],
    ['limit=1001', 400, 'invalid limit: expected an integer from 1 to 1000, got "1001"'],
    ['offset=-1', 400, 'invalid offset: expected an integer >= 0, got "-1"'],
    [
      'since=yesterday',
      400,
      'invalid since: expected an RFC-3339 time or a duration like 90s, 5m, 1h30m, got "yesterday"',
    ],
    [
      `since=${encodeURIComponent(iso(at(10)))}&until=${encodeURIComponent(iso(at(5)))}`,
      400,
      'invalid since: is after until',
    ],
    ['since=10m', 400, 'the window holds more than 20 events to derive actions from; narrow since/until'],
  ]
  for (const [q, status, message] of cases) {
    const { res, body } = await getPage(api, q)
    t.equal(res.status, status, q)
    t.equal((body as { message: string }).message, message, q)
    t.equal((body as { code: string }).code, 'bad_request', q)
    t.ok(Array.isArray((body as { details: unknown[] }).details), `${q}: details`)
  }
  const small = await getPage(api, `since=${encodeURIComponent(iso(at(2000)))}`)
  t.equal(small.res.status, 200, 'a narrower window is answered')
  t.same(
    (small.body as Action[]).map(a => a.kind),
    ['screenshot', 'other', 'scroll'],
  )
  const noToken = await api.get(PATH, { headers: { authorization: 'Bearer nope' } })
  t.equal(noToken.status, 401)
  const other = await api.get(`/browsers/someone-else/telemetry/actions`)
  t.equal(other.status, 404)
})

t.test('page cuts never split actions that start in the same microsecond', async t => {
  const mk = (start: number, id: string) => ({ action_id: id, start_ts: start }) as Action
  const list = [mk(1, 'a'), mk(2, 'b'), mk(2, 'c'), mk(2, 'd'), mk(3, 'e'), mk(5, 'f')]
  const ids = (p: { actions: Action[]; next: number }) => [p.actions.map(a => a.action_id).join(''), p.next]
  t.same(ids(pageOf(list, 0, 2)), ['abcd', 3], 'the page grows past the limit to keep the ties together')
  t.same(ids(pageOf(list, 3, 2)), ['ef', 0])
  t.same(ids(pageOf(list, 4, 1)), ['f', 0], 'an offset between starts begins at the next one')
  t.same(ids(pageOf(list, 6, 10)), ['', 0])
  t.same(ids(pageOf(list, 2, 1)), ['bcd', 3])
})
