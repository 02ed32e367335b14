// OTLP/HTTP export of logs against a local receiver that reads each body and answers 200 (no
// decoding: this measures the exporter, not a collector).
// 1. Throughput: the OTLP logs sink catching up a log of N ~500-byte envelopes (read, LogRecords,
//    protobuf, POST, watermark) vs a bare client building and posting the same OTLP payloads from the
//    same records held in memory (parse, LogRecords, serialize 512 at a time, POST two at a time), in
//    the same run. Goal >= 0.5. Also printed: posting the payloads serialized beforehand (HTTP alone).
// 2. Lag: commit -> exported (the collector's 2xx reached the watermark) at a paced 2,000 events/s,
//    default batch settings; p50/p99. Goal p99 <= 1 s.
// 3. With OUTAGE_SECONDS set (e.g. 600): the collector down (nothing listening) that long while
//    2,000 events/s are committed; the process's RSS sampled every second, then the collector comes up
//    on the same port and the time to catch up is printed.
// Load shedding is off. Medians of RUNS runs. Env: N (default 50,000), RUNS (3), LAG_SECONDS (10).
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { silentLogger } from '../src/log.js'
import { startOtlp } from '../src/otlp/otlp-sink.js'
import { logRecordOf, navigationSpanOf, parseEnvelope, sharedOf } from '../src/otlp/model.js'
import type { Sink } from '../src/sink/sink.js'
import { committedOf, filledLog, fmt, median, realisticEvent, withTempDir } from './common.js'

const N = Number(process.env.N ?? 50_000)
const RUNS = Number(process.env.RUNS ?? 3)
const LAG_SECONDS = Number(process.env.LAG_SECONDS ?? 10)
const OUTAGE_SECONDS = Number(process.env.OUTAGE_SECONDS ?? 0)
const RATE = 2000
const INPUTS = Array.from({ length: 1000 }, (_, i) => realisticEvent(i))

async function sinkReceiver(port = 0): Promise<{ server: Server; url: string; bytes: () => number }> {
  let bytes = 0
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length))
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' })
      res.end()
    })
  })
  await new Promise<void>(r => server.listen(port, '127.0.0.1', () => r()))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bytes: () => bytes }
}

/** The OTLP logs export (protobuf, default batching) of `log` to `endpoint`. */
async function logsExporter(endpoint: string, log: EventLog) {
  return (await startOtlp(
    {
      endpoint,
      protocol: 'http/protobuf',
      headers: {},
      timeoutMs: 10_000,
      signals: ['logs'],
      metricsIntervalMs: 60_000,
      resourceAttributes: {},
    },
    { log, browserId: 'bench', version: '0', logger: silentLogger },
  ))!
}

function caughtUp(s: Sink, seq: number): Promise<void> {
  return new Promise(resolve => {
    if (s.ackedSeq >= seq) return resolve()
    const off = s.onAcked(a => {
      if (a >= seq) {
        off()
        resolve()
      }
    })
  })
}

function postOnce(url: URL, body: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'content-length': body.byteLength } },
      res => {
        res.resume()
        res.on('end', () => resolve())
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

async function throughputRun(): Promise<{ exporter: number; bare: number; httpOnly: number; cpuUsPerEvent: number }> {
  return withTempDir(async dir => {
    const rcv = await sinkReceiver()
    const { log, records } = await filledLog(dir, N)
    try {
      // Baselines: (a) the same payloads built and posted by a bare client, two requests at a time;
      // (b) the payloads serialized beforehand, posted alone (what HTTP costs).
      const shared = sharedOf({ browserId: 'bench', version: '0' })
      const spanOf = navigationSpanOf(shared.browserId)
      const url = new URL(`${rcv.url}/v1/logs`)
      const encode = (i: number) =>
        ProtobufLogsSerializer.serializeRequest(
          records.slice(i, i + 512).map(r => logRecordOf(parseEnvelope(r), shared, spanOf)),
        )!
      let t0 = performance.now()
      let next = 0
      await Promise.all(
        [0, 1].map(async () => {
          while (next < records.length) {
            const i = next
            next += 512
            await postOnce(url, encode(i))
          }
        }),
      )
      const bare = N / ((performance.now() - t0) / 1000)
      const bodies: Uint8Array[] = []
      for (let i = 0; i < records.length; i += 512) bodies.push(encode(i))
      t0 = performance.now()
      next = 0
      await Promise.all(
        [0, 1].map(async () => {
          while (next < bodies.length) await postOnce(url, bodies[next++]!)
        }),
      )
      const httpOnly = N / ((performance.now() - t0) / 1000)

      t0 = performance.now()
      const cpu0 = process.cpuUsage()
      const x = await logsExporter(rcv.url, log)
      await caughtUp(x.sinks[0]!, log.lastSeq)
      const exporter = N / ((performance.now() - t0) / 1000)
      const cpu = process.cpuUsage(cpu0)
      await x.stop()
      // The whole process: the exporter's reads, records, protobuf, requests and watermark, and the
      // receiver's reading of the bodies (a small share).
      return { exporter, bare, httpOnly, cpuUsPerEvent: (cpu.user + cpu.system) / N }
    } finally {
      await log.close()
      rcv.server.close()
    }
  })
}

async function lagRun(): Promise<number[]> {
  return withTempDir(async dir => {
    const rcv = await sinkReceiver()
    const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0 })
    const pipeline = new Pipeline({ log, shedding: false })
    const committedAt = new Map<number, number>()
    const lags: number[] = []
    const offCommit = log.onCommit(rs => {
      const now = performance.now()
      for (const r of rs) committedAt.set(r.seq, now)
    })
    const x = await logsExporter(rcv.url, log)
    const sink = x.sinks[0]!
    let lastAcked = 0
    const offAck = sink.onAcked(seq => {
      const now = performance.now()
      for (let s = lastAcked + 1; s <= seq; s++) {
        const c = committedAt.get(s)
        if (c !== undefined) {
          lags.push(now - c)
          committedAt.delete(s)
        }
      }
      lastAcked = seq
    })
    try {
      const total = RATE * LAG_SECONDS
      const t0 = performance.now()
      let last: Promise<boolean> = Promise.resolve(true)
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / RATE
        const wait = due - performance.now()
        if (wait > 1) await new Promise(r => setTimeout(r, wait))
        last = committedOf(pipeline.emit(INPUTS[i % 1000]!))
      }
      await last
      await caughtUp(sink, log.lastSeq)
      return lags
    } finally {
      offAck()
      offCommit()
      await x.stop()
      await log.close()
      rcv.server.close()
    }
  })
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}

const exp: number[] = []
const bare: number[] = []
const http: number[] = []
const cpuPerEvent: number[] = []
for (let i = 0; i < RUNS; i++) {
  const r = await throughputRun()
  exp.push(r.exporter)
  bare.push(r.bare)
  http.push(r.httpOnly)
  cpuPerEvent.push(r.cpuUsPerEvent)
}
console.log(
  `throughput (N=${N}, medians of ${RUNS}): exporter ${fmt(median(exp), 0)} ev/s, bare client ${fmt(median(bare), 0)} ev/s, ratio ${fmt(median(exp) / median(bare))} (goal >= 0.5); posting pre-serialized payloads alone ${fmt(median(http), 0)} ev/s; CPU per exported event ${fmt(median(cpuPerEvent), 1)} µs`,
)
const p50s: number[] = []
const p99s: number[] = []
for (let i = 0; i < RUNS; i++) {
  const lags = await lagRun()
  p50s.push(pct(lags, 50))
  p99s.push(pct(lags, 99))
}
console.log(
  `lag commit -> exported at ${RATE}/s for ${LAG_SECONDS} s (medians of ${RUNS}): p50 ${fmt(median(p50s), 0)} ms, p99 ${fmt(median(p99s), 0)} ms (goal p99 <= 1000 ms)`,
)

/** Commits RATE events/s for `seconds` with the collector down; RSS samples (MB), then the catch-up time once it is up. */
async function outageRun(seconds: number): Promise<{ rssMb: number[]; events: number; catchUpMs: number }> {
  return withTempDir(async dir => {
    // A port nothing listens on until the collector comes up.
    const probe = await sinkReceiver()
    const port = (probe.server.address() as AddressInfo).port
    await new Promise(r => probe.server.close(r))
    const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0 })
    const pipeline = new Pipeline({ log, shedding: false })
    const x = await logsExporter(`http://127.0.0.1:${port}`, log)
    const rssMb: number[] = []
    const sampler = setInterval(() => rssMb.push(process.memoryUsage().rss / 1024 / 1024), 1000)
    let events = 0
    try {
      const t0 = performance.now()
      let last: Promise<boolean> = Promise.resolve(true)
      for (; performance.now() - t0 < seconds * 1000; events++) {
        const wait = t0 + (events * 1000) / RATE - performance.now()
        if (wait > 1) await new Promise(r => setTimeout(r, wait))
        last = committedOf(pipeline.emit(INPUTS[events % 1000]!))
      }
      await last
      clearInterval(sampler)
      const rcv = await sinkReceiver(port)
      const up = performance.now()
      await caughtUp(x.sinks[0]!, log.lastSeq)
      const catchUpMs = performance.now() - up
      rcv.server.close()
      return { rssMb, events, catchUpMs }
    } finally {
      clearInterval(sampler)
      await x.stop()
      await log.close()
    }
  })
}

if (OUTAGE_SECONDS > 0) {
  const r = await outageRun(OUTAGE_SECONDS)
  const sorted = [...r.rssMb].sort((a, b) => a - b)
  console.log(
    `collector down ${OUTAGE_SECONDS} s at ${RATE}/s (${r.events} events committed meanwhile): RSS first ${fmt(r.rssMb[0] ?? 0, 0)} MB, median ${fmt(median(r.rssMb), 0)} MB, max ${fmt(sorted.at(-1) ?? 0, 0)} MB, last ${fmt(r.rssMb.at(-1) ?? 0, 0)} MB; caught up ${fmt(r.catchUpMs / 1000, 1)} s after it came up`,
  )
}
