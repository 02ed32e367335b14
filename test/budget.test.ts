// Per-page budgets (issue 15 item 2): token buckets per target and category; over-budget events are
// dropped but consume their seq (readers, pages and SSE see the gap), counted in /metrics; a
// flooding page cannot crowd out another page; skipped seqs survive a restart and long gaps.
import t from 'tap'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { PageBudgets } from '../src/budget.js'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline, type EventInput } from '../src/pipeline.js'
import { createMetrics } from '../src/metrics.js'
import { accepted, openStore } from './helpers/store.js'
import { BROWSER_ID, startApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'

const log = (target: string, text = 'x'): EventInput => ({
  type: 'console_log',
  data: { level: 'log', text, args: [text], target_id: target },
  source: { kind: 'cdp' },
})

t.test('PageBudgets: burst, then the sustained rate; keys independent; bytes too', async t => {
  let now = 0
  const b = new PageBudgets({ eventsPerSec: 10, eventsBurst: 5, bytesPerSec: 1000, bytesBurst: 3000 }, () => now)
  const took = Array.from({ length: 8 }, () => b.takeEvent('A', 'console'))
  t.same(took, [true, true, true, true, true, false, false, false], 'burst of 5')
  t.equal(b.takeEvent('B', 'console'), true, 'another target has its own bucket')
  t.equal(b.takeEvent('A', 'network'), true, 'another category too')
  now = 250 // 2.5 tokens back
  t.same([b.takeEvent('A', 'console'), b.takeEvent('A', 'console'), b.takeEvent('A', 'console')], [true, true, false])
  now = 100_000
  t.equal(
    Array.from({ length: 10 }, () => b.takeEvent('A', 'console')).filter(Boolean).length,
    5,
    'refills to the burst, not beyond',
  )
  t.equal(b.takeBytes('A', 'console', 2500), true)
  t.equal(b.takeBytes('A', 'console', 600), false, 'bytes over')
  now += 100
  t.equal(b.takeBytes('A', 'console', 600), true, '100 ms = 100 bytes back')
  const small = new PageBudgets(
    { eventsPerSec: 1, eventsBurst: 1, bytesPerSec: 1, bytesBurst: 1, maxBuckets: 3 },
    () => now,
  )
  for (let i = 0; i < 100; i++) small.takeEvent(`T${i}`, 'console')
  t.equal(small.size, 3, 'bucket table bounded')
})

t.test('a flooding target: drops consume seqs (gaps), the other target is complete, metrics count them', async t => {
  let now = 0
  const { log: store, pipeline } = await openStore(
    t,
    {},
    {
      budget: { eventsPerSec: 100, eventsBurst: 50, bytesPerSec: 1e9, bytesBurst: 1e9 },
      budgetClock: () => now,
    },
  )
  const metrics = createMetrics({ processMetrics: false })
  const detach = metrics.attach({ pipeline, log: store })
  t.teardown(detach)
  const quietSent: number[] = []
  for (let i = 0; i < 1000; i++) {
    pipeline.emit(log('FLOOD', `f${i}`))
    if (i % 100 === 0) {
      const r = pipeline.emit(log('QUIET', `q${i}`))
      quietSent.push(accepted(r).accepted)
    }
    if (i % 200 === 199) now += 1000 // one second passes every 200 flood events: 100 more tokens
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
  t.equal(flood.length, 50 + 4 * 50, 'flood: burst + 4 refills, each capped at the burst')
  t.equal(pipeline.stats.overBudget, 750)
  // Every seq was handed out: stored + skipped = emitted, and the skipped ones are the gaps.
  const seqs = stored.map(e => e.seq)
  t.equal(seqs.length, 260)
  t.equal(store.skipSeq(), 1011, '1010 seqs handed out (1000 flood + 10 quiet): 260 stored, 750 gaps')
  t.ok(
    seqs.every((s, i) => i === 0 || s > seqs[i - 1]!),
    'strictly increasing',
  )
  const text = (await metrics.render()).body
  t.match(text, /browser_telemetry_events_dropped_total\{category="console",reason="over_budget"\} 750/)
  t.match(text, /browser_telemetry_events_emitted_total\{category="console"\} 260/)
})

t.test('events without a target (api, system, ingest) are never budgeted; budget: false disables', async t => {
  const { pipeline } = await openStore(
    t,
    {},
    { budget: { eventsPerSec: 1, eventsBurst: 1, bytesPerSec: 1e9, bytesBurst: 1e9 }, budgetClock: () => 0 },
  )
  for (let i = 0; i < 50; i++)
    t.equal(pipeline.emit({ type: 'cdp_connect', data: {} }).dropped, undefined, `cdp_connect ${i}`)
  const { pipeline: off } = await openStore(t, {}, { budget: false })
  for (let i = 0; i < 5000; i++) off.emit(log('T'))
  t.equal(off.stats.accepted, 5000)
  t.equal(off.stats.overBudget, 0)
})

t.test('bytes budget: a page of huge events is cut off by bytes, not by count', async t => {
  const { log: store, pipeline } = await openStore(
    t,
    {},
    { budget: { eventsPerSec: 1e6, eventsBurst: 1e6, bytesPerSec: 1, bytesBurst: 200_000 }, budgetClock: () => 0 },
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
  const p1 = new Pipeline({
    log: first,
    budget: { eventsPerSec: 1, eventsBurst: 2, bytesPerSec: 1e9, bytesBurst: 1e9 },
    budgetClock: () => 0,
  })
  for (let i = 0; i < 10; i++) p1.emit(log('T')) // seqs 1,2 stored; 3..10 skipped
  await first.close()
  const again = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
  t.teardown(() => again.close())
  const p2 = new Pipeline({ log: again, budget: false })
  t.equal(p2.emit(log('T')).accepted, 11, 'continues after the skipped seqs')
  await again.flush()
  t.same(
    (await again.read({ order: 'asc', limit: 10 })).records.map(r => r.seq),
    [1, 2, 11],
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
    pipeOpts: { budget: { eventsPerSec: 1, eventsBurst: 3, bytesPerSec: 1e9, bytesBurst: 1e9 }, budgetClock: () => 0 },
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
