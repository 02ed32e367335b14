// Load shedding: every event is kept while the store keeps up; under pressure (the store's backlog
// of bytes not yet committed) the loudest page and category are shed first, a quiet page not at all;
// fixed caps (a page's share of retention, the interaction rate) stay as a last line. Every drop
// consumes its seq (readers, pages and SSE see the gap) and is counted by reason in /metrics;
// skipped seqs survive a restart and long gaps.
import t from 'tap'
import { pino } from 'pino'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import {
  LoadShedder,
  INTERACTION_BUDGET,
  QUIET_EVENTS_PER_SEC,
  defaultShedding,
  type ShedOptions,
} from '../src/pipeline/shedding.js'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline, type EventInput } from '../src/pipeline/pipeline.js'
import { createMetrics } from '../src/metrics/metrics.js'
import { accepted, openStore } from './helpers/store.js'
import { BROWSER_ID, startApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'

const log = (target: string, text = 'x'): EventInput => ({
  type: 'console_log',
  data: { level: 'log', text, args: [text], target_id: target },
  source: { kind: 'cdp' },
})

const MiB = 1024 * 1024
const opts = (o: Partial<ShedOptions> = {}): ShedOptions => ({
  backlogBytes: 16 * MiB,
  pageCapBytes: 1e12,
  pageCapWindowMs: 600_000,
  categoryEvents: { interaction: INTERACTION_BUDGET },
  ...o,
})

t.test(
  'LoadShedder: everything admitted without pressure; under it the loudest first, a quiet source last',
  async t => {
    let now = 0
    let backlog = 0
    const s = new LoadShedder(
      opts(),
      () => backlog,
      () => now,
    )
    let ok = 0
    for (let i = 0; i < 200_000; i++) if (s.admit('LOUD', 'console') === 'ok') ok++
    t.equal(ok, 200_000, 'no pressure: 200,000 events at one instant, all admitted')
    t.equal(s.admit('QUIET', 'console'), 'ok')
    // 1x-2x the backlog bound: sources at half the loudest rate or more are shed.
    backlog = 16 * MiB + 1
    t.equal(s.admit('LOUD', 'console'), 'shed', 'the loudest is shed')
    t.equal(s.admit('QUIET', 'console'), 'ok', 'a quiet source is not')
    t.equal(s.admit('LOUD', 'network'), 'ok', 'another category of the loud page is a source of its own')
    // The next second: loudness is the larger of this window and the one before.
    now = 1000
    t.equal(s.admit('LOUD', 'console'), 'shed', 'still the loudest a second later')
    t.equal(s.admit('QUIET', 'console'), 'ok')
    // 2x-3x: down to 1/8 of the loudest; 3x-4x: 1/64.
    now = 1500
    for (let i = 0; i < 30_000; i++) s.admit('MID', 'console') // 30,000 of the loudest's 200,002 (> 1/8)
    for (let i = 0; i < 4_000; i++) s.admit('LOW', 'console') // 4,000 (> 1/64, < 1/8)
    backlog = 2 * 16 * MiB + 1
    t.equal(s.admit('MID', 'console'), 'shed')
    t.equal(s.admit('LOW', 'console'), 'ok')
    t.equal(s.admit('QUIET', 'console'), 'ok')
    backlog = 3 * 16 * MiB + 1
    t.equal(s.admit('LOW', 'console'), 'shed')
    t.equal(s.admit('QUIET', 'console'), 'ok')
    // 4x: every source above QUIET_EVENTS_PER_SEC; the quiet one never.
    backlog = 4 * 16 * MiB
    for (let i = 0; i < QUIET_EVENTS_PER_SEC; i++) s.admit('FEW', 'console')
    t.equal(s.admit('FEW', 'console'), 'shed', `${QUIET_EVENTS_PER_SEC + 1} events in a second: shed`)
    t.equal(s.admit('QUIET', 'console'), 'ok', 'the quiet source: still kept')
    backlog = 1e15
    t.equal(s.admit('QUIET', 'console'), 'ok', 'at any backlog')
    backlog = 0
    t.equal(s.admit('LOUD', 'console'), 'ok', 'pressure gone: admitted again')
    // Windows long past: loudness forgotten.
    now = 60_000
    backlog = 16 * MiB + 1
    for (let i = 0; i < QUIET_EVENTS_PER_SEC; i++) t.equal(s.admit('LOUD', 'console'), 'ok')
    t.equal(s.admit('LOUD', 'console'), 'shed', 'loud again once past the quiet rate')
  },
)

t.test('LoadShedder: the fixed caps (interaction rate, page bytes) and a bounded table', async t => {
  let now = 0
  const s = new LoadShedder(
    opts({ pageCapBytes: 3000, pageCapWindowMs: 3000 }),
    () => 0,
    () => now,
  )
  let passed = 0
  for (let i = 0; i < 1800; i++) {
    now += 1000 / 30 // 30 keys/s for 60 s: every one passes
    if (s.admit('T', 'interaction') === 'ok') passed++
  }
  t.equal(passed, 1800)
  now += 10_000
  const flood = Array.from({ length: 1000 }, () => s.admit('T', 'interaction'))
  t.equal(flood.filter(v => v === 'ok').length, 100, 'a forged burst: the bucket of 100')
  t.equal(flood.filter(v => v === 'over_budget').length, 900)
  now += 1000
  t.equal(
    Array.from({ length: 1000 }, () => s.admit('T', 'interaction')).filter(v => v === 'ok').length,
    50,
    'then 50/s',
  )
  t.equal(s.admit('T', 'console'), 'ok', 'other categories have no event cap')
  t.equal(s.takeBytes('T', 2500), true)
  t.equal(s.takeBytes('T', 600), false, 'page cap: bytes over')
  t.equal(s.takeBytes('OTHER', 2500), true, 'per target')
  now += 100
  t.equal(s.takeBytes('T', 600), true, '100 ms of a 3,000 ms window = 100 bytes back')
  const small = new LoadShedder(
    opts({ maxSources: 3 }),
    () => 0,
    () => now,
  )
  for (let i = 0; i < 100; i++) small.admit(`T${i}`, 'console')
  t.equal(small.size, 3, 'source table bounded')
  const d = defaultShedding(512 * MiB)
  t.equal(d.pageCapBytes, 128 * MiB, 'the default page cap: a quarter of the retention bytes')
  t.equal(d.backlogBytes, 16 * MiB)
})

t.test(
  'a flooding target under pressure: its drops consume seqs (gaps), the quiet one is complete, metrics count them',
  async t => {
    let backlog = 0
    const lines: { msg: string; dropped?: number; reason?: string }[] = []
    const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l)) })
    const { log: store, pipeline } = await openStore(t, {}, { backlog: () => backlog, sheddingClock: () => 0, logger })
    const metrics = createMetrics({ processMetrics: false })
    const detach = metrics.attach({ pipeline, log: store })
    t.teardown(detach)
    const quietSent: number[] = []
    for (let i = 0; i < 1000; i++) {
      if (i === 200) backlog = 17 * MiB // the store falls behind after 200 flood events
      if (i === 800) backlog = 0 // and catches up
      pipeline.emit(log('FLOOD', `f${i}`))
      if (i % 100 === 0) quietSent.push(accepted(pipeline.emit(log('QUIET', `q${i}`))).accepted)
    }
    await store.flush()
    const stored = (await store.read({ order: 'asc', limit: 5000 })).records.map(r => JSON.parse(r.json))
    const flood = stored.filter(e => e.event.data.target_id === 'FLOOD')
    const quiet = stored.filter(e => e.event.data.target_id === 'QUIET')
    t.equal(quiet.length, 10, 'every event of the quiet page stored')
    t.same(
      quiet.map(e => e.seq),
      quietSent,
    )
    t.equal(flood.length, 400, 'flood: the 200 before and the 200 after the pressure')
    t.equal(pipeline.stats.shed, 600)
    t.equal(pipeline.stats.overBudget, 0)
    const seqs = stored.map(e => e.seq)
    t.equal(seqs.length, 410)
    t.equal(store.skipSeq(), 1011, '1010 seqs handed out (1000 flood + 10 quiet): 410 stored, 600 gaps')
    t.ok(
      seqs.every((s, i) => i === 0 || s > seqs[i - 1]!),
      'strictly increasing',
    )
    const text = (await metrics.render()).body
    t.match(text, /browser_telemetry_events_dropped_total\{category="console",reason="shed"\} 600/)
    t.match(text, /browser_telemetry_events_emitted_total\{category="console"\} 410/)
    const said = lines.filter(l => l.reason === 'shed')
    t.equal(said.length, 1, '600 drops within 10 s: one log line')
    t.equal(said[0]!.dropped, 1)
  },
)

t.test('events without a target (api, system, ingest) are never shed; shedding: false disables', async t => {
  const { pipeline } = await openStore(t, {}, { backlog: () => 1e12, sheddingClock: () => 0 })
  for (let i = 0; i < 500; i++)
    t.equal(pipeline.emit({ type: 'cdp_connect', data: {} }).dropped, undefined, `cdp_connect ${i}`)
  for (let i = 0; i < QUIET_EVENTS_PER_SEC; i++) pipeline.emit(log('T'))
  t.equal(pipeline.emit(log('T')).dropped, 'shed', 'a loud source with a target is, at that backlog')
  const { pipeline: off } = await openStore(t, {}, { shedding: false, backlog: () => 1e12 })
  for (let i = 0; i < 5000; i++) off.emit(log('T'))
  t.equal(off.stats.accepted, 5000)
  t.equal(off.stats.shed + off.stats.overBudget, 0)
})

t.test(
  'an unbuilt event: a loud source is shed before it is built (seq consumed, counted), a quiet one never',
  async t => {
    const { log: store, pipeline } = await openStore(t, {}, { backlog: () => 0, sheddingClock: () => 0 })
    const metrics = createMetrics({ processMetrics: false })
    t.teardown(metrics.attach({ pipeline, log: store }))
    const unbuilt = (type: 'console_log' | 'console_error', target_id: string) =>
      pipeline.emit({ type, target_id, unbuilt: true })
    // The store keeps up (backlog 0): intake shedding reads only the source's loudness.
    for (let i = 0; i < QUIET_EVENTS_PER_SEC; i++)
      t.same(unbuilt('console_log', 'QUIET'), { pending: true }, `quiet event ${i + 1}: pending, to be built`)
    t.equal(pipeline.stats.shed, 0)
    t.same(unbuilt('console_error', 'QUIET'), { dropped: 'shed', seq: 1 }, 'past 100 events in its second: loud, shed')
    t.same(unbuilt('console_log', 'OTHER'), { pending: true }, 'another page is a source of its own')
    t.equal(pipeline.stats.shed, 1)
    t.equal(store.skipSeq(), 2, 'the shed event consumed seq 1')
    // Built and emitted events of the source count towards its loudness too.
    pipeline.emit(log('OTHER'))
    t.equal(pipeline.stats.accepted, 1)
    const text = (await metrics.render()).body
    t.match(text, /browser_telemetry_events_dropped_total\{category="console",reason="shed"\} 1/)
    const seen: string[] = []
    t.teardown(pipeline.onEmit(o => seen.push(`${o.type}:${o.outcome}`)))
    pipeline.setCategories(['network'])
    t.same(
      unbuilt('console_log', 'QUIET'),
      { dropped: 'category_disabled' },
      'console off: the category gate, unparsed',
    )
    t.equal(pipeline.stats.gated, 1)
    t.same(seen, ['console_log:category_disabled'], 'observers hear an unbuilt drop like any other')
    const { pipeline: off } = await openStore(t, {}, { shedding: false })
    for (let i = 0; i < 1000; i++) off.emit({ type: 'console_log', target_id: 'T', unbuilt: true })
    t.equal(off.stats.shed, 0, 'shedding disabled: never')
  },
)

t.test('page cap: a page of huge events is cut off by bytes, not by count', async t => {
  const { log: store, pipeline } = await openStore(
    t,
    {},
    { shedding: opts({ pageCapBytes: 200_000 }), sheddingClock: () => 0 },
  )
  const big = 'y'.repeat(30_000)
  const results = Array.from({ length: 6 }, () => pipeline.emit(log('T', big)))
  t.same(
    results.map(r => r.dropped ?? 'accepted'),
    ['accepted', 'accepted', 'accepted', 'over_budget', 'over_budget', 'over_budget'],
    'three ~60 KB envelopes fit 200,000 bytes, the fourth does not',
  )
  await store.flush()
  t.equal((await store.read({ order: 'asc', limit: 10 })).records.length, 3)
})

t.test('skipped seqs survive a clean restart and are never handed out again', async t => {
  const { dir, log: first } = await openStore(t)
  let backlog = 0
  const p1 = new Pipeline({ log: first, backlog: () => backlog, sheddingClock: () => 0 })
  for (let i = 0; i < 200; i++) {
    if (i === 150) backlog = 1e12
    p1.emit(log('T')) // seqs 1..150 stored; 151..200 shed (a loud source by then)
  }
  await first.close()
  const again = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
  t.teardown(() => again.close())
  const p2 = new Pipeline({ log: again, shedding: false })
  t.equal(p2.emit(log('T')).accepted, 201, 'continues after the skipped seqs')
  await again.flush()
  t.same(
    (await again.read({ order: 'desc', limit: 3 })).records.map(r => r.seq),
    [201, 150, 149],
  )
})

t.test(
  'a gap wider than one index block (70,000 skipped seqs inside a batch): category reads still find every event',
  async t => {
    const { log: store, pipeline } = await openStore(t, { commitDelayMs: 1000 })
    pipeline.emit(log('T', 'before'))
    for (let i = 0; i < 70_000; i++) store.skipSeq()
    pipeline.emit(log('T', 'after'))
    pipeline.emit({ type: 'cdp_connect', data: {} })
    await store.flush()
    const all = (await store.read({ order: 'asc', limit: 10 })).records.map(r => r.seq)
    t.same(all, [1, 70_002, 70_003])
    const consoleOnly = (
      await store.read({ order: 'asc', limit: 10, categories: new Set(['console'] as const) })
    ).records.map(r => r.seq)
    t.same(consoleOnly, [1, 70_002], 'both console events through the category index')
    const fromMiddle = (
      await store.read({ order: 'asc', limit: 10, cursor: 5, categories: new Set(['console'] as const) })
    ).records.map(r => r.seq)
    t.same(fromMiddle, [70_002])
  },
)

t.test('paged reads and SSE (live and replay) walk over gaps', async t => {
  const api = await startApi(t, {
    // A console cap of 3 events, never refilled: 3 stored, then every console event a gap.
    pipeOpts: {
      shedding: opts({ categoryEvents: { console: { eventsPerSec: 0, eventsBurst: 3 } } }),
      sheddingClock: () => 0,
    },
  })
  const ac = new AbortController()
  const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/stream`, {
    signal: ac.signal,
    headers: { accept: 'text/event-stream' },
  })
  const msgs: EventSourceMessage[] = []
  const parser = createParser({ onEvent: e => msgs.push(e) })
  const reading = (async () => {
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        parser.feed(dec.decode(value, { stream: true }))
      }
    } catch {
      /* aborted */
    }
  })()
  for (let i = 0; i < 10; i++) {
    api.pipeline.emit(log('A', `a${i}`)) // 3 stored, 7 skipped
    api.pipeline.emit({ type: 'cdp_connect', data: {} })
  }
  await api.log.flush()
  const expected = [1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20]
  await waitFor(() => msgs.length >= expected.length, 10_000, 'live frames')
  t.same(
    msgs.map(m => Number(m.id)),
    expected,
    'live stream skips the gaps',
  )
  ac.abort()
  await reading
  const page1 = await api.get(`/browsers/${BROWSER_ID}/telemetry/events?since=1h&limit=5`)
  t.same(
    ((await page1.json()) as { seq: number }[]).map(e => e.seq),
    [1, 2, 3, 4, 5],
  )
  const page2 = await api.get(
    `/browsers/${BROWSER_ID}/telemetry/events?offset=${page1.headers.get('x-next-offset')}&limit=5`,
  )
  t.same(
    ((await page2.json()) as { seq: number }[]).map(e => e.seq),
    [6, 8, 10, 12, 14],
  )
  // Replay with Last-Event-ID inside a gap.
  const ac2 = new AbortController()
  const res2 = await api.get(`/browsers/${BROWSER_ID}/telemetry/stream`, {
    signal: ac2.signal,
    headers: { accept: 'text/event-stream', 'last-event-id': '7' },
  })
  const msgs2: EventSourceMessage[] = []
  const p2 = createParser({ onEvent: e => msgs2.push(e) })
  const reading2 = (async () => {
    const reader = res2.body!.getReader()
    const dec = new TextDecoder()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        p2.feed(dec.decode(value, { stream: true }))
      }
    } catch {
      /* aborted */
    }
  })()
  await waitFor(() => msgs2.length >= 7, 10_000, 'replayed frames')
  t.same(
    msgs2.map(m => Number(m.id)),
    [8, 10, 12, 14, 16, 18, 20],
  )
  ac2.abort()
  await reading2
})
