// Benchmarks 2 and 3:
//  - cursor page read (100 envelopes) vs a raw iterator read of the same 100 keys (goal ratio >= 0.5);
//  - `since` seek: median latency to the first page on a log of 2M events (goal <= 5 ms) and the
//    ratio to the same on 200k events (goal <= 2x).
// Medians of >= 5 runs; everything measured in this process.
import { ClassicLevel } from 'classic-level'
import { join } from 'node:path'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { eventKey } from '../src/store/keys.js'
import { median, withTempDir, realisticEvent, fmt } from './common.js'

const BIG = Number(process.env.BIG ?? 2_000_000)
const SMALL = Number(process.env.SMALL ?? 200_000)
const RUNS = Number(process.env.RUNS ?? 7)
const PAGES = 200

/** Each log's LevelDB, for the raw baseline: the log never hands it out, so the bench keeps it. */
const rawDbOf = new Map<EventLog, ClassicLevel<Buffer, Buffer>>()

async function fill(dir: string, n: number): Promise<{ log: EventLog; t0: number; t1: number }> {
  // One event per simulated 100 µs, so time windows are meaningful.
  let now = 1_700_000_000_000_000
  let db: ClassicLevel<Buffer, Buffer> | undefined
  const log = await EventLog.open({
    path: dir,
    retentionIntervalMs: 0,
    maxBytes: 64 * 1024 ** 3,
    maxAgeMs: 1e12,
    level: p => (db = new ClassicLevel<Buffer, Buffer>(p, { keyEncoding: 'buffer', valueEncoding: 'buffer' })),
  })
  rawDbOf.set(log, db!)
  const pipeline = new Pipeline({ log, clock: () => now, shedding: false }) // seeding floods one page: no shedding gaps
  const t0 = now
  for (let i = 0; i < n; i++) {
    now += 100
    pipeline.emit(realisticEvent(i))
    if (i % 5000 === 4999) {
      await log.flush()
    }
  }
  await log.flush()
  await db!.compactRange(Buffer.of(0) as never, Buffer.of(0xff) as never)
  return { log, t0, t1: now }
}

async function pageVsRaw(log: EventLog, n: number): Promise<number> {
  const ratios: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const starts = Array.from({ length: PAGES }, () => 1 + Math.floor(Math.random() * (n - 200)))
    let t = performance.now()
    for (const s of starts) {
      const r = await log.read({ order: 'asc', limit: 100, cursor: s })
      if (r.records.length !== 100) throw new Error('short page')
    }
    const ours = performance.now() - t
    t = performance.now()
    for (const s of starts) {
      const entries = await rawDbOf
        .get(log)!
        .iterator({ gte: eventKey(s), lt: eventKey(s + 100), limit: 100 })
        .all()
      if (entries.length !== 100) throw new Error('short raw page')
      for (const [, v] of entries) Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8', 9)
    }
    const raw = performance.now() - t
    ratios.push(raw / ours)
  }
  return median(ratios)
}

async function seekLatency(log: EventLog, t0: number, t1: number): Promise<number> {
  const lat: number[] = []
  for (let i = 0; i < RUNS * 20; i++) {
    const since = t0 + Math.floor(Math.random() * (t1 - t0))
    const t = performance.now()
    const r = await log.read({ order: 'asc', limit: 20, sinceUs: since })
    lat.push(performance.now() - t)
    if (r.records.length === 0 && since < t1 - 100 * 20) throw new Error('empty page')
  }
  return median(lat)
}

await withTempDir(async dir => {
  const small = await fill(join(dir, 'small'), SMALL)
  const smallSeek = await seekLatency(small.log, small.t0, small.t1)
  const smallPage = await pageVsRaw(small.log, SMALL)
  await small.log.close()
  console.log(`log of ${SMALL}: since-seek median ${fmt(smallSeek, 3)} ms, page ratio ${fmt(smallPage)}`)
  const big = await fill(join(dir, 'big'), BIG)
  const bigSeek = await seekLatency(big.log, big.t0, big.t1)
  const bigPage = await pageVsRaw(big.log, BIG)
  // Category-filtered page on the big log (every event is network; ask for network+console).
  const t = performance.now()
  for (let i = 0; i < 100; i++)
    await big.log.read({
      order: 'asc',
      limit: 100,
      cursor: 1 + Math.floor(Math.random() * (BIG - 200)),
      categories: new Set(['network', 'console']),
    })
  const catMs = (performance.now() - t) / 100
  await big.log.close()
  console.log(
    `log of ${BIG}: since-seek median ${fmt(bigSeek, 3)} ms, page ratio ${fmt(bigPage)}, filtered page ${fmt(catMs, 3)} ms`,
  )
  console.log(
    `store-read: cursor page vs raw iterator ratio ${fmt(bigPage)} (goal >= 0.5); since-seek ${fmt(bigSeek, 3)} ms on ${BIG} (goal <= 5 ms), ` +
      `${fmt(bigSeek / smallSeek)}x the ${SMALL} log (goal <= 2x)`,
  )
})
