// Benchmark: CLIENTS concurrent SSE clients (default 100) on a RATE events/s
// emit load (default 10,000/s of ~500-byte events) for DURATION_S seconds (default 30). The daemon
// (store + pipeline + API, compiled code from dist/, plain node; the generator emits inside it, as
// collectors do) and the clients run in separate processes: CLIENT_PROCS client processes (default
// 4) share the clients; this process orchestrates.
//
// Clients. VALIDATE_CLIENTS of them (default 2, one per process first) read through a library
// parser (eventsource-parser): every frame's id must follow the previous one and its data must be
// the envelope of that seq. The others are lean (one Buffer.indexOf per frame, the first and the
// last id of each read parsed): per read, the first id must follow the previous read's last and the
// read must hold exactly last - first + 1 frames. A client the daemon cuts off as too slow resumes
// with Last-Event-ID, as real callers do. Every client must end with every event exactly once.
//
// Latency of an event at a client = the time the client read the chunk holding its frame - the time
// the generator called emit() for it, both on CLOCK_MONOTONIC (process.hrtime: one clock for every
// process on the machine, so no skew). Reported over every (client, event) pair: p50, p99, max.
// CPU over the run (emit start to the last client having the last event): daemon CPU s, clients
// CPU s (all processes), and how busy the whole machine was (/proc/stat, every process, other users'
// too). Baseline in the same run: the same load with 1 client (BASELINE=0 skips it).
// Medians over RUNS runs (default 5).
//   CLIENTS=100 RATE=10000 DURATION_S=30 RUNS=5 CLIENT_PROCS=4 VALIDATE_CLIENTS=2 [COALESCE_MS=20] npx tsx bench/api-sse.ts
// DAEMON_NODE_ARGS passes node flags to the daemon (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
// STREAM_BUFFER_BYTES / RING_BYTES set the daemon's per-client buffer and resume ring (unset: the
// daemon defaults, 8 MiB / 16 MiB). STALL=N:PAUSE_MS:EVERY_MS makes the first N lean clients of each
// client process stop reading for PAUSE_MS every EVERY_MS (e.g. 1:4000:6000): they fall behind, are cut
// off as lagging and resume, as slow real clients do; their own latency is left out of the figures
// (the others' is what the daemon owes), their events are still counted and checked.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { connect as netConnect } from 'node:net'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createParser } from 'eventsource-parser'
import { fmt, median, realisticEvent, withTempDir } from './common.js'

const CLIENTS = Number(process.env.CLIENTS ?? 100)
const RATE = Number(process.env.RATE ?? 10_000)
const SECONDS = Number(process.env.DURATION_S ?? 30)
const RUNS = Number(process.env.RUNS ?? 5)
const PROCS = Math.max(1, Math.min(CLIENTS, Number(process.env.CLIENT_PROCS ?? 4)))
const VALIDATE = Math.min(CLIENTS, Number(process.env.VALIDATE_CLIENTS ?? 2))
const BASELINE = process.env.BASELINE !== '0'
/** The hub's live write interval per client (streams.coalesceMs; unset = the daemon default). */
const COALESCE_MS = process.env.COALESCE_MS === undefined ? undefined : Number(process.env.COALESCE_MS)
const BUFFER_BYTES = process.env.STREAM_BUFFER_BYTES === undefined ? undefined : Number(process.env.STREAM_BUFFER_BYTES)
const RING_BYTES = process.env.RING_BYTES === undefined ? undefined : Number(process.env.RING_BYTES)
const TOKEN = 'bench-token'
const BROWSER = 'bench-browser'
/** ms on CLOCK_MONOTONIC (libuv's hrtime): the same clock in every process of the machine. */
const mono = (): number => {
  const [s, ns] = process.hrtime()
  return s * 1e3 + ns / 1e6
}
const cpuS = (): number => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}

// Messages between the bench's processes: each kind carries its own figures, read where they are used.
type Msg = { kind: string; [k: string]: any }
function next(child: ChildProcess, kind: string): Promise<Msg> {
  return new Promise(resolve => {
    const on = (m: Msg) => {
      if (m.kind === kind) {
        child.off('message', on)
        resolve(m)
      }
    }
    child.on('message', on)
  })
}
const ask = (child: ChildProcess, m: Msg): Promise<Msg> => {
  const p = next(child, m.kind)
  child.send(m)
  return p
}

// Latency histogram: 0.1 ms buckets up to 60 s (sparse when sent between processes).
const BUCKET_MS = 0.1
const BUCKETS = 600_000
class Histogram {
  readonly counts = new Uint32Array(BUCKETS + 1)
  max = 0
  n = 0
  add(ms: number): void {
    this.counts[Math.min(BUCKETS, Math.max(0, Math.floor(ms / BUCKET_MS)))]!++
    if (ms > this.max) this.max = ms
    this.n++
  }
  toSparse(): { pairs: number[]; max: number } {
    const pairs: number[] = []
    for (let i = 0; i <= BUCKETS; i++) if (this.counts[i]) pairs.push(i, this.counts[i]!)
    return { pairs, max: this.max }
  }
  merge(s: { pairs: number[]; max: number }): void {
    for (let i = 0; i < s.pairs.length; i += 2) {
      this.counts[s.pairs[i]!]! += s.pairs[i + 1]!
      this.n += s.pairs[i + 1]!
    }
    this.max = Math.max(this.max, s.max)
  }
  /** Upper edge of the bucket holding the p-quantile. */
  pct(p: number): number {
    const rank = Math.ceil(this.n * p)
    let seen = 0
    for (let i = 0; i <= BUCKETS; i++) {
      seen += this.counts[i]!
      if (seen >= rank) return Math.min((i + 1) * BUCKET_MS, this.max)
    }
    return this.max
  }
}

// ------------------------------------------------------------------ client process
interface ClientState {
  validating: boolean
  /** The id the next frame header must carry (0: not known yet, the first frame of a 'new' stream). */
  next: number
  /** Frames complete and counted. */
  count: number
  errors: string[]
  /** Per read that completed frames: the last id it completed, and when it was read. */
  lastSeqs: number[]
  times: number[]
  reconnects: number
  /** Stops reading now and then (STALL): its latency is not in the figures. */
  stalls?: boolean
}

const MARK = Buffer.from('\nid: ') // starts every frame header, chunk boundaries included ("\r\n<size>\r\nid: ")
const FRAME_END = Buffer.from('}\n\n') // data is a JSON object; comments (keepalive, lagging) never end so
const HEAD_END = Buffer.from('\r\n\r\n')

/**
 * A lean SSE reader over the raw bytes of an HTTP/1.1 response (chunk-size lines included), for a
 * client that must not cost more than the daemon it measures: per frame one Buffer.indexOf for its
 * header and one for the end of its id; only the first and the last id of a read are parsed. Per
 * read: its frame headers must carry consecutive ids following the previous read's, counted frames
 * = last - first + 1. A frame counts as delivered once its end has been read.
 */
function leanScanner(st: ClientState, fail: (msg: string) => void) {
  /** Bytes of the previous read that may begin a header not complete yet (at most a header's length). */
  let carry: Buffer = Buffer.alloc(0)
  /** Id of the frame whose header was read but not its end (-1: none). */
  let open = -1
  const idOf = (buf: Buffer, at: number, nl: number) => Number(buf.toString('latin1', at + MARK.length, nl))
  const scanner = {
    /** Where a resumed stream starts: after the last complete frame. */
    resumeAfter: (): number => (open >= 0 ? open - 1 : st.next - 1),
    reset(): void {
      if (open >= 0) st.next = open
      open = -1
      carry = Buffer.alloc(0)
    },
    read(buf: Buffer, t: number): void {
      let marks = 0
      let firstId = -1
      let lastId = -1
      let lastNl = -1
      let pos = 0
      // A header cut by the previous read's end: look at its carried bytes joined with this read's head.
      if (carry.length > 0) {
        const edge = Buffer.concat([carry, buf.subarray(0, 32)])
        const p = edge.indexOf(MARK)
        if (p >= 0 && p < carry.length) {
          const nl = edge.indexOf(10, p + MARK.length)
          if (nl < 0) {
            carry = Buffer.from(edge.subarray(p))
            return
          } // a read of a few bytes
          firstId = lastId = idOf(edge, p, nl)
          marks = 1
          pos = nl + 1 - carry.length
          lastNl = pos - 1
        }
      }
      // One Buffer.indexOf per frame (header to header); only the first and the last header's
      // newline is looked for. A header is complete when its newline is in this read.
      let p = buf.indexOf(MARK, pos)
      let cut = -1
      let lastAt = -1
      let prevAt = -1
      while (p >= 0) {
        if (firstId < 0) {
          const nl = buf.indexOf(10, p + MARK.length)
          if (nl < 0) {
            cut = p
            break
          }
          firstId = idOf(buf, p, nl)
        }
        marks++
        prevAt = lastAt
        lastAt = p
        p = buf.indexOf(MARK, p + MARK.length)
      }
      if (lastAt >= 0 && buf.indexOf(10, lastAt + MARK.length) < 0) {
        // The last header is cut by the end of this read: it is carried into the next (the one before it is complete).
        cut = lastAt
        marks--
        lastAt = prevAt
      }
      if (lastAt >= 0) {
        lastNl = buf.indexOf(10, lastAt + MARK.length)
        pos = lastNl + 1
      }
      if (lastAt >= 0) lastId = idOf(buf, lastAt, lastNl)
      // The open frame ends before this read's first header, or with a frame end in this read.
      const openDone = open >= 0 && (marks > 0 || Buffer.concat([carry, buf]).indexOf(FRAME_END) >= 0)
      carry = Buffer.from(cut >= 0 ? buf.subarray(cut) : buf.subarray(Math.max(pos, buf.length - (MARK.length - 1))))
      if (marks === 0) {
        if (openDone) {
          st.count++
          st.lastSeqs.push(open)
          st.times.push(t)
          open = -1
        }
        return
      }
      const expected = open >= 0 ? open + 1 : st.next
      if (expected !== 0 && firstId !== expected) fail(`expected ${expected}, got ${firstId}`)
      if (lastId - firstId + 1 !== marks) fail(`ids ${firstId}..${lastId} in ${marks} frame headers`)
      const lastDone = buf.indexOf(FRAME_END, lastNl) >= 0
      const from = openDone ? open : firstId
      const to = lastDone ? lastId : lastId - 1
      open = lastDone ? -1 : lastId
      st.next = lastId + 1
      if (to >= from) {
        st.count += to - from + 1
        st.lastSeqs.push(to)
        st.times.push(t)
      }
    },
  }
  return scanner
}

function clientsProcess(url: string, n: number, validating: number): void {
  process.on('uncaughtException', err => {
    console.error('clients process crashed:', err)
    process.exit(1)
  })
  const states: ClientState[] = []
  let stopping = false
  const { hostname, port } = new URL(url)
  const path = `/browsers/${BROWSER}/telemetry/stream`
  // Every lean socket of this process reads into this one buffer: each read is scanned before the next.
  const readBuffer = Buffer.allocUnsafe(256 * 1024)

  // Lean: a raw socket, HTTP/1.1 request written by hand, response scanned in place (leanScanner).
  const [stallN, stallMs, stallEvery] = (process.env.STALL ?? '0:0:0').split(':').map(Number) as [
    number,
    number,
    number,
  ]
  let stalled = 0
  const openLean = (st: ClientState, fail: (msg: string) => void) => {
    const scanner = leanScanner(st, fail)
    let current: ReturnType<typeof netConnect> | undefined
    if (stalled < stallN) {
      stalled++
      st.stalls = true
      setInterval(() => {
        if (stopping) return
        current?.pause()
        setTimeout(() => current?.resume(), stallMs)
      }, stallEvery)
    }
    const connect = () => {
      let head: Buffer | undefined = Buffer.alloc(0) // until the status line and headers are read
      const lastEventId = st.next > 0 ? `Last-Event-ID: ${scanner.resumeAfter()}\r\n` : ''
      const sock = (current = netConnect(
        {
          host: hostname,
          port: Number(port),
          onread: {
            buffer: readBuffer,
            callback: (size: number, buf: Uint8Array) => {
              const t = mono()
              let body = (buf as Buffer).subarray(0, size)
              if (head) {
                head = Buffer.concat([head, body])
                const end = head.indexOf(HEAD_END)
                if (end < 0) return true
                if (!head.subarray(0, 16).toString('latin1').startsWith('HTTP/1.1 200 '))
                  fail(`response: ${head.toString('latin1', 0, head.indexOf(13))}`)
                body = head.subarray(end + 2) // keeps "\r\n": the first chunk-size line is then followed by a MARK
                head = undefined
              }
              scanner.read(body, t)
              return true
            },
          },
        },
        () =>
          sock.write(
            `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: ` +
              `text/event-stream\r\n${lastEventId}Connection: close\r\n\r\n`,
          ),
      ))
      sock.on('error', () => {
        /* reported through close */
      })
      sock.on('close', () => {
        if (!stopping) {
          st.reconnects++
          scanner.reset()
          connect()
        }
      })
    }
    connect()
  }

  // Validating: node:http, every frame through eventsource-parser; its data must be envelope `id`.
  const openValidating = (st: ClientState, fail: (msg: string) => void) => {
    const connect = () => {
      const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' }
      if (st.next > 0) headers['last-event-id'] = String(st.next - 1)
      const decoder = new TextDecoder()
      let lastInChunk = -1
      const parser = createParser({
        onEvent: ev => {
          const id = Number(ev.id)
          if (st.next !== 0 && id !== st.next) fail(`validating client: expected ${st.next}, got ${ev.id}`)
          let seq: unknown
          try {
            seq = (JSON.parse(ev.data) as { seq?: unknown }).seq
          } catch {
            fail(`validating client: frame ${ev.id}: data is not JSON`)
          }
          if (seq !== id) fail(`validating client: frame ${ev.id} carries seq ${String(seq)}`)
          st.next = id + 1
          st.count++
          lastInChunk = id
        },
        onError: err => fail(`validating client: ${err.message}`),
      })
      const req = request(`${url}${path}`, { headers, agent: false }, res => {
        if (res.statusCode !== 200) fail(`status ${res.statusCode}`)
        res.on('data', (chunk: Buffer) => {
          const t = mono()
          lastInChunk = -1
          parser.feed(decoder.decode(chunk, { stream: true }))
          if (lastInChunk >= 0) {
            st.lastSeqs.push(lastInChunk)
            st.times.push(t)
          }
        })
        res.on('close', () => {
          if (!stopping) {
            st.reconnects++
            connect()
          }
        })
      })
      req.on('error', () => {
        /* reported through close */
      })
      req.end()
    }
    connect()
  }

  for (let i = 0; i < n; i++) {
    const st: ClientState = {
      validating: i < validating,
      next: 0,
      count: 0,
      errors: [],
      lastSeqs: [],
      times: [],
      reconnects: 0,
    }
    states.push(st)
    const fail = (msg: string) => {
      if (st.errors.length < 5) st.errors.push(msg)
    }
    if (st.validating) openValidating(st, fail)
    else openLean(st, fail)
  }
  let cpu0 = 0
  process.on('message', (m: Msg) => {
    if (m.kind === 'mark') {
      cpu0 = cpuS()
      process.send!({ kind: 'mark' })
    } else if (m.kind === 'progress') {
      process.send!({
        kind: 'progress',
        minDone: Math.min(...states.map(s => (s.lastSeqs.length > 0 ? s.lastSeqs[s.lastSeqs.length - 1]! : 0))),
        errors: states.flatMap(s => s.errors).slice(0, 5),
        cpuS: cpuS() - cpu0,
      })
    } else if (m.kind === 'report') {
      // Delay of every event at every client = time its chunk was read - its emit time.
      const emitAt: number[] = m.emitAt
      const first: number = m.firstSeq
      const h = new Histogram()
      for (const s of states) {
        if (s.stalls) continue
        let prev = first - 1
        for (let c = 0; c < s.lastSeqs.length; c++) {
          const last = s.lastSeqs[c]!
          for (let seq = Math.max(prev + 1, first); seq <= last; seq++) h.add(s.times[c]! - emitAt[seq - first]!)
          prev = last
        }
      }
      process.send!({
        kind: 'report',
        counts: states.map(s => s.count),
        validatedCounts: states.filter(s => s.validating).map(s => s.count),
        reconnects: states.reduce((a, s) => a + s.reconnects, 0),
        errors: states.flatMap(s => s.errors).slice(0, 5),
        hist: h.toSparse(),
        rssMb: process.memoryUsage().rss / 1048576,
      })
    } else if (m.kind === 'quiet') {
      stopping = true
      process.send!({ kind: 'quiet' })
    } else if (m.kind === 'stop') process.exit(0)
  })
  process.send!({ kind: 'started' })
}

// ------------------------------------------------------------------ daemon process (compiled code, plain node)
// Runs the compiled daemon modules from dist/ so its RSS and CPU are the daemon's, not tsx's.
const root = join(import.meta.dirname, '..')
const dist = (p: string) => JSON.stringify(pathToFileURL(join(root, 'dist', p)).href)
const DAEMON = `
import { EventLog } from ${dist('src/store/event-log.js')}
import { Pipeline } from ${dist('src/pipeline/pipeline.js')}
import { CONFIGURABLE_CATEGORIES } from ${dist('src/events/index.js')}
import { createApiApp } from ${dist('src/api/app.js')}
import { ALL_SCOPES, TokenSet } from ${dist('src/api/auth.js')}
import { startApiServer } from ${dist('src/api/server.js')}
const [dir, template] = process.argv.slice(-2)
const mono = ${mono.toString()}
const cpuS = ${cpuS.toString()}
const log = await EventLog.open({ path: dir, retentionIntervalMs: 0, maxBytes: 64 * 1024 ** 3 })
const pipeline = new Pipeline({ log, categories: CONFIGURABLE_CATEGORIES, shedding: false }) // synthetic floods: no shedding gaps
const tokens = new TokenSet()
tokens.add(${JSON.stringify(TOKEN)}, ALL_SCOPES)
const app = createApiApp({ browserId: ${JSON.stringify(BROWSER)}, log, pipeline, tokens, streams: { maxClients: ${CLIENTS}, coalesceMs: ${COALESCE_MS}, bufferBytes: ${BUFFER_BYTES}, ringBytes: ${RING_BYTES} } }) // the default cap (64) would refuse the 100 clients
const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
const base = JSON.parse(template)
let peak = process.memoryUsage().rss
setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 100).unref()
const idleRss = process.memoryUsage().rss
const emitAt = []
let firstSeq = 0
let cpu0 = 0
process.on('message', async (m) => {
  if (m.kind === 'streams') {
    while (app.streams.size < m.clients) await new Promise((r) => setTimeout(r, 20))
    process.send({ kind: 'streams' })
  } else if (m.kind === 'run') {
    peak = process.memoryUsage().rss
    cpu0 = cpuS()
    firstSeq = log.lastSeq + 1
    const total = m.rate * m.seconds
    let emitted = 0
    const start = mono()
    await new Promise((resolve) => {
      const tick = () => {
        const target = Math.min(total, Math.floor(((mono() - start) / 1000) * m.rate))
        while (emitted < target) {
          const r = pipeline.emit({ ...base, data: { ...base.data, request_id: '1234.' + emitted, url: base.data.url + emitted } })
          emitAt[r.accepted - firstSeq] = mono()
          emitted++
        }
        if (emitted >= total) resolve()
        else setTimeout(tick, 2)
      }
      tick()
    })
    const achievedRate = total / ((mono() - start) / 1000)
    await log.flush()
    process.send({ kind: 'run', total, firstSeq, lastSeq: log.lastSeq, achievedRate })
  } else if (m.kind === 'cpu') {
    process.send({ kind: 'cpu', cpuS: cpuS() - cpu0 })
  } else if (m.kind === 'finish') {
    // Wait until the (large) message is handed over: exiting right after send() would drop it.
    await new Promise((r) => process.send({ kind: 'finish', emitAt, peakRssMb: peak / 1048576, idleRssMb: idleRss / 1048576, slowDisconnects: app.streams.stats.slowDisconnects, ringResumes: app.streams.stats.ringResumes ?? 0, storeResumes: app.streams.stats.storeResumes ?? 0 }, r))
    await server.close(500)
    await log.close()
    process.exit(0)
  }
})
process.send({ kind: 'ready', url: server.url })
`

/** Busy and total jiffies of the whole machine (every process, other users' too). */
function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'latin1').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = f.reduce((a, b) => a + b, 0)
  return { busy: total - f[3]! - (f[4] ?? 0), total } // minus idle and iowait
}

interface RunResult {
  ok: boolean
  events: number
  minCount: number
  maxCount: number
  validated: number
  p50: number
  p99: number
  max: number
  peakRssMb: number
  idleRssMb: number
  achievedRate: number
  slowDisconnects: number
  reconnects: number
  ringResumes: number
  storeResumes: number
  wallS: number
  daemonCpuS: number
  clientCpuS: number
  machineBusyCores: number
}

async function run(nClients: number): Promise<RunResult> {
  return withTempDir(async dir => {
    const daemon = spawn(
      process.execPath,
      [
        ...(process.env.DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean),
        '--input-type=module',
        '-e',
        DAEMON,
        '--',
        join(dir, 'log'),
        JSON.stringify(realisticEvent(0)),
      ],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    )
    const daemonExited = new Promise(r => daemon.once('exit', r))
    const ready = await next(daemon, 'ready')
    const procs = Math.min(PROCS, nClients)
    const kids: ChildProcess[] = []
    let validating = Math.min(VALIDATE, nClients)
    for (let p = 0; p < procs; p++) {
      const n = Math.floor(nClients / procs) + (p < nClients % procs ? 1 : 0)
      // Validating clients spread over the processes (the first of each), so none carries them all.
      const v = Math.min(n, Math.ceil(validating / (procs - p)))
      validating -= v
      kids.push(
        fork(fileURLToPath(import.meta.url), ['--clients', ready.url, String(n), String(v)], {
          execArgv: ['--import', 'tsx', ...(process.env.CLIENT_NODE_ARGS ?? '').split(' ').filter(Boolean)],
        }),
      )
    }
    await Promise.all(kids.map(k => next(k, 'started')))
    await ask(daemon, { kind: 'streams', clients: nClients })
    await Promise.all(kids.map(k => ask(k, { kind: 'mark' })))
    const m0 = machineTicks()
    const t0 = mono()
    const emitted = await ask(daemon, { kind: 'run', rate: RATE, seconds: SECONDS })
    if (process.env.BENCH_DEBUG) console.error('emitted', emitted.total, emitted.achievedRate)
    // Wait until every client has the last event (or progress stops for 15 s).
    let lastMin = -1
    let stalledSince = mono()
    let clientCpuS = 0
    for (;;) {
      const ps = await Promise.all(kids.map(k => ask(k, { kind: 'progress' })))
      const minDone = Math.min(...ps.map(p => p.minDone))
      const errors = ps.flatMap(p => p.errors)
      clientCpuS = ps.reduce((a, p) => a + p.cpuS, 0)
      if (process.env.BENCH_DEBUG)
        console.error('progress', fmt(mono() - t0, 0), minDone, emitted.lastSeq, fmt(clientCpuS, 1), errors)
      if (minDone >= emitted.lastSeq || errors.length > 0) break
      if (minDone !== lastMin) {
        lastMin = minDone
        stalledSince = mono()
      }
      if (mono() - stalledSince > 15_000) break
      await new Promise(r => setTimeout(r, 50))
    }
    const wallS = (mono() - t0) / 1000
    const m1 = machineTicks()
    const { cpuS: daemonCpuS } = await ask(daemon, { kind: 'cpu' })
    await Promise.all(kids.map(k => ask(k, { kind: 'quiet' }))) // the daemon is about to close: no more resumes
    const fin = await ask(daemon, { kind: 'finish' })
    const reps = await Promise.all(
      kids.map(k => ask(k, { kind: 'report', emitAt: fin.emitAt, firstSeq: emitted.firstSeq })),
    )
    for (const k of kids) k.send({ kind: 'stop' })
    await daemonExited
    const h = new Histogram()
    for (const r of reps) h.merge(r.hist)
    const counts: number[] = reps.flatMap(r => r.counts)
    const errors: string[] = reps.flatMap(r => r.errors)
    const ok = errors.length === 0 && counts.every(c => c === emitted.total)
    if (!ok)
      console.log(
        `  incomplete: per-client counts ${JSON.stringify([...new Set(counts)].slice(0, 10))} of ${emitted.total}, errors ` +
          `${JSON.stringify(errors.slice(0, 5))}`,
      )
    return {
      ok,
      events: emitted.total,
      minCount: Math.min(...counts),
      maxCount: Math.max(...counts),
      validated: reps.reduce((a, r) => a + r.validatedCounts.length, 0),
      p50: h.pct(0.5),
      p99: h.pct(0.99),
      max: h.max,
      peakRssMb: fin.peakRssMb,
      idleRssMb: fin.idleRssMb,
      achievedRate: emitted.achievedRate,
      slowDisconnects: fin.slowDisconnects,
      ringResumes: fin.ringResumes,
      storeResumes: fin.storeResumes,
      reconnects: reps.reduce((a, r) => a + r.reconnects, 0),
      wallS,
      daemonCpuS,
      clientCpuS,
      machineBusyCores: ((m1.busy - m0.busy) / (m1.total - m0.total)) * cpus().length,
    }
  })
}

if (process.argv[2] === '--clients') {
  clientsProcess(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]))
} else {
  try {
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
  } catch {
    console.log('(tsc reported errors elsewhere in the tree; using what it emitted into dist/)')
  }
  console.log(
    `${CLIENTS} SSE clients in ${PROCS} processes (${VALIDATE} validating through eventsource-parser) vs 1 (baseline), ${RATE} events/s for ${SECONDS} s, ` +
      `${RUNS} runs, ${cpus().length} cores, live writes coalesced over ${COALESCE_MS ?? 'the default'} ms, client buffer ${BUFFER_BYTES ?? 'default'} B, ` +
      `ring ${RING_BYTES ?? 'default'} B`,
  )
  const main: RunResult[] = []
  const base: RunResult[] = []
  const line = (r: RunResult) =>
    `ok=${r.ok} delivered ${r.minCount}..${r.maxCount} of ${r.events} per client; emit-to-client p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, max ` +
    `${fmt(r.max, 0)} ms; ` +
    `CPU over ${fmt(r.wallS, 1)} s: daemon ${fmt(r.daemonCpuS, 1)} s, clients ${fmt(r.clientCpuS, 1)} s, machine ${fmt(r.machineBusyCores, 2)} of ` +
    `${cpus().length} cores busy; ` +
    `rate ${fmt(r.achievedRate, 0)}/s; RSS peak ${fmt(r.peakRssMb, 0)} MB (idle ${fmt(r.idleRssMb, 0)}); slow-client disconnects ${r.slowDisconnects} ` +
    `(resumed: ${r.reconnects}; from the ring ${r.ringResumes}, from the store ${r.storeResumes})`
  for (let i = 0; i < RUNS; i++) {
    if (BASELINE) {
      const b = await run(1)
      base.push(b)
      console.log(`run ${i + 1}: 1 client:  ${line(b)}`)
    }
    const m = await run(CLIENTS)
    main.push(m)
    console.log(`run ${i + 1}: ${CLIENTS} clients: ${line(m)}`)
  }
  const med = (rs: RunResult[], k: keyof RunResult) => median(rs.map(r => r[k] as number))
  console.log(
    `every client got every event exactly once, in order (with resumes): ${main.every(r => r.ok) ? 'yes, all runs' : 'NO'}`,
  )
  console.log(
    `${CLIENTS} clients, medians: emit-to-client p50 ${fmt(med(main, 'p50'), 1)} ms, p99 ${fmt(med(main, 'p99'), 1)} ms (goal <= 100), max ` +
      `${fmt(med(main, 'max'), 0)} ms; ` +
      `daemon CPU ${fmt(med(main, 'daemonCpuS'), 1)} s, clients CPU ${fmt(med(main, 'clientCpuS'), 1)} s, machine ` +
      `${fmt(med(main, 'machineBusyCores'), 2)} cores busy over ${fmt(med(main, 'wallS'), 1)} s; peak daemon RSS ${fmt(med(main, 'peakRssMb'), 0)} MB ` +
      `(goal <= 200)`,
  )
  if (BASELINE) {
    console.log(
      `1 client (baseline), medians: p50 ${fmt(med(base, 'p50'), 1)} ms, p99 ${fmt(med(base, 'p99'), 1)} ms; daemon CPU ` +
        `${fmt(med(base, 'daemonCpuS'), 1)} s; peak RSS ${fmt(med(base, 'peakRssMb'), 0)} MB`,
    )
    console.log(`ratio p99 ${CLIENTS} clients / 1 client = ${fmt(med(main, 'p99') / med(base, 'p99'), 2)}`)
  }
}
