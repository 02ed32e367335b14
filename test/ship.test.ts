// Fleet shipping against a real nats-server (Debian package, JetStream on, random port, temp store):
// the pipeline and store are used directly; no Chromium is involved.
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager, StorageType } from '@nats-io/jetstream'
import { nanos } from '@nats-io/transport-node'
import type { Test } from 'tap'
import { Shipper, type ShipperOptions } from '../src/ship/shipper.js'
import { decodeSubjectToken, encodeSubjectToken, subjectOf } from '../src/ship/subject.js'
import type { EventLog, StoredRecord } from '../src/store/event-log.js'
import type { EventInput, Pipeline } from '../src/pipeline.js'
import { openStore } from './helpers/store.js'
import { readStream, startNatsServer, freePort, type NatsServer } from './helpers/nats.js'

const LIMITS = { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 }

async function natsServer(t: Test, args: string[] = []): Promise<NatsServer> {
  const s = await startNatsServer({ args })
  t.teardown(() => s.dispose())
  return s
}

function shipper(t: Test, log: EventLog, url: string | string[], over: Partial<ShipperOptions> = {}): Shipper {
  const s = new Shipper({
    log, browserId: 'vm-1', nats: { servers: Array.isArray(url) ? url : [url] }, stream: 'BT', subjectPrefix: 'telemetry', limits: LIMITS,
    retryInitialMs: 50, retryMaxMs: 500, ...over,
  })
  t.teardown(() => s.stop())
  return s
}

/** Resolves once the shipper's watermark reaches `seq` (an event, not a poll). */
function ackedUpTo(s: Shipper, seq: () => number): Promise<void> {
  return new Promise((resolve) => {
    if (s.ackedSeq >= seq()) { resolve(); return }
    const off = s.onAcked((acked) => { if (acked >= seq()) { off(); resolve() } })
  })
}

/** A mix of categories, each input small and valid. */
function input(i: number): EventInput {
  switch (i % 4) {
    case 0: return { type: 'console_log', data: { level: 'log', text: `line ${i}`, args: [] } } as unknown as EventInput
    case 1: return { type: 'network_request', data: { request_id: `r${i}`, method: 'GET', url: `https://example.com/${i}`, headers: {} } } as EventInput
    case 2: return { type: 'page_navigation', data: { url: `https://example.com/p${i}`, frame_id: 'F' } } as unknown as EventInput
    default: return { type: 'interaction_click', data: { x: i, y: 1, selector: 'button', tag: 'BUTTON', text: 'Buy' } } as unknown as EventInput
  }
}

/** Emits n events like a producer (yielding now and then so group commit runs); returns the last commit. */
async function emitMany(pipeline: Pipeline, from: number, n: number): Promise<void> {
  let last: Promise<boolean> = Promise.resolve(true)
  for (let i = from; i < from + n; i++) {
    const r = pipeline.emit(input(i))
    if (!r) throw new Error(`event ${i} was not accepted`)
    last = r.committed
    if (i % 500 === 499) await new Promise((r) => setImmediate(r))
  }
  if (!(await last)) throw new Error('last event was not committed')
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
async function assertExactlyOnce(t: Test, url: string, log: EventLog, browserId = 'vm-1', stream = 'BT', prefix = 'telemetry') {
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
  const missing = records.filter((r) => !seen.has(r.seq)).map((r) => r.seq)
  t.same(missing.slice(0, 10), [], 'no stored event is missing from the stream')
  // Contract: subject, headers, payload byte-identical to the read API's JSON (checked for every message).
  const bySeq = new Map(records.map((r) => [r.seq, r]))
  let bad = 0
  for (const m of msgs) {
    const r = bySeq.get(m.telemetrySeq)
    if (!r || m.subject !== subjectOf(prefix, browserId, r.category) || m.msgId !== `${browserId}:${r.seq}` || m.browserId !== browserId || m.data !== r.json) {
      if (bad++ === 0) t.fail(`message ${m.streamSeq} differs: ${JSON.stringify({ m, r })}`)
    }
  }
  t.equal(bad, 0, 'every message: subject, Nats-Msg-Id, Telemetry-* headers and payload as the contract says')
}

t.test('subject token encoding is reversible and leaves plain ids alone', async (t) => {
  t.equal(encodeSubjectToken('vm-1_A'), 'vm-1_A')
  t.equal(encodeSubjectToken('vm.7'), 'vm~2E7')
  t.equal(encodeSubjectToken('a b*>~'), 'a~20b~2A~3E~7E')
  t.equal(encodeSubjectToken('é'), '~C3~A9')
  for (const id of ['vm.7', 'a b*>~', 'é', 'plain', '~2E', '\t']) t.equal(decodeSubjectToken(encodeSubjectToken(id)), id, `round trip ${JSON.stringify(id)}`)
  t.equal(decodeSubjectToken('a.b'), undefined, 'a dot never appears in an encoded token')
  t.equal(decodeSubjectToken('~2e'), undefined, 'lower-case hex is not produced by the rule')
  t.equal(subjectOf('telemetry', 'vm.7', 'network'), 'telemetry.vm~2E7.network')
})

t.test('20k events arrive once, in seq order, as the read API serves them; stream created per contract; watermark persisted', async (t) => {
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
})
