// The sink stands back while capture has a backlog the store has not taken (capture first: no tab
// waits on shipping), resumes on the next commit once the backlog is gone, and under a backlog that
// never ends still sends one window per maxYieldMs. A real event log; a transport that acks at once.
import t from 'tap'
import type { Test } from 'tap'
import { Sink } from '../src/sink/sink.js'
import type { LinkEvents, ShipLink } from '../src/sink/link.js'
import type { EventLog, StoredRecord } from '../src/store/event-log.js'
import { input } from './helpers/ship.js'
import { openStore } from './helpers/store.js'

/** Everything the sink asks of the log, with the backlog the test says. */
function logWithBacklog(log: EventLog, backlog: { bytes: number }): ConstructorParameters<typeof Sink>[0]['log'] {
  return {
    onCommit: l => log.onCommit(l),
    read: q => log.read(q),
    readMeta: n => log.readMeta(n),
    writeMeta: (n, v) => log.writeMeta(n, v),
    get lastSeq() {
      return log.lastSeq
    },
    get firstSeq() {
      return log.firstSeq
    },
    get pendingBytes() {
      return backlog.bytes
    },
  }
}

function instantLink(published: number[]) {
  return (events: LinkEvents): ShipLink => ({
    start: () => {
      events.up()
      events.ready()
    },
    stop: async () => undefined,
    resync: async () => 0,
    publish: (rec: StoredRecord) => {
      published.push(rec.seq)
      queueMicrotask(() => events.ack(rec.seq))
    },
  })
}

async function setup(
  t: Test,
  backlog: { bytes: number },
  tuning: { maxYieldMs: number; maxInFlight: number; now?: () => number },
) {
  const { log, pipeline } = await openStore(t, {}, { shedding: false })
  for (let i = 0; i < 100; i++) pipeline.emit(input(i))
  await log.flush()
  const published: number[] = []
  const sink = new Sink({
    log: logWithBacklog(log, backlog),
    name: 'test',
    watermarkName: 'test',
    errorKinds: [],
    link: instantLink(published),
    ...tuning,
  })
  t.teardown(() => sink.stop(0))
  return { log, pipeline, sink, published }
}

/** Resolves once the sink has resynchronised and entered publishing. */
function publishing(sink: Sink): Promise<void> {
  return new Promise(resolve => {
    const off = sink.onChange(() => {
      // 'connected' only once publishing ('behind' is also the resync before it).
      if (sink.state() === 'connected') {
        off()
        resolve()
      }
    })
  })
}

function acked(sink: Sink, seq: number): Promise<void> {
  return new Promise(resolve => {
    if (sink.ackedSeq >= seq) return resolve()
    const off = sink.onAcked(a => {
      if (a >= seq) {
        off()
        resolve()
      }
    })
  })
}

/** A few turns of the event loop: reads, acks and pumps that were due have run. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise(r => setImmediate(r))
}

t.test('while capture has a backlog nothing is sent; the next commit after it drains sends everything', async t => {
  const backlog = { bytes: 1024 * 1024 }
  const { log, pipeline, sink, published } = await setup(t, backlog, { maxYieldMs: 60_000, maxInFlight: 256 })
  const ready = publishing(sink)
  await sink.start()
  await ready
  await turns()
  t.same(published, [], 'a backlog of 1 MiB (over 256 KiB): the sink sends nothing')
  backlog.bytes = 256 * 1024
  pipeline.emit(input(100))
  await log.flush()
  await acked(sink, 101)
  t.same(
    published,
    Array.from({ length: 101 }, (_, i) => i + 1),
    'at the bound (256 KiB) it sends again: every seq once, in order',
  )
})

t.test('a backlog that never drains still lets one window out per maxYieldMs', async t => {
  const backlog = { bytes: 64 * 1024 * 1024 }
  const clock = { ms: 1_000_000 }
  const { pipeline, log, sink, published } = await setup(t, backlog, {
    maxYieldMs: 300,
    maxInFlight: 10,
    now: () => clock.ms,
  })
  const ready = publishing(sink)
  await sink.start()
  await ready
  await turns()
  t.equal(published.length, 0, 'nothing sent while the first 300 ms of standing back run')
  // Past maxYieldMs since the sink first stood back, a commit wakes it: one window goes out, and the
  // acks' own pumps (same task, same clock) find it standing back again.
  clock.ms += 301
  pipeline.emit(input(100))
  await log.flush()
  // The window goes out once the read-ahead has landed; then the acks' pumps must send no more.
  await acked(sink, 10)
  await turns()
  t.same(
    published,
    Array.from({ length: 10 }, (_, i) => i + 1),
    'exactly one window of 10, seqs 1-10',
  )
  t.equal(sink.ackedSeq, 10, 'and it was acknowledged')
})
