// Benchmark (issue 3 #2): CLIENTS concurrent SSE clients (default 100) on a RATE events/s emit load
// (default 10,000/s of ~500-byte events) for SECONDS (default 30). The daemon (store + pipeline +
// API) runs in this process; the clients run in a child process (node:http, minimal frame scanner).
// Checks that every client gets every event exactly once and in order, and reports the
// commit-to-client delay (p50/p99/max, from commit listener time to the client's read of the chunk)
// and the daemon's peak RSS. Baseline in the same run: the same load with 1 client.
// Medians over RUNS runs (default 5).
//   CLIENTS=100 RATE=10000 SECONDS=30 RUNS=5 npx tsx bench/api-sse.ts
import { fork, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { fmt, median, realisticEvent, withTempDir } from './common.js'

const CLIENTS = Number(process.env.CLIENTS ?? 100)
const RATE = Number(process.env.RATE ?? 10_000)
const SECONDS = Number(process.env.SECONDS ?? 30)
const RUNS = Number(process.env.RUNS ?? 5)
const TOKEN = 'bench-token'
const BROWSER = 'bench-browser'
const now = () => performance.timeOrigin + performance.now() // ms, comparable across processes

type Msg = { kind: string; [k: string]: any }
function next(child: ChildProcess, kind: string): Promise<Msg> {
  return new Promise((resolve) => {
    const on = (m: Msg) => { if (m.kind === kind) { child.off('message', on); resolve(m) } }
    child.on('message', on)
  })
}

// ------------------------------------------------------------------ client child
interface ClientState { next: number; count: number; errors: string[]; lastSeqs: number[]; times: number[]; ended: boolean }

function clients(url: string, n: number): void {
  const states: ClientState[] = []
  const SEP = Buffer.from('\n\nid: ')
  for (let i = 0; i < n; i++) {
    const st: ClientState = { next: 0, count: 0, errors: [], lastSeqs: [], times: [], ended: false }
    states.push(st)
    let tail = Buffer.from('\n\n')
    const req = request(`${url}/browsers/${BROWSER}/telemetry/stream`, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' }, agent: false }, (res) => {
      res.on('data', (chunk: Buffer) => {
        const t = now()
        const buf = tail.length ? Buffer.concat([tail, chunk]) : chunk
        const end = buf.lastIndexOf('\n\n')
        // Frames start right after a blank line; scan ids of complete frames only.
        let pos = buf.indexOf(SEP)
        let last = -1
        while (pos >= 0 && pos < end) {
          const idStart = pos + SEP.length
          const eol = buf.indexOf(10, idStart)
          if (eol < 0 || eol > end) break
          const seq = Number(buf.toString('latin1', idStart, eol))
          if (st.next !== 0 && seq !== st.next && st.errors.length < 5) st.errors.push(`expected ${st.next}, got ${seq}`)
          st.next = seq + 1
          st.count++
          last = seq
          pos = buf.indexOf(SEP, eol)
        }
        if (last >= 0) { st.lastSeqs.push(last); st.times.push(t) }
        tail = buf.subarray(end) // keeps the "\n\n" so the next frame's separator is found
      })
      res.on('end', () => { st.ended = true })
    })
    req.on('error', (err) => { st.errors.push(err.message); st.ended = true })
    req.end()
  }
  process.on('message', (m: Msg) => {
    if (m.kind === 'progress') {
      process.send!({ kind: 'progress', minNext: Math.min(...states.map((s) => s.next)), errors: states.flatMap((s) => s.errors).slice(0, 5) })
    } else if (m.kind === 'report') {
      // Delay of every event = time its chunk was read - its commit time.
      const commitAt: number[] = m.commitAt
      const first: number = m.firstSeq
      const delays = new Float64Array(states.reduce((a, s) => a + s.count, 0))
      let k = 0
      for (const s of states) {
        let prev = first - 1
        for (let c = 0; c < s.lastSeqs.length; c++) {
          for (let seq = prev + 1; seq <= s.lastSeqs[c]!; seq++) delays[k++] = s.times[c]! - commitAt[seq - first]!
          prev = s.lastSeqs[c]!
        }
      }
      const d = delays.subarray(0, k).sort()
      const pct = (p: number) => d[Math.min(d.length - 1, Math.floor(d.length * p))]!
      process.send!({
        kind: 'report', counts: states.map((s) => s.count), errors: states.flatMap((s) => s.errors).slice(0, 5),
        p50: pct(0.5), p99: pct(0.99), max: d[d.length - 1], clientRssMb: process.memoryUsage().rss / 1048576,
      })
    } else if (m.kind === 'stop') process.exit(0)
  })
  process.send!({ kind: 'started' })
}

// ------------------------------------------------------------------ daemon (this process)
interface RunResult { ok: boolean; events: number; p50: number; p99: number; max: number; peakRssMb: number; achievedRate: number; slowDisconnects: number }

async function run(nClients: number): Promise<RunResult> {
  const { createApiApp } = await import('../src/api/app.js')
  const { ALL_SCOPES, TokenSet } = await import('../src/api/auth.js')
  const { startApiServer } = await import('../src/api/server.js')
  const { CONFIGURABLE_CATEGORIES } = await import('../src/events/index.js')
  const { Pipeline } = await import('../src/pipeline.js')
  const { EventLog } = await import('../src/store/event-log.js')
  return withTempDir(async (dir) => {
    const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0, maxBytes: 64 * 1024 ** 3 })
    const pipeline = new Pipeline({ log, categories: CONFIGURABLE_CATEGORIES })
    const commitAt: number[] = []
    let firstSeq = 0
    log.onCommit((records) => {
      const t = now()
      for (const r of records) if (firstSeq) commitAt[r.seq - firstSeq] = t
    })
    const tokens = new TokenSet()
    tokens.add(TOKEN, ALL_SCOPES)
    const app = createApiApp({ browserId: BROWSER, log, pipeline, tokens })
    const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
    const child = fork(fileURLToPath(import.meta.url), ['--clients', server.url, String(nClients)], { execArgv: ['--import', 'tsx'] })
    await next(child, 'started')
    while (app.streams.size < nClients) await new Promise((r) => setTimeout(r, 20))

    let peakRss = process.memoryUsage().rss
    const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss) }, 100)
    firstSeq = log.lastSeq + 1
    const total = RATE * SECONDS
    let emitted = 0
    const start = performance.now()
    await new Promise<void>((resolve) => {
      const tick = () => {
        const target = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE))
        while (emitted < target) { pipeline.emit(realisticEvent(emitted)); emitted++ }
        if (emitted >= total) resolve()
        else setTimeout(tick, 2)
      }
      tick()
    })
    const achievedRate = total / ((performance.now() - start) / 1000)
    await log.flush()
    const lastSeq = log.lastSeq
    for (;;) {
      child.send({ kind: 'progress' })
      const p = await next(child, 'progress')
      if (p.minNext > lastSeq || p.errors.length > 0 || app.streams.size < nClients) break
      await new Promise((r) => setTimeout(r, 100))
    }
    clearInterval(sampler)
    child.send({ kind: 'report', commitAt, firstSeq })
    const rep = await next(child, 'report')
    child.send({ kind: 'stop' })
    const ok = rep.errors.length === 0 && rep.counts.every((c: number) => c === total)
    if (!ok) console.log(`  FAILED: counts ${JSON.stringify([...new Set(rep.counts)])} of ${total}, errors ${JSON.stringify(rep.errors)}`)
    const slowDisconnects = app.streams.stats.slowDisconnects
    await server.close()
    await log.close()
    return { ok, events: total, p50: rep.p50, p99: rep.p99, max: rep.max, peakRssMb: peakRss / 1048576, achievedRate, slowDisconnects }
  })
}

if (process.argv[2] === '--clients') {
  clients(process.argv[3]!, Number(process.argv[4]))
} else {
  console.log(`${CLIENTS} SSE clients vs 1 (baseline), ${RATE} events/s for ${SECONDS} s, ${RUNS} runs`)
  const main: RunResult[] = []
  const base: RunResult[] = []
  for (let i = 0; i < RUNS; i++) {
    const b = await run(1)
    base.push(b)
    const m = await run(CLIENTS)
    main.push(m)
    const line = (r: RunResult) => `ok=${r.ok} p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, max ${fmt(r.max, 0)} ms, RSS ${fmt(r.peakRssMb, 0)} MB, rate ${fmt(r.achievedRate, 0)}/s, slow-disconnects ${r.slowDisconnects}`
    console.log(`run ${i + 1}: 1 client:  ${line(b)}`)
    console.log(`run ${i + 1}: ${CLIENTS} clients: ${line(m)}`)
  }
  const med = (rs: RunResult[], k: keyof RunResult) => median(rs.map((r) => r[k] as number))
  console.log(`every client got every event in order: ${main.every((r) => r.ok) ? 'yes, all runs' : 'NO'}`)
  console.log(`${CLIENTS} clients: p99 commit-to-client ${fmt(med(main, 'p99'), 1)} ms (goal <= 100), p50 ${fmt(med(main, 'p50'), 1)} ms, peak daemon RSS ${fmt(med(main, 'peakRssMb'), 0)} MB (goal <= 200)`)
  console.log(`1 client (baseline): p99 ${fmt(med(base, 'p99'), 1)} ms, peak RSS ${fmt(med(base, 'peakRssMb'), 0)} MB`)
  console.log(`ratio p99 ${CLIENTS} clients / 1 client = ${fmt(med(main, 'p99') / med(base, 'p99'), 2)}`)
}
