// A real nats-server (Debian package) with JetStream for tests and benches: 127.0.0.1, a random port,
// a temp store dir. Ready means the server printed "Server is ready" (an event, not a sleep).
// kill('SIGKILL') + start() again keeps the port and the store dir, like a crashed node coming back.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import type { Test } from 'tap'
import { subjectOf } from '../../src/ship/subject.js'
import type { EventLog, StoredRecord } from '../../src/store/event-log.js'

/** Found the way scripts/setup.sh looks for it: $NATS_SERVER_BIN, the Debian path, then PATH. */
export const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN ?? findNatsServer()

function findNatsServer(): string {
  if (existsSync('/usr/sbin/nats-server')) return '/usr/sbin/nats-server'
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'nats-server')
    if (dir && existsSync(p)) return p
  }
  return '/usr/sbin/nats-server' // not installed: the spawn error names the path
}

export interface NatsServerOptions {
  /** Extra flags, e.g. ['--auth', 'secret']. */
  args?: string[]
  port?: number
  storeDir?: string
}

export interface NatsServer {
  url: string
  port: number
  storeDir: string
  /** The running process (undefined while stopped). */
  proc: ChildProcess | undefined
  /** Starts (again) on the same port and store dir; resolves when it accepts clients. */
  start(): Promise<void>
  /** Sends the signal and waits for the process to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>
  /** Resident set size of the server in bytes (from /proc). */
  rssBytes(): Promise<number>
  /** Stops the server and removes its store dir. */
  dispose(): Promise<void>
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

export async function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServer> {
  const port = opts.port ?? (await freePort())
  const storeDir = opts.storeDir ?? (await mkdtemp(join(tmpdir(), 'bt-nats-')))
  let proc: ChildProcess | undefined
  const server: NatsServer = {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    get proc() {
      return proc
    },
    async start() {
      if (proc) throw new Error('nats-server already running')
      const child = spawn(
        NATS_SERVER_BIN,
        ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, ...(opts.args ?? [])],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      )
      proc = child
      child.once('exit', () => {
        if (proc === child) proc = undefined
      })
      await new Promise<void>((resolve, reject) => {
        let log = ''
        const onData = (chunk: Buffer) => {
          log += chunk.toString()
          if (log.includes('Server is ready')) {
            child.stderr!.off('data', onData)
            child.stderr!.resume()
            resolve()
          } else if (log.length > 1 << 20) log = log.slice(-4096)
        }
        child.stderr!.on('data', onData)
        child.once('error', reject)
        child.once('exit', code =>
          reject(new Error(`nats-server exited with ${code} before it was ready:\n${log.slice(-2000)}`)),
        )
      })
    },
    async kill(signal = 'SIGTERM') {
      const child = proc
      if (!child) return
      const exited = new Promise<void>(r => child.once('exit', () => r()))
      child.kill(signal)
      await exited
    },
    async rssBytes() {
      if (!proc?.pid) return 0
      const { readFile } = await import('node:fs/promises')
      const status = await readFile(`/proc/${proc.pid}/status`, 'utf8')
      const m = /VmRSS:\s+(\d+) kB/.exec(status)
      return m ? Number(m[1]) * 1024 : 0
    },
    async dispose() {
      await server.kill('SIGKILL')
      if (!opts.storeDir) await rm(storeDir, { recursive: true, force: true })
    },
  }
  await server.start()
  return server
}

export interface StreamedMessage {
  subject: string
  /** Stream sequence. */
  streamSeq: number
  msgId: string | undefined
  telemetrySeq: number
  browserId: string | undefined
  data: string
}

/** Every message of a stream (optionally one filter subject), in stream order, via an ordered consumer. */
export async function readStream(url: string, stream: string, filter?: string): Promise<StreamedMessage[]> {
  const { connect } = await import('@nats-io/transport-node')
  const { jetstream, jetstreamManager } = await import('@nats-io/jetstream')
  const nc = await connect({ servers: url })
  try {
    const jsm = await jetstreamManager(nc)
    const info = await jsm.streams.info(stream)
    const c = await jetstream(nc).consumers.get(stream, filter ? { filter_subjects: filter } : {})
    const out: StreamedMessage[] = []
    let pending = (await c.info(true)).num_pending
    if (info.state.messages === 0) return out
    while (pending > 0) {
      const batch = await c.fetch({ max_messages: Math.min(pending, 5000), expires: 5000 })
      let got = 0
      for await (const m of batch) {
        got++
        out.push({
          subject: m.subject,
          streamSeq: m.seq,
          msgId: m.headers?.get('Nats-Msg-Id'),
          telemetrySeq: Number(m.headers?.get('Telemetry-Seq')),
          browserId: m.headers?.get('Telemetry-Browser-Id'),
          data: m.string(),
        })
        pending = m.info.pending
      }
      if (got === 0) break
    }
    return out
  } finally {
    await nc.close()
  }
}

async function allRecords(log: EventLog): Promise<StoredRecord[]> {
  const out: StoredRecord[] = []
  let cursor = 0
  for (;;) {
    const page = await log.read({ order: 'asc', cursor, limit: 5000 })
    out.push(...page.records)
    if (!page.hasMore) return out
    cursor = page.nextCursor
  }
}

/** The stream holds every record of the log exactly once, in seq order, with the contract's subject, headers and payload. */
export async function assertExactlyOnce(
  t: Test,
  url: string,
  log: EventLog,
  browserId = 'vm-1',
  stream = 'BT',
  prefix = 'telemetry',
) {
  const records = await allRecords(log)
  const msgs = await readStream(url, stream)
  t.equal(msgs.length, records.length, `stream holds ${records.length} messages, one per stored event`)
  const seen = new Set<number>()
  let dups = 0
  let outOfOrder = 0
  let prev = 0
  for (const m of msgs) {
    if (seen.has(m.telemetrySeq)) dups++
    seen.add(m.telemetrySeq)
    if (m.telemetrySeq <= prev) outOfOrder++
    prev = m.telemetrySeq
  }
  t.equal(dups, 0, 'no duplicates')
  t.equal(outOfOrder, 0, 'stream order is seq order')
  const missing = records.filter(r => !seen.has(r.seq)).map(r => r.seq)
  t.same(missing.slice(0, 10), [], 'no stored event is missing from the stream')
  // Contract: subject, headers, payload byte-identical to the read API's JSON (checked for every message).
  const bySeq = new Map(records.map(r => [r.seq, r]))
  let bad = 0
  for (const m of msgs) {
    const r = bySeq.get(m.telemetrySeq)
    if (
      !r ||
      m.subject !== subjectOf(prefix, browserId, r.category) ||
      m.msgId !== `${browserId}:${r.seq}` ||
      m.browserId !== browserId ||
      m.data !== r.json
    ) {
      if (bad++ === 0) t.fail(`message ${m.streamSeq} differs: ${JSON.stringify({ m, r })}`)
    }
  }
  t.equal(bad, 0, 'every message: subject, Nats-Msg-Id, Telemetry-* headers and payload as the contract says')
}
