// A real nats-server (Debian package) with JetStream for tests and benches: 127.0.0.1, a port the
// server picks itself (-p -1, read back from its "Listening for client connections" line), a temp
// store dir. Ready means the server printed "Server is ready" (an event, not a sleep).
// kill('SIGKILL') + start() again keeps the port and the store dir, like a crashed node coming back.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import type { Test } from 'tap'
import { subjectOf } from '../../src/nats/subject.js'
import type { EventLog, StoredRecord } from '../../src/store/event-log.js'
import { reservedPort } from './ports.js'

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
  /** The client port; default: one the server picks (kept for a restart). */
  port?: number
  storeDir?: string
}

/** nats-server could not bind a port it was given (someone else holds it). */
export class PortInUseError extends Error {}

export interface NatsServer {
  readonly url: string
  readonly port: number
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

export async function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServer> {
  // -1: the server binds a port of its choosing; learnt from its log at the first start.
  let port = opts.port ?? -1
  const storeDir = opts.storeDir ?? (await mkdtemp(join(tmpdir(), 'bt-nats-')))
  let proc: ChildProcess | undefined
  const server: NatsServer = {
    get url() {
      return `nats://127.0.0.1:${port}`
    },
    get port() {
      return port
    },
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
          const bound = /Listening for client connections on 127\.0\.0\.1:(\d+)/.exec(log)
          if (bound && port === -1) port = Number(bound[1])
          if (log.includes('Server is ready')) {
            child.stderr!.off('data', onData)
            child.stderr!.resume()
            resolve()
          } else if (log.length > 1 << 20) log = log.slice(-4096)
        }
        child.stderr!.on('data', onData)
        child.once('error', reject)
        child.once('exit', code => {
          const why = `nats-server exited with ${code} before it was ready:\n${log.slice(-2000)}`
          reject(/address already in use/.test(log) ? new PortInUseError(why) : new Error(why))
        })
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
  try {
    await server.start()
  } catch (err) {
    if (!opts.storeDir) await rm(storeDir, { recursive: true, force: true })
    throw err
  }
  if (port === -1) throw new Error('nats-server did not say which client port it listens on')
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
export async function readStream(url: string | string[], stream: string, filter?: string): Promise<StreamedMessage[]> {
  const { connect } = await import('@nats-io/transport-node')
  const { jetstream, jetstreamManager } = await import('@nats-io/jetstream')
  const nc = await connect({ servers: url })
  try {
    const jsm = await jetstreamManager(nc)
    const info = await jsm.streams.info(stream)
    const c = await jetstream(nc).consumers.get(stream, filter ? { filter_subjects: filter } : {})
    const out: StreamedMessage[] = []
    // The stream's own count, not the consumer's pending figure: on a cluster node that is catching up
    // after a restart, pending can read 0 while messages remain.
    const total = filter ? (await c.info(true)).num_pending : info.state.messages
    for (let empty = 0; out.length < total && empty < 5;) {
      const batch = await c.fetch({ max_messages: Math.min(total - out.length, 5000), expires: 2000 })
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
      }
      empty = got === 0 ? empty + 1 : 0
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
  url: string | string[],
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
  if (missing.length > 0) {
    const { connect } = await import('@nats-io/transport-node')
    const { jetstreamManager } = await import('@nats-io/jetstream')
    const nc = await connect({ servers: url })
    const info = await (await jetstreamManager(nc)).streams.info(stream)
    await nc.close()
    t.comment(
      `read ${msgs.length} messages; the stream's info says ${info.state.messages} (seq ${info.state.first_seq}-${info.state.last_seq}); missing ${missing.length}: ${missing.slice(0, 5).join(',')} .. ${missing.slice(-5).join(',')}`,
    )
  }
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

/**
 * A JetStream cluster needs every node's route port in every node's flags before any starts, so
 * these cannot be picked by the servers: they are taken outside the kernel's ephemeral range
 * (test/helpers/ports.ts), where no test's listen(0) can land. A port someone holds all the same
 * makes that node fail at once ("address already in use"): the nodes are stopped and the cluster
 * is started again on other ports, at most 3 times.
 */
async function startClusterNodes(size: number, name: string): Promise<NatsServer[]> {
  for (let attempt = 1; ; attempt++) {
    const routePorts: number[] = []
    while (routePorts.length < size) {
      const p = await reservedPort()
      if (!routePorts.includes(p)) routePorts.push(p)
    }
    const routes = routePorts.map(p => `nats://127.0.0.1:${p}`).join(',')
    const started = await Promise.allSettled(
      routePorts.map((routePort, i) =>
        startNatsServer({
          args: [
            '-n',
            `${name}-${i}`,
            '--cluster_name',
            name,
            '--cluster',
            `nats://127.0.0.1:${routePort}`,
            '--routes',
            routes,
          ],
        }),
      ),
    )
    const nodes = started.flatMap(r => (r.status === 'fulfilled' ? [r.value] : []))
    if (nodes.length === size) return nodes
    await Promise.all(nodes.map(n => n.dispose()))
    const errors = started.flatMap(r => (r.status === 'rejected' ? [r.reason as Error] : []))
    if (attempt === 3 || !errors.every(e => e instanceof PortInUseError)) throw errors[0]!
  }
}

export interface NatsCluster {
  nodes: NatsServer[]
  /** Every node's client URL. */
  urls: string[]
  /** Resolves once JetStream answers through every running node (after a start or a restart). */
  ready(): Promise<void>
  /** Resolves once every replica of `stream` is current with its leader (a restarted node has caught up). */
  caughtUp(stream: string): Promise<void>
  /** The live node that leads `stream` (asked of the live nodes, for up to 30 s; undefined if none says). */
  leaderOf(stream: string): Promise<NatsServer | undefined>
  dispose(): Promise<void>
}

/**
 * `size` nats-server processes in one JetStream cluster on 127.0.0.1 (client ports picked by each
 * server, a temp store dir each). Resolves once JetStream answers through every node (the meta
 * leader is elected).
 */
export async function startNatsCluster(size = 3, name = 'bt-cluster'): Promise<NatsCluster> {
  const nodes = await startClusterNodes(size, name)
  const urls = nodes.map(n => n.url)
  const { connect } = await import('@nats-io/transport-node')
  const { jetstreamManager } = await import('@nats-io/jetstream')
  const ask = async <T>(url: string, fn: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<T>) => {
    const nc = await connect({ servers: url, timeout: 2000 })
    try {
      return await fn(await jetstreamManager(nc, { timeout: 2000 }))
    } finally {
      await nc.close()
    }
  }
  const ready = async () => {
    const deadline = Date.now() + 60_000
    for (const n of nodes)
      while (n.proc) {
        try {
          await ask(n.url, jsm => jsm.getAccountInfo())
          break
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`JetStream cluster not ready in 60 s: ${(err as Error).message}`)
          await new Promise(r => setTimeout(r, 100))
        }
      }
  }
  await ready()
  return {
    nodes,
    urls,
    ready,
    async caughtUp(stream) {
      const deadline = Date.now() + 60_000
      for (;;) {
        const running = nodes.filter(n => n.proc)
        try {
          const info = await ask(running[0]!.url, jsm => jsm.streams.info(stream))
          const replicas = info.cluster?.replicas ?? []
          if (
            info.cluster?.leader &&
            replicas.length === running.length - 1 &&
            replicas.every(r => r.current && !r.offline && (r.lag ?? 0) === 0)
          )
            return
        } catch {
          /* electing */
        }
        if (Date.now() > deadline) throw new Error(`the replicas of ${stream} did not catch up in 60 s`)
        await new Promise(r => setTimeout(r, 100))
      }
    },
    async leaderOf(stream) {
      // Asked until a live node names one (an election, or a node too busy to answer in time, says nothing).
      const deadline = Date.now() + 30_000
      while (Date.now() < deadline) {
        for (const n of nodes) {
          if (!n.proc) continue
          try {
            const leader = await ask(n.url, async jsm => (await jsm.streams.info(stream)).cluster?.leader)
            const node = nodes.find((_, i) => leader === `${name}-${i}`)
            if (node?.proc) return node
          } catch {
            /* this node cannot say now; ask the next */
          }
        }
        await new Promise(r => setTimeout(r, 100))
      }
      return undefined
    },
    async dispose() {
      await Promise.all(nodes.map(n => n.dispose()))
    },
  }
}
