// Fleet shipping against a real nats-server (Debian package, JetStream on, random port, temp store):
// the pipeline and store are used directly; no Chromium is involved.
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager, StorageType } from '@nats-io/jetstream'
import { nanos } from '@nats-io/transport-node'
import type { Test } from 'tap'
import { Shipper, type ShipperOptions } from '../src/ship/shipper.js'
import { decodeSubjectToken, encodeSubjectToken, subjectOf } from '../src/nats/subject.js'
import type { EventLog } from '../src/store/event-log.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { openStore } from './helpers/store.js'
import { assertExactlyOnce, readStream, startNatsServer, type NatsServer } from './helpers/nats.js'
import { reservedPort } from './helpers/ports.js'
import { ackedUpTo, emitMany, until } from './helpers/ship.js'

const LIMITS = { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 }

async function natsServer(t: Test, args: string[] = []): Promise<NatsServer> {
  const s = await startNatsServer({ args })
  t.teardown(() => s.dispose())
  return s
}

function shipper(t: Test, log: EventLog, url: string | string[], over: Partial<ShipperOptions> = {}): Shipper {
  const s = new Shipper({
    log,
    browserId: 'vm-1',
    nats: { servers: Array.isArray(url) ? url : [url] },
    stream: 'BT',
    subjectPrefix: 'telemetry',
    limits: LIMITS,
    retryInitialMs: 50,
    retryMaxMs: 500,
    ...over,
  })
  t.teardown(() => s.stop())
  return s
}

t.test('subject token encoding is reversible and leaves plain ids alone', async t => {
  t.equal(encodeSubjectToken('vm-1_A'), 'vm-1_A')
  t.equal(encodeSubjectToken('vm.7'), 'vm~2E7')
  t.equal(encodeSubjectToken('a b*>~'), 'a~20b~2A~3E~7E')
  t.equal(encodeSubjectToken('é'), '~C3~A9')
  for (const id of ['vm.7', 'a b*>~', 'é', 'plain', '~2E', '\t'])
    t.equal(decodeSubjectToken(encodeSubjectToken(id)), id, `round trip ${JSON.stringify(id)}`)
  t.equal(decodeSubjectToken('a.b'), undefined, 'a dot never appears in an encoded token')
  t.equal(decodeSubjectToken('~2e'), undefined, 'lower-case hex is not produced by the rule')
  t.equal(subjectOf('telemetry', 'vm.7', 'network'), 'telemetry.vm~2E7.network')
})

t.test(
  '20k events arrive once, in seq order, as the read API serves them; stream created per contract; watermark persisted',
  async t => {
    const nats = await natsServer(t)
    const { log, pipeline } = await openStore(t)
    const s = shipper(t, log, nats.url, { browserId: 'vm.7 x' })
    await s.start()
    await emitMany(pipeline, 0, 20_000)
    await ackedUpTo(s, () => log.lastSeq)
    t.equal(log.lastSeq, 20_000)
    t.equal(s.stats.shippedEvents, 20_000, 'every event acknowledged once')
    t.equal(s.state(), 'connected')
    await assertExactlyOnce(t, nats.url, log, 'vm.7 x')

    const nc = await connect({ servers: nats.url })
    const info = await (await jetstreamManager(nc)).streams.info('BT')
    await nc.close()
    t.same(info.config.subjects, ['telemetry.>'])
    t.equal(info.config.storage, StorageType.File)
    t.equal(info.config.duplicate_window, nanos(120_000), 'duplicate window 2 min')

    await s.stop()
    const stored = await log.readMeta('ship:BT:telemetry')
    t.equal(Number(stored!.readBigUInt64BE(0)), 20_000, 'acked seq stored in the log metadata')
    t.equal(s.state(), 'off')
  },
)

t.test('nats-server SIGKILL mid-run and restarted: capture goes on, nothing lost, nothing duplicated', async t => {
  const nats = await natsServer(t)
  const { log, pipeline } = await openStore(t)
  const s = shipper(t, log, nats.url)
  await s.start()
  await emitMany(pipeline, 0, 5000)
  // Kill while publishes are in flight: the next batch is emitted and the kill lands mid-stream.
  const midRun = emitMany(pipeline, 5000, 5000)
  await until(s, () => s.ackedSeq >= 6000)
  await nats.kill('SIGKILL')
  await until(s, () => s.state() === 'reconnecting')
  await midRun
  // Capture does not wait for NATS: the log keeps committing while the server is gone.
  await emitMany(pipeline, 10_000, 5000)
  t.equal(log.lastSeq, 15_000, 'every event committed while NATS was down')
  t.ok(s.ackedSeq < 15_000, `not everything acknowledged while down (acked ${s.ackedSeq})`)
  t.equal(s.state(), 'reconnecting')
  await nats.start()
  await ackedUpTo(s, () => log.lastSeq)
  await assertExactlyOnce(t, nats.url, log)
  t.equal(s.state(), 'connected')
})

t.test('NATS unreachable at startup: capture runs normally, shipping catches up when the server appears', async t => {
  const port = await reservedPort()
  const { log, pipeline } = await openStore(t)
  const s = shipper(t, log, `nats://127.0.0.1:${port}`)
  await s.start() // returns at once although nothing listens
  await emitMany(pipeline, 0, 3000)
  t.equal(log.lastSeq, 3000)
  await until(s, () => s.stats.errors.connect >= 1)
  t.equal(s.ackedSeq, 0)
  t.equal(s.state(), 'reconnecting')
  t.match(s.health().last_error, /cannot connect to NATS \(nats:\/\/127\.0\.0\.1:\d+\)/, 'the error names the server')
  // The configured address comes alive.
  const late = await startNatsServer({ port })
  t.teardown(() => late.dispose())
  await ackedUpTo(s, () => log.lastSeq)
  await assertExactlyOnce(t, late.url, log)
})

t.test('an existing stream with other settings is used as is and never changed', async t => {
  const nats = await natsServer(t)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({
    name: 'BT',
    subjects: ['telemetry.>', 'other.>'],
    storage: StorageType.Memory,
    duplicate_window: nanos(5_000),
    max_msgs: 1_000_000,
  })
  const before = (await jsm.streams.info('BT')).config
  const { log, pipeline } = await openStore(t)
  const s = shipper(t, log, nats.url)
  await s.start()
  await emitMany(pipeline, 0, 2000)
  await ackedUpTo(s, () => log.lastSeq)
  const after = (await jsm.streams.info('BT')).config
  t.same(after, before, 'configuration untouched')
  t.equal(after.storage, StorageType.Memory)
  await assertExactlyOnce(t, nats.url, log)
})

t.test(
  'after a lost or stale watermark the shipper learns from the stream what it holds instead of re-sending',
  async t => {
    const nats = await natsServer(t)
    const { log, pipeline } = await openStore(t)
    const first = shipper(t, log, nats.url)
    await first.start()
    await emitMany(pipeline, 0, 3000)
    await ackedUpTo(first, () => log.lastSeq)
    await first.stop()
    // As if the daemon had died long ago, right after a crash that lost the last watermark writes:
    // the duplicate window would no longer protect re-sends of seqs 1001..3000.
    await log.writeMeta('ship:BT:telemetry', Buffer.from([0, 0, 0, 0, 0, 0, 0x03, 0xe8]))
    await emitMany(pipeline, 3000, 500)
    const second = shipper(t, log, nats.url)
    await second.start()
    await ackedUpTo(second, () => log.lastSeq)
    t.equal(second.stats.shippedEvents, 500, 'only the 500 new events were published')
    await assertExactlyOnce(t, nats.url, log)
  },
)

t.test('events removed by local retention before shipping are reported (metric + warn) and show as a gap', async t => {
  const nats = await natsServer(t)
  // An injected clock: the first 400 events are old, the rest new; retention by age then removes exactly 400.
  let now = 1_000_000
  const { log, pipeline } = await openStore(t, { maxAgeMs: 1000 }, { clock: () => now })
  await emitMany(pipeline, 0, 400)
  now = 2_000_000
  await emitMany(pipeline, 400, 600)
  // Shipping was off (or NATS away) while retention ran.
  t.equal(await log.runRetention(now + 1_000_000), 400)
  const warnings: unknown[] = []
  const logger = { warn: (o: unknown) => warnings.push(o), info: () => undefined, error: () => undefined } as never
  const s = shipper(t, log, nats.url, { logger })
  await s.start()
  await ackedUpTo(s, () => log.lastSeq)
  t.equal(s.stats.retentionDroppedEvents, 400)
  t.same(warnings, [{ fromSeq: 1, toSeq: 400, events: 400 }])
  const msgs = await readStream(nats.url, 'BT')
  t.equal(msgs.length, 600)
  t.equal(msgs[0]!.telemetrySeq, 401, 'the stream starts after the gap')
})

t.test('seqs consumed without an event (shed) do not hold the watermark back', async t => {
  const nats = await natsServer(t)
  let backlog = 0
  const first = await openStore(t, {}, { backlog: () => backlog })
  // A loud page (more than the quiet rate) while the store falls behind: 101 kept, then 5 shed.
  for (let i = 0; i < 106; i++) {
    if (i === 101) backlog = 1e12
    first.pipeline.emit({
      type: 'console_log',
      data: { level: 'log', text: `x${i}`, args: [], target_id: 'T1' },
    } as unknown as EventInput)
  }
  await first.log.close()
  // Reopened: the last five seqs were consumed without being stored, after the last record (seq 101).
  const { log } = await openStore(t, { path: first.dir })
  t.equal(log.lastSeq, 106, 'the log counts the skipped seqs')
  const s = shipper(t, log, nats.url)
  await s.start()
  await ackedUpTo(s, () => log.lastSeq)
  t.equal(s.ackedSeq, 106)
  t.equal(s.lagEvents(), 0)
  const msgs = await readStream(nats.url, 'BT')
  t.same(
    msgs.map(m => m.telemetrySeq),
    Array.from({ length: 101 }, (_, i) => i + 1),
    'the stream shows the skipped seqs as missing',
  )
})
