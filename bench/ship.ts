// Fleet shipping against a real nats-server (Debian package, JetStream, temp store).
// 1. Throughput: the shipper catching up a log of N ~500-byte envelopes (read, publish, ack, watermark)
//    vs core NATS publishing the same payloads with the same headers, in the same run. Goal >= 0.5,
//    and at least 2x default js.publish (256 in flight) of the same payloads, also in the same run.
// 2. Capture unaffected: emit() -> committed throughput with the shipper following live vs without.
// 3. Lag: commit -> JetStream ack at a paced 5,000 events/s; p50/p99. Goal p99 <= 50 ms.
// Load shedding is off (shedding: false): this measures shipping, not the drop policy.
// Medians of RUNS runs. Env: N (default 100,000), RUNS (5), LAG_SECONDS (5).
import { join } from 'node:path'
import { connect, headers } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { Shipper } from '../src/ship/shipper.js'
import { startNatsServer, type NatsServer } from '../test/helpers/nats.js'
import { committedOf, filledLog, fmt, median, realisticEvent, withTempDir } from './common.js'

const N = Number(process.env.N ?? 100_000)
const RUNS = Number(process.env.RUNS ?? 5)
const LAG_SECONDS = Number(process.env.LAG_SECONDS ?? 5)
const RATE = 5000
const INPUTS = Array.from({ length: 1000 }, (_, i) => realisticEvent(i))
const LIMITS = { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 }

function until(s: Shipper, seq: number): Promise<void> {
  return new Promise(resolve => {
    if (s.ackedSeq >= seq) {
      resolve()
      return
    }
    const off = s.onAcked(a => {
      if (a >= seq) {
        off()
        resolve()
      }
    })
  })
}

async function shipRate(nats: NatsServer, log: EventLog, run: number): Promise<number> {
  const s = new Shipper({
    log,
    browserId: `bench-${run}`,
    nats: { servers: [nats.url] },
    stream: `SHIP${run}`,
    subjectPrefix: `ship${run}`,
    limits: LIMITS,
  })
  // Connect and create the stream first (publishing one event's worth is excluded from the timing).
  await s.start()
  await until(s, 1)
  const t1 = performance.now()
  await until(s, log.lastSeq)
  const rate = (log.lastSeq - 1) / ((performance.now() - t1) / 1000)
  await s.stop()
  return rate
}

/** Same subjects' shape, same headers, same payloads; core publish to a subject no stream captures. */
async function coreRate(nats: NatsServer, payloads: string[]): Promise<number> {
  const nc = await connect({ servers: nats.url })
  const t0 = performance.now()
  for (let i = 0; i < payloads.length; i++) {
    const h = headers()
    h.set('Nats-Msg-Id', `bench:${i + 1}`)
    h.set('Telemetry-Seq', String(i + 1))
    h.set('Telemetry-Browser-Id', 'bench')
    nc.publish('core.bench.network', payloads[i]!, { headers: h })
    if (i % 1000 === 999) await new Promise(r => setImmediate(r))
  }
  await nc.flush()
  const rate = payloads.length / ((performance.now() - t0) / 1000)
  await nc.close()
  return rate
}

async function jsPublishRate(nats: NatsServer, payloads: string[], run: number): Promise<number> {
  const nc = await connect({ servers: nats.url })
  const js = jetstream(nc)
  const { jetstreamManager } = await import('@nats-io/jetstream')
  await (await jetstreamManager(nc)).streams.add({ name: `JSPUB${run}`, subjects: [`jspub${run}.>`] })
  const n = Math.min(payloads.length, 20_000)
  const t0 = performance.now()
  const inflight = new Set<Promise<unknown>>()
  for (let i = 0; i < n; i++) {
    const p = js
      .publish(`jspub${run}.bench.network`, payloads[i]!, { msgID: `bench:${i + 1}` })
      .finally(() => inflight.delete(p))
    inflight.add(p)
    if (inflight.size >= 256) await Promise.race(inflight)
  }
  await Promise.all(inflight)
  const rate = n / ((performance.now() - t0) / 1000)
  await nc.close()
  return rate
}

/** emit() -> committed throughput, optionally with a shipper following live. */
async function captureRate(dir: string, nats: NatsServer | undefined, run: number): Promise<number> {
  const log = await EventLog.open({ path: join(dir, `cap-${nats ? 'ship' : 'bare'}`), retentionIntervalMs: 0 })
  const pipeline = new Pipeline({ log, shedding: false })
  const s = nats
    ? new Shipper({
        log,
        browserId: `cap-${run}`,
        nats: { servers: [nats.url] },
        stream: `CAP${run}`,
        subjectPrefix: `cap${run}`,
        limits: LIMITS,
      })
    : undefined
  if (s) {
    await s.start()
    pipeline.emit(INPUTS[0]!)
    await until(s, 1)
  }
  const first = log.lastSeq
  const t0 = performance.now()
  let last: Promise<boolean> = Promise.resolve(true)
  for (let i = 0; i < N; i++) {
    last = committedOf(pipeline.emit(INPUTS[i % 1000]!))
    if (i % 1000 === 999) await new Promise(r => setImmediate(r))
  }
  await last
  const rate = (log.lastSeq - first) / ((performance.now() - t0) / 1000)
  if (s) {
    await until(s, log.lastSeq)
    await s.stop()
  }
  await log.close()
  return rate
}

/** Paced emits at RATE/s for LAG_SECONDS; per event: ack time - commit time. */
async function lagRun(
  dir: string,
  nats: NatsServer,
  run: number,
): Promise<{ p50: number; p99: number; max: number; count: number }> {
  const log = await EventLog.open({ path: join(dir, 'lag'), retentionIntervalMs: 0 })
  const pipeline = new Pipeline({ log, shedding: false })
  const s = new Shipper({
    log,
    browserId: `lag-${run}`,
    nats: { servers: [nats.url] },
    stream: `LAG${run}`,
    subjectPrefix: `lag${run}`,
    limits: LIMITS,
  })
  await s.start()
  pipeline.emit(INPUTS[0]!)
  await until(s, 1)
  const committedAt = new Map<number, number>()
  const lags: number[] = []
  log.onCommit(records => {
    const now = performance.now()
    for (const r of records) committedAt.set(r.seq, now)
  })
  let lastAcked = s.ackedSeq
  s.onAcked(seq => {
    const now = performance.now()
    for (let q = lastAcked + 1; q <= seq; q++) {
      const c = committedAt.get(q)
      if (c !== undefined) {
        lags.push(now - c)
        committedAt.delete(q)
      }
    }
    lastAcked = seq
  })
  const total = RATE * LAG_SECONDS
  const start = performance.now()
  let emitted = 0
  while (emitted < total) {
    // Emit what the schedule says is due, then sleep ~1 ms: a steady 5k/s, not bursts of a second.
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE))
    for (; emitted < due; emitted++) pipeline.emit(INPUTS[emitted % 1000]!)
    await new Promise(r => setTimeout(r, 1))
  }
  await log.flush()
  await until(s, log.lastSeq)
  await s.stop()
  await log.close()
  lags.sort((a, b) => a - b)
  const q = (p: number) => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))]!
  return { p50: q(0.5), p99: q(0.99), max: lags[lags.length - 1]!, count: lags.length }
}

const nats = await startNatsServer()
try {
  const ratios: number[] = []
  const ship: number[] = []
  const core: number[] = []
  const jsPub: number[] = []
  const jsRatios: number[] = []
  const capRatios: number[] = []
  const p99s: number[] = []
  const p50s: number[] = []
  for (let run = 0; run < RUNS; run++) {
    await withTempDir(async dir => {
      const filled = await filledLog(dir, N)
      const log = filled.log
      const payloads = filled.records.map(r => r.json)
      const s = await shipRate(nats, log, run)
      await log.close()
      const c = await coreRate(nats, payloads)
      const j = await jsPublishRate(nats, payloads, run)
      const bare = await captureRate(dir, undefined, run)
      const withShip = await captureRate(dir, nats, run)
      const lag = await lagRun(dir, nats, run)
      ship.push(s)
      core.push(c)
      jsPub.push(j)
      jsRatios.push(s / j)
      ratios.push(s / c)
      capRatios.push(withShip / bare)
      p99s.push(lag.p99)
      p50s.push(lag.p50)
      console.log(
        `run ${run + 1}: ship ${fmt(s, 0)}/s, core ${fmt(c, 0)}/s, ratio ${fmt(s / c)}; js.publish ${fmt(j, 0)}/s; ` +
          `capture ${fmt(withShip, 0)}/s shipping vs ${fmt(bare, 0)}/s bare (${fmt(withShip / bare)}); ` +
          `lag at ${RATE}/s: p50 ${fmt(lag.p50, 1)} ms, p99 ${fmt(lag.p99, 1)} ms, max ${fmt(lag.max, 1)} ms (${lag.count} events)`,
      )
    })
  }
  console.log(`\nN=${N}, ${RUNS} runs, medians:`)
  console.log(
    `  shipping throughput ${fmt(median(ship), 0)} events/s vs core NATS publish ${fmt(median(core), 0)} msgs/s: ratio ${fmt(median(ratios))} (goal >= 0.5)`,
  )
  console.log(
    `  default js.publish (256 in flight) ${fmt(median(jsPub), 0)} msgs/s (${fmt(median(jsPub) / median(core))} of core); ` +
      `shipping / js.publish ${fmt(median(jsRatios))} (goal >= 2)`,
  )
  console.log(`  capture (emit -> committed) while shipping / without: ${fmt(median(capRatios))} (goal >= 0.95)`)
  console.log(
    `  commit -> ack lag at ${RATE} events/s: p50 ${fmt(median(p50s), 1)} ms, p99 ${fmt(median(p99s), 1)} ms (goal <= 50 ms)`,
  )
  console.log(`  nats-server RSS after the runs: ${fmt((await nats.rssBytes()) / 2 ** 20, 0)} MiB`)
} finally {
  await nats.dispose()
}
