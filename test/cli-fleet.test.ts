// `browser-telemetry fleet tail|read` against a real nats-server fed by two shippers (two "VMs").
import t from 'tap'
import type { Test } from 'tap'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { formatEnvelope } from '../src/cli/format.js'
import type { Envelope } from '../src/events/index.js'
import type { EmitResult, EventInput, Pipeline } from '../src/pipeline/pipeline.js'
import { Shipper } from '../src/ship/shipper.js'
import type { EventLog } from '../src/store/event-log.js'
import { startNatsServer } from './helpers/nats.js'
import { closedPort } from './helpers/ports.js'
import { openStore } from './helpers/store.js'

/** The commit promise of an accepted event; a dropped one fails loudly (nothing here should be dropped). */
function committedOf(r: EmitResult): Promise<boolean> {
  if (r.dropped !== undefined) throw new Error(`event dropped: ${r.dropped}`)
  return r.committed
}

const fleet = clientCommands.fleet!

interface Captured {
  io: CliIO
  out: () => string
  err: () => string
  abort: AbortController
  wrote: (fn: () => void) => void
}
function capture(): Captured {
  let out = ''
  let err = ''
  const abort = new AbortController()
  let onWrite: (() => void) | undefined
  const io: CliIO = {
    stdout: {
      write: c => {
        out += typeof c === 'string' ? c : Buffer.from(c).toString()
        onWrite?.()
        return true
      },
    },
    stderr: {
      write: c => {
        err += String(c)
        return true
      },
    },
    env: {},
    signal: abort.signal,
  }
  return {
    io,
    out: () => out,
    err: () => err,
    abort,
    wrote: fn => {
      onWrite = fn
    },
  }
}

async function vm(
  t: Test,
  url: string,
  browserId: string,
): Promise<{ log: EventLog; pipeline: Pipeline; shipper: Shipper }> {
  const { log, pipeline } = await openStore(t)
  const shipper = new Shipper({
    log,
    browserId,
    nats: { servers: [url] },
    stream: 'BT',
    subjectPrefix: 'telemetry',
    limits: { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 },
  })
  t.teardown(() => shipper.stop())
  await shipper.start()
  return { log, pipeline, shipper }
}

async function emitAndShip(
  v: { log: EventLog; pipeline: Pipeline; shipper: Shipper },
  inputs: EventInput[],
): Promise<void> {
  let last: Promise<boolean> = Promise.resolve(true)
  for (const i of inputs) last = committedOf(v.pipeline.emit(i))
  await last
  const target = v.log.lastSeq
  await new Promise<void>(resolve => {
    if (v.shipper.ackedSeq >= target) {
      resolve()
      return
    }
    const off = v.shipper.onAcked(s => {
      if (s >= target) {
        off()
        resolve()
      }
    })
  })
}

const consoleLog = (text: string) =>
  ({ type: 'console_log', data: { level: 'log', text, args: [] } }) as unknown as EventInput
const request = (url: string) =>
  ({ type: 'network_request', data: { request_id: url, method: 'GET', url, headers: {} } }) as EventInput

t.test('fleet read: every VM or one, categories, NDJSON with browser_id, readable lines like tail', async t => {
  const nats = await startNatsServer()
  t.teardown(() => nats.dispose())
  const a = await vm(t, nats.url, 'vm-a')
  const b = await vm(t, nats.url, 'vm.b')
  await emitAndShip(a, [consoleLog('a1'), request('https://a/1'), consoleLog('a2')])
  await emitAndShip(b, [request('https://b/1'), consoleLog('b1')])
  const base = ['--nats-url', nats.url, '--nats-stream', 'BT']

  const all = capture()
  t.equal(await fleet.run(['read', ...base, '--json'], all.io), 0, all.err())
  const rows = all
    .out()
    .trim()
    .split('\n')
    .map(l => JSON.parse(l) as Envelope & { browser_id: string })
  t.same(
    rows.map(r => `${r.browser_id}#${r.seq}`),
    ['vm-a#1', 'vm-a#2', 'vm-a#3', 'vm.b#1', 'vm.b#2'],
    'stream order, real browser ids',
  )
  const stored = (await a.log.read({ order: 'asc', limit: 10 })).records
  t.equal(
    all.out().split('\n')[0],
    `{"browser_id":"vm-a",${stored[0]!.json.slice(1)}`,
    'the shipped envelope, byte for byte, behind browser_id',
  )

  const one = capture()
  t.equal(await fleet.run(['read', ...base, '--browser-id', 'vm.b', '--category', 'console'], one.io), 0, one.err())
  const bRecords = (await b.log.read({ order: 'asc', limit: 10 })).records
  t.equal(
    one.out(),
    formatEnvelope(JSON.parse(bRecords[1]!.json) as Envelope, false) + '\n',
    'formatted like tail, no browser prefix when filtered to one',
  )

  const cats = capture()
  t.equal(await fleet.run(['read', ...base, '--category', 'console,network', '--limit', '4'], cats.io), 0, cats.err())
  t.equal(cats.out().trim().split('\n').length, 4, '--limit')
  t.match(
    cats.out().split('\n')[0],
    /^vm-a \d\d:\d\d:\d\d\.\d{3} #1 console +console_log \[log\] a1$/,
    'browser id first when reading every VM',
  )

  const net = capture()
  t.equal(await fleet.run(['read', ...base, '--category', 'network', '--json'], net.io), 0)
  t.same(
    net
      .out()
      .trim()
      .split('\n')
      .map(l => (JSON.parse(l) as { browser_id: string }).browser_id),
    ['vm-a', 'vm.b'],
  )

  const until = capture()
  t.equal(await fleet.run(['read', ...base, '--until', '1h', '--json'], until.io), 0)
  t.equal(until.out(), '', '--until before every event: nothing')
})

t.test('fleet tail follows new events and stops after --count', async t => {
  const nats = await startNatsServer()
  t.teardown(() => nats.dispose())
  const a = await vm(t, nats.url, 'vm-a')
  await emitAndShip(a, [consoleLog('old')])
  const c = capture()
  const done = fleet.run(
    ['tail', '--nats-url', nats.url, '--nats-stream', 'BT', '--browser-id', 'vm-a', '--count', '2', '--json'],
    c.io,
  )
  // Events shipped after tail started; resend until tail has its consumer (a new-only consumer may start after the first).
  let n = 0
  const feeding = (async () => {
    while (c.out().split('\n').length < 3 && n < 200) {
      await emitAndShip(a, [consoleLog(`new${n++}`)])
      await new Promise(r => setImmediate(r))
    }
  })()
  t.equal(await done, 0, c.err())
  await feeding
  const lines = c
    .out()
    .trim()
    .split('\n')
    .map(l => JSON.parse(l) as Envelope)
  t.equal(lines.length, 2)
  t.ok(
    lines.every(e => (e.event.data as { text: string }).text.startsWith('new')),
    'only new events (no replay of "old")',
  )
  t.equal(lines[1]!.seq, lines[0]!.seq + 1, 'consecutive')

  const since = capture()
  t.equal(
    await fleet.run(
      ['tail', '--nats-url', nats.url, '--nats-stream', 'BT', '--since', '10m', '--count', '1'],
      since.io,
    ),
    0,
  )
  t.match(since.out(), /^vm-a .* #1 console +console_log \[log\] old\n$/, '--since replays from that time')
})

t.test('fleet: usage and connection errors are one clear line', async t => {
  const none = capture()
  t.equal(await fleet.run(['read'], none.io), 2)
  t.equal(none.err(), 'browser-telemetry fleet read: --nats-url is required (or BROWSER_TELEMETRY_NATS_URL)\n')
  const bad = capture()
  t.equal(await fleet.run(['tail', '--nats-url', 'http://x'], bad.io), 2)
  t.match(bad.err(), /--nats-url: expected nats:\/\/host:port/)
  const port = await closedPort()
  const down = capture()
  t.equal(await fleet.run(['read', '--nats-url', `nats://127.0.0.1:${port}`], down.io), 1)
  t.match(
    down.err(),
    new RegExp(`^browser-telemetry fleet read: cannot connect to NATS \\(nats://127\\.0\\.0\\.1:${port}\\): `),
  )
  const nats = await startNatsServer()
  t.teardown(() => nats.dispose())
  const missing = capture()
  t.equal(await fleet.run(['read', '--nats-url', nats.url, '--nats-stream', 'NOPE'], missing.io), 1)
  t.equal(missing.err(), `browser-telemetry fleet read: stream NOPE not found on ${nats.url}\n`)
  const help = capture()
  t.equal(await fleet.run(['tail', '--help'], help.io), 0)
  t.match(help.out(), '--nats-url URL')
  t.notMatch(help.out(), '--token', 'no daemon connection options')
})
