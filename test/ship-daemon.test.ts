// Fleet shipping wired into the daemon: /healthz and /metrics, bad credentials, and a real daemon
// process killed with -9 mid-run (a real nats-server throughout; no browser: --no-browser).
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import type { Test } from 'tap'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { EventLog } from '../src/store/event-log.js'
import { waitFor } from './helpers/http.js'
import { assertExactlyOnce, startNatsServer, type NatsServer } from './helpers/nats.js'
import { closedPort } from './helpers/ports.js'
import { tempDir } from './helpers/store.js'

const TOKEN = 'ship-test-token'
const repo = join(import.meta.dirname, '..')

async function natsServer(t: Test, args: string[] = []): Promise<NatsServer> {
  const s = await startNatsServer({ args })
  t.teardown(() => s.dispose())
  return s
}

/** A pino logger whose JSON lines land in `lines`. */
function captureLogger(lines: Record<string, unknown>[]) {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l))
        cb()
      },
    }),
  )
}

interface SinkRecord {
  state: string
  acked_seq?: number
  last_error?: string
  lag_events?: number
}
interface Health {
  sinks: { nats?: SinkRecord }
  store: { lastSeq: number }
}
const health = async (url: string) => (await (await fetch(`${url}/healthz`)).json()) as Health
/** The NATS sink's /healthz record (the test fails if it is missing). */
const natsSink = async (url: string): Promise<SinkRecord & { store: Health['store'] }> => {
  const h = await health(url)
  return { ...(h.sinks.nats ?? { state: 'missing' }), store: h.store }
}

async function post(url: string, browserId: string, i: number): Promise<number> {
  const res = await fetch(`${url}/browsers/${browserId}/telemetry/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'live_view_connect',
      source: { kind: 'local_process', event: 'test' },
      data: { session_id: `s${i}` },
    }),
  })
  await res.arrayBuffer()
  return res.status
}

t.test(
  'bad credentials: clear error in the log and /healthz, no crash; a fixed token file is picked up on the next attempt',
  async t => {
    const nats = await natsServer(t, ['--auth', 'right-token'])
    const dir = await tempDir(t)
    const tokenFile = join(dir, 'nats-token')
    await writeFile(tokenFile, 'wrong-token\n')
    const lines: Record<string, unknown>[] = []
    const d = await startDaemon(
      parseServeConfig(
        [
          '--listen',
          '127.0.0.1:0',
          '--data-dir',
          join(dir, 'data'),
          '--no-browser',
          '--proxy-listen',
          'off',
          '--token',
          TOKEN,
          '--browser-id',
          'vm-auth',
          '--nats-url',
          nats.url,
          '--nats-token-file',
          tokenFile,
        ],
        {},
      ),
      { logger: captureLogger(lines), announce: () => undefined },
    )
    t.teardown(() => d.close())
    const h = await waitFor(
      async () => {
        const h = await natsSink(d.url)
        return h.last_error ? h : undefined
      },
      10_000,
      'a shipping error in /healthz',
    )
    t.equal(h.state, 'reconnecting')
    t.match(h.last_error, /^cannot connect to NATS \(nats:\/\/127\.0\.0\.1:\d+\): .*Authorization Violation/i)
    const logged = lines.find(l => l.module === 'ship' && l.level === 50)
    t.match(logged?.msg, /Authorization Violation/i, 'logged as an error by the ship module')
    t.notMatch(JSON.stringify(lines), /wrong-token/, 'the token never reaches the log')
    // Capture is unaffected.
    t.equal(await post(d.url, 'vm-auth', 1), 200)

    await writeFile(tokenFile, 'right-token\n')
    await waitFor(
      async () => (await natsSink(d.url)).state === 'connected',
      15_000,
      'shipping to connect with the fixed token',
    )
    await waitFor(
      async () => {
        const h = await natsSink(d.url)
        return h.acked_seq === h.store.lastSeq
      },
      10_000,
      'the event to be shipped',
    )

    const metrics = await (await fetch(`${d.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
    const lastSeq = (await health(d.url)).store.lastSeq
    t.match(metrics, `browser_telemetry_sink_state{sink="nats",state="connected"} 1`)
    t.match(metrics, `browser_telemetry_sink_state{sink="nats",state="reconnecting"} 0`)
    t.match(metrics, `browser_telemetry_sink_acked_seq{sink="nats"} ${lastSeq}`)
    t.match(metrics, /browser_telemetry_sink_delivered_events_total\{sink="nats"\} [1-9]\d*/)
    t.match(metrics, /browser_telemetry_sink_delivered_bytes_total\{sink="nats"\} [1-9]\d*/)
    t.match(metrics, /browser_telemetry_sink_errors_total\{sink="nats",kind="connect"\} [1-9]\d*/)
    t.match(metrics, 'browser_telemetry_sink_errors_total{sink="nats",kind="timeout"} 0')
    t.match(metrics, 'browser_telemetry_sink_lag_events{sink="nats"} 0')
    t.match(metrics, 'browser_telemetry_sink_lag_seconds{sink="nats"} 0')
    t.notMatch(metrics, 'browser_telemetry_ship_', 'NATS is counted once, as a sink')
  },
)

t.test('unreachable URL: the daemon starts at once, reports reconnecting; shipping off reports off', async t => {
  const dir = await tempDir(t)
  const port = await closedPort()
  const d = await startDaemon(
    parseServeConfig(
      [
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        join(dir, 'a'),
        '--no-browser',
        '--proxy-listen',
        'off',
        '--token',
        TOKEN,
        '--nats-url',
        `nats://127.0.0.1:${port}`,
      ],
      {},
    ),
    { logger: pino({ level: 'silent' }), announce: () => undefined },
  )
  t.teardown(() => d.close())
  const h = await waitFor(
    async () => {
      const h = await natsSink(d.url)
      return h.last_error ? h : undefined
    },
    10_000,
    'a shipping error',
  )
  t.equal(h.state, 'reconnecting')
  t.match(h.last_error, `cannot connect to NATS (nats://127.0.0.1:${port})`)
  const off = await startDaemon(
    parseServeConfig(
      [
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        join(dir, 'b'),
        '--no-browser',
        '--proxy-listen',
        'off',
        '--token',
        TOKEN,
      ],
      {},
    ),
    { logger: pino({ level: 'silent' }), announce: () => undefined },
  )
  t.teardown(() => off.close())
  t.same((await health(off.url)).sinks, {}, 'no destination: an empty sinks section')
  t.same(off.sinks.sinks, [])
})

interface DaemonProc {
  child: ChildProcess
  url: string
  exited: Promise<unknown>
}

async function spawnDaemon(dataDir: string, natsUrl: string): Promise<DaemonProc> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli.ts',
      'serve',
      '--no-browser',
      '--listen',
      '127.0.0.1:0',
      '--proxy-listen',
      'off',
      '--data-dir',
      dataDir,
      '--token',
      TOKEN,
      '--browser-id',
      'vm-kill',
      '--nats-url',
      natsUrl,
    ],
    { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const out: string[] = []
  child.stdout!.on('data', (d: Buffer) => out.push(String(d)))
  child.stderr!.on('data', (d: Buffer) => out.push(String(d)))
  const exited = new Promise(r => child.once('exit', r))
  const url = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode}: ${out.join('')}`)
      return /"url":"(http:\/\/127\.0\.0\.1:\d+)".*browser-telemetry listening/.exec(out.join(''))?.[1]
    },
    30_000,
    'the daemon to listen',
  )
  return { child, url, exited }
}

/** Posts events with `concurrency` parallel producers until stop() (or a request fails: the daemon died). */
function producers(url: string, concurrency: number) {
  let i = 0
  let stopped = false
  let ok = 0
  const run = async () => {
    while (!stopped) {
      try {
        if ((await post(url, 'vm-kill', i++)) === 200) ok++
      } catch {
        return
      }
    }
  }
  const all = Promise.all(Array.from({ length: concurrency }, run))
  return {
    stop: async () => {
      stopped = true
      await all
    },
    get ok() {
      return ok
    },
  }
}

t.test('daemon killed -9 mid-run and restarted: every stored event reaches the stream exactly once', async t => {
  const nats = await natsServer(t)
  const dataDir = join(await tempDir(t), 'data')
  const d1 = await spawnDaemon(dataDir, nats.url)
  t.teardown(() => {
    d1.child.kill('SIGKILL')
  })
  const p1 = producers(d1.url, 12)
  // Kill while events flow and publishes are in flight, once a good part has been acknowledged.
  await waitFor(async () => ((await natsSink(d1.url)).acked_seq ?? 0) >= 600, 30_000, '600 events shipped')
  d1.child.kill('SIGKILL')
  await d1.exited
  await p1.stop()
  t.ok(p1.ok >= 600, `${p1.ok} events accepted before the kill`)

  const d2 = await spawnDaemon(dataDir, nats.url)
  t.teardown(() => {
    d2.child.kill('SIGKILL')
  })
  const p2 = producers(d2.url, 4)
  await waitFor(() => p2.ok >= 300, 30_000, '300 more events')
  await p2.stop()
  await waitFor(
    async () => {
      const h = await natsSink(d2.url)
      return h.acked_seq === h.store.lastSeq
    },
    30_000,
    'shipping to catch up',
  )
  d2.child.kill('SIGTERM')
  await d2.exited

  const log = await EventLog.open({ path: join(dataDir, 'events'), retentionIntervalMs: 0 })
  t.teardown(() => log.close())
  t.ok(log.lastSeq >= p1.ok + p2.ok, `the log holds every accepted event (${log.lastSeq})`)
  await assertExactlyOnce(t, nats.url, log, 'vm-kill', 'BROWSER_TELEMETRY', 'telemetry')
})
