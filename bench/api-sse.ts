// Benchmark (issue 3 #2): CLIENTS concurrent SSE clients (default 100) on a RATE events/s emit load
// (default 10,000/s of ~500-byte events) for SECONDS (default 30). The daemon (store + pipeline +
// API, compiled code from dist/, plain node) and the clients (node:http, minimal frame scanner) run
// in two child processes; this process orchestrates.
// Checks that every client gets every event exactly once and in order (every frame is counted; per
// read, the first id must follow the last one seen and the frames must span exactly their ids), and reports the
// commit-to-client delay (p50/p99/max, from commit listener time to the client's read of the chunk)
// and the daemon's peak RSS. Baseline in the same run: the same load with 1 client.
// Medians over RUNS runs (default 5).
//   CLIENTS=100 RATE=10000 DURATION_S=30 RUNS=5 npx tsx bench/api-sse.ts
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fmt, median, realisticEvent, withTempDir } from './common.js'

const CLIENTS = Number(process.env.CLIENTS ?? 100)
const RATE = Number(process.env.RATE ?? 10_000)
const SECONDS = Number(process.env.DURATION_S ?? 30)
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
interface ClientState { next: number; count: number; errors: string[]; lastSeqs: number[]; times: number[]; reconnects: number }

function clients(url: string, n: number): void {
  process.on('uncaughtException', (err) => { console.error('clients child crashed:', err); process.exit(1) })
  const states: ClientState[] = []
  const SEP = Buffer.from('\n\nid: ')
  const NLNL = Buffer.from('\n\n')
  let stopping = false
  // A client the daemon cut off as too slow resumes with Last-Event-ID, as real callers do.
  const open = (st: ClientState) => {
    let tail: Buffer = Buffer.from('\n\n')
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' }
    if (st.next > 0) headers['last-event-id'] = String(st.next - 1)
    const req = request(`${url}/browsers/${BROWSER}/telemetry/stream`, { headers, agent: false }, (res) => {
      // Counts the complete frames of buf (frames start right after a blank line) at time t; returns
      // the index of its last "\n\n" (where the next, unfinished frame starts). Only the first and
      // the last id of the run are parsed: the first must follow the previous run, and the run must
      // hold exactly last - first + 1 frames (parsing every id was most of the clients' CPU).
      const idAt = (buf: Buffer, pos: number): number => Number(buf.toString('latin1', pos + SEP.length, buf.indexOf(10, pos + SEP.length)))
      const scan = (buf: Buffer, t: number): number => {
        const end = buf.lastIndexOf(NLNL)
        let pos = buf.indexOf(SEP)
        if (pos < 0 || pos >= end) return end
        const first = idAt(buf, pos)
        let frames = 0
        let lastPos = pos
        while (pos >= 0 && pos < end) { frames++; lastPos = pos; pos = buf.indexOf(SEP, pos + SEP.length) }
        const last = idAt(buf, lastPos)
        if (st.next !== 0 && first !== st.next && st.errors.length < 5) st.errors.push(`expected ${st.next}, got ${first}`)
        if (last - first + 1 !== frames && st.errors.length < 5) st.errors.push(`ids ${first}..${last} in ${frames} frames`)
        st.next = last + 1
        st.count += frames
        st.lastSeqs.push(last)
        st.times.push(t)
        return end
      }
      res.on('data', (chunk: Buffer) => {
        const t = now()
        const first = chunk.indexOf(NLNL)
        if (first < 0) {
          const buf = Buffer.concat([tail, chunk])
          tail = buf.subarray(Math.max(0, scan(buf, t)))
          return
        }
        // Only the frame cut at the previous chunk's end is copied (finished by this chunk's head);
        // the rest of the chunk is scanned in place: 100 clients read ~600 MB/s.
        scan(Buffer.concat([tail, chunk.subarray(0, first + 2)]), t)
        const body = chunk.subarray(first)
        tail = body.subarray(scan(body, t)) // keeps the "\n\n" so the next frame's separator is found
      })
      res.on('close', () => { if (!stopping) { st.reconnects++; open(st) } })
    })
    req.on('error', () => { /* reported through close */ })
    req.end()
  }
  for (let i = 0; i < n; i++) {
    const st: ClientState = { next: 0, count: 0, errors: [], lastSeqs: [], times: [], reconnects: 0 }
    states.push(st)
    open(st)
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
        kind: 'report', counts: states.map((s) => s.count), reconnects: states.reduce((a, s) => a + s.reconnects, 0), errors: states.flatMap((s) => s.errors).slice(0, 5),
        p50: pct(0.5), p99: pct(0.99), max: d[d.length - 1], clientRssMb: process.memoryUsage().rss / 1048576,
        clientCpuS: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
      })
    } else if (m.kind === 'quiet') {
      stopping = true
      process.send!({ kind: 'quiet' })
    } else if (m.kind === 'stop') process.exit(0)
  })
  process.send!({ kind: 'started' })
}

// ------------------------------------------------------------------ daemon child (compiled code, plain node)
// Runs the compiled daemon modules from dist/ so its RSS is the daemon's, not tsx's.
const root = join(import.meta.dirname, '..')
const dist = (p: string) => JSON.stringify(pathToFileURL(join(root, 'dist', p)).href)
const DAEMON = `
import { EventLog } from ${dist('src/store/event-log.js')}
import { Pipeline } from ${dist('src/pipeline.js')}
import { CONFIGURABLE_CATEGORIES } from ${dist('src/events/index.js')}
import { createApiApp } from ${dist('src/api/app.js')}
import { ALL_SCOPES, TokenSet } from ${dist('src/api/auth.js')}
import { startApiServer } from ${dist('src/api/server.js')}
import { performance } from 'node:perf_hooks'
const [dir, template] = process.argv.slice(-2)
const now = () => performance.timeOrigin + performance.now()
const log = await EventLog.open({ path: dir, retentionIntervalMs: 0, maxBytes: 64 * 1024 ** 3 })
const pipeline = new Pipeline({ log, categories: CONFIGURABLE_CATEGORIES, budget: false }) // synthetic floods: no budget gaps
const commitAt = []
let firstSeq = 0
log.onCommit((records) => { const t = now(); if (firstSeq) for (const r of records) commitAt[r.seq - firstSeq] = t })
const tokens = new TokenSet()
tokens.add(${JSON.stringify(TOKEN)}, ALL_SCOPES)
const app = createApiApp({ browserId: ${JSON.stringify(BROWSER)}, log, pipeline, tokens, maxStreamClients: ${CLIENTS} }) // the default cap (64) would refuse the 100 clients
const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
const base = JSON.parse(template)
let peak = process.memoryUsage().rss
setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 100).unref()
const idleRss = process.memoryUsage().rss
process.on('message', async (m) => {
  if (m.kind === 'run') {
    while (app.streams.size < m.clients) await new Promise((r) => setTimeout(r, 20))
    peak = process.memoryUsage().rss
    firstSeq = log.lastSeq + 1
    const total = m.rate * m.seconds
    let emitted = 0
    const start = performance.now()
    const cpu0 = process.cpuUsage()
    await new Promise((resolve) => {
      const tick = () => {
        const target = Math.min(total, Math.floor(((performance.now() - start) / 1000) * m.rate))
        while (emitted < target) {
          pipeline.emit({ ...base, data: { ...base.data, request_id: '1234.' + emitted, url: base.data.url + emitted } })
          emitted++
        }
        if (emitted >= total) resolve()
        else setTimeout(tick, 2)
      }
      tick()
    })
    const elapsed = (performance.now() - start) / 1000
    const achievedRate = total / elapsed
    const cpu = process.cpuUsage(cpu0)
    await log.flush()
    process.send({ kind: 'emitted', total, firstSeq, lastSeq: log.lastSeq, achievedRate, cpuPct: (cpu.user + cpu.system) / 1e4 / elapsed })
  } else if (m.kind === 'finish') {
    // Wait until the (large) message is handed over: exiting right after send() would drop it.
    await new Promise((r) => process.send({ kind: 'finish', commitAt, peakRssMb: peak / 1048576, idleRssMb: idleRss / 1048576, slowDisconnects: app.streams.stats.slowDisconnects }, r))
    await server.close(500)
    await log.close()
    process.exit(0)
  }
})
process.send({ kind: 'ready', url: server.url })
`

interface RunResult { ok: boolean; events: number; p50: number; p99: number; max: number; peakRssMb: number; idleRssMb: number; achievedRate: number; slowDisconnects: number; reconnects: number; daemonCpuPct: number; clientCpuS: number }

async function run(nClients: number): Promise<RunResult> {
  return withTempDir(async (dir) => {
    const daemon = spawn(process.execPath, ['--input-type=module', '-e', DAEMON, '--', join(dir, 'log'), JSON.stringify(realisticEvent(0))], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    const daemonExited = new Promise((r) => daemon.once('exit', r))
    const ready = await next(daemon, 'ready')
    if (process.env.BENCH_DEBUG) console.error('daemon ready', ready.url)
    const child = fork(fileURLToPath(import.meta.url), ['--clients', ready.url, String(nClients)], { execArgv: ['--import', 'tsx'] })
    await next(child, 'started')
    if (process.env.BENCH_DEBUG) console.error('clients started')
    daemon.send({ kind: 'run', clients: nClients, rate: RATE, seconds: SECONDS })
    const emitted = await next(daemon, 'emitted')
    if (process.env.BENCH_DEBUG) console.error('emitted', emitted.total, emitted.achievedRate)
    // Wait until every client has the last event (or progress stops for 15 s).
    let lastMin = -1
    let stalledSince = performance.now()
    for (;;) {
      child.send({ kind: 'progress' })
      const p = await next(child, 'progress')
      if (process.env.BENCH_DEBUG) console.error('progress', p.minNext, emitted.lastSeq, p.errors)
      if (p.minNext > emitted.lastSeq || p.errors.length > 0) break
      if (p.minNext !== lastMin) { lastMin = p.minNext; stalledSince = performance.now() }
      if (performance.now() - stalledSince > 15_000) break
      await new Promise((r) => setTimeout(r, 100))
    }
    child.send({ kind: 'quiet' }) // the daemon is about to close: no more resumes
    await next(child, 'quiet')
    if (process.env.BENCH_DEBUG) console.error('quiet')
    daemon.send({ kind: 'finish' })
    const fin = await next(daemon, 'finish')
    if (process.env.BENCH_DEBUG) console.error('finish', fin.commitAt.length)
    child.send({ kind: 'report', commitAt: fin.commitAt, firstSeq: emitted.firstSeq })
    const rep = await next(child, 'report')
    child.send({ kind: 'stop' })
    await daemonExited
    const ok = rep.errors.length === 0 && rep.counts.every((c: number) => c === emitted.total)
    if (!ok) console.log(`  incomplete: per-client counts ${JSON.stringify([...new Set(rep.counts)].slice(0, 10))} of ${emitted.total}, errors ${JSON.stringify(rep.errors)}`)
    return { ok, events: emitted.total, p50: rep.p50, p99: rep.p99, max: rep.max, peakRssMb: fin.peakRssMb, idleRssMb: fin.idleRssMb, achievedRate: emitted.achievedRate, slowDisconnects: fin.slowDisconnects, reconnects: rep.reconnects, daemonCpuPct: emitted.cpuPct, clientCpuS: rep.clientCpuS }
  })
}

if (process.argv[2] === '--clients') {
  clients(process.argv[3]!, Number(process.argv[4]))
} else {
  try { execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root }) } catch {
    console.log('(tsc reported errors elsewhere in the tree; using what it emitted into dist/)')
  }
  console.log(`${CLIENTS} SSE clients vs 1 (baseline), ${RATE} events/s for ${SECONDS} s, ${RUNS} runs`)
  const main: RunResult[] = []
  const base: RunResult[] = []
  for (let i = 0; i < RUNS; i++) {
    const b = await run(1)
    base.push(b)
    const m = await run(CLIENTS)
    main.push(m)
    const line = (r: RunResult) => `ok=${r.ok} p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, max ${fmt(r.max, 0)} ms, RSS peak ${fmt(r.peakRssMb, 0)} MB (idle ${fmt(r.idleRssMb, 0)}), rate ${fmt(r.achievedRate, 0)}/s, slow-client disconnects ${r.slowDisconnects} (resumed with Last-Event-ID: ${r.reconnects}), daemon CPU ${fmt(r.daemonCpuPct, 0)}% while emitting, clients process CPU ${fmt(r.clientCpuS, 1)} s`
    console.log(`run ${i + 1}: 1 client:  ${line(b)}`)
    console.log(`run ${i + 1}: ${CLIENTS} clients: ${line(m)}`)
  }
  const med = (rs: RunResult[], k: keyof RunResult) => median(rs.map((r) => r[k] as number))
  console.log(`every client got every event exactly once, in order (with resumes): ${main.every((r) => r.ok) ? 'yes, all runs' : 'NO'}`)
  console.log(`${CLIENTS} clients: p99 commit-to-client ${fmt(med(main, 'p99'), 1)} ms (goal <= 100), p50 ${fmt(med(main, 'p50'), 1)} ms, peak daemon RSS ${fmt(med(main, 'peakRssMb'), 0)} MB (goal <= 200)`)
  console.log(`1 client (baseline): p99 ${fmt(med(base, 'p99'), 1)} ms, peak RSS ${fmt(med(base, 'peakRssMb'), 0)} MB`)
  console.log(`ratio p99 ${CLIENTS} clients / 1 client = ${fmt(med(main, 'p99') / med(base, 'p99'), 2)}`)
}
