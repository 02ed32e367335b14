// The SSE frame ring: exact byte bound and eviction, slices without copies, and the hub serving
// resumes from it (no store read), falling back to the store losslessly for what is older, handing
// a store replay over to the ring, and forgetting everything when commits went by unseen.
import t, { type Test } from 'tap'
import type { ServerResponse } from 'node:http'
import { MessageRing } from '../src/sse/message-ring.js'
import { TelemetryStreams, sseMessages } from '../src/sse/telemetry-streams.js'
import type { EventLog, StoredRecord } from '../src/store/event-log.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { waitFor } from './helpers/http.js'
import { RecordingResponse } from './helpers/sse.js'
import { openStore } from './helpers/store.js'

const tick = (): EventInput => ({ type: 'cdp_connect', data: {} })
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const frameIds = (write: string) => [...write.matchAll(/^id: (\d+)$/gm)].map(m => Number(m[1]))
const allIds = (res: RecordingResponse) => res.writes.flatMap(frameIds)
const record = (seq: number): StoredRecord => ({ seq, ts: 0, category: 'control', json: `{"seq":${seq},"event":{}}` })
const frameText = (seq: number) => `id: ${seq}\ndata: {"seq":${seq},"event":{}}\n\n`

/** Counts store reads (the ring must spare them). */
function countReads(log: EventLog): { n: number } {
  const count = { n: 0 }
  const read = log.read.bind(log)
  log.read = q => {
    count.n++
    return read(q)
  }
  return count
}

/** One commit per event (coalesceMs 0 writes each commit at once): batch = one frame. */
async function emitEach(log: EventLog, emit: () => void, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    emit()
    await log.flush()
  }
}

/** Frame bytes of the stored records from..to (what the ring holds for them, one batch per record). */
async function frameBytes(log: EventLog, from: number, to: number): Promise<number> {
  const page = await log.read({ order: 'asc', limit: to - from + 1, cursor: from })
  return page.records.reduce((a, r) => a + sseMessages([r]).buf.length, 0)
}

/**
 * A hub whose ring holds exactly the frame bytes of seqs ringOf[0]..ringOf[1] (measured on a probe
 * log), with store reads counted and one live client, after `events` commits of one event each.
 */
async function ringHub(t: Test, o: { ringOf: [number, number]; pageSize: number; events: number }) {
  const { log, pipeline } = await openStore(t)
  const probe = await openStore(t)
  await emitEach(probe.log, () => probe.pipeline.emit(tick()), o.ringOf[1])
  const ringBytes = await frameBytes(probe.log, o.ringOf[0], o.ringOf[1])
  const streams = new TelemetryStreams(log, {
    keepaliveMs: 3_600_000,
    bufferEvents: 1000,
    coalesceMs: 0,
    ringBytes,
    pageSize: o.pageSize,
  })
  const reads = countReads(log)
  const live = new RecordingResponse()
  const liveDone = streams.open(live as unknown as ServerResponse, { kind: 'new' })
  await emitEach(log, () => pipeline.emit(tick()), o.events)
  return { log, pipeline, streams, reads, ringBytes, liveDone }
}

t.test('MessageRing: byte bound, eviction moves coveredAfter, slices start at the next frame', async t => {
  const batch = (seqs: number[]) => sseMessages(seqs.map(record))
  const size = (seqs: number[]) => seqs.reduce((a, s) => a + frameText(s).length, 0)
  const ring = new MessageRing(size([1, 2, 3, 4, 5, 6]))
  t.equal(ring.coveredAfter, undefined)
  t.equal(ring.after(0), 'behind', 'an empty ring knows nothing')

  ring.append(batch([1, 2, 3]))
  ring.append(batch([4, 5]))
  t.equal(ring.bytes, size([1, 2, 3, 4, 5]))
  t.equal(ring.coveredAfter, 0)
  t.equal(ring.firstSeq, 1)
  t.equal(ring.lastSeq, 5)
  const mid = ring.after(1)
  t.not(mid, 'behind')
  if (typeof mid === 'object') {
    t.equal(mid.buf.toString(), frameText(2) + frameText(3), 'from the frame after the seq to the end of its batch')
    t.equal(mid.events, 2)
    t.equal(mid.lastSeq, 3)
  }
  const next = ring.after(3)
  t.same(typeof next === 'object' && [next.buf.toString(), next.events, next.lastSeq], [
    frameText(4) + frameText(5),
    2,
    5,
  ])
  t.equal(ring.after(5), 'caught-up')
  t.equal(ring.after(99), 'caught-up', 'past the end: whatever comes next')

  ring.append(batch([6, 7])) // 7 frames > 6 frames' bytes: the oldest batch goes
  t.equal(ring.bytes, size([4, 5, 6, 7]))
  t.equal(ring.batchCount, 2)
  t.equal(ring.coveredAfter, 3, 'complete after the last seq of the evicted batch')
  t.equal(ring.firstSeq, 4)
  t.equal(ring.after(2), 'behind', 'older than the ring: the store serves it')
  t.same(typeof ring.after(3) === 'object' && (ring.after(3) as { lastSeq: number }).lastSeq, 5)

  t.throws(() => ring.append(batch([7, 8])), /after 7/, 'batches must follow each other')
  ring.append(batch(range(8, 20))) // alone larger than the bound: nothing is kept, coverage moves past it
  t.equal(ring.bytes, 0)
  t.equal(ring.batchCount, 0)
  t.equal(ring.coveredAfter, 20)
  t.equal(ring.after(20), 'caught-up')
  t.equal(ring.after(19), 'behind')

  // The bound holds after every append, and coverage never goes back.
  const small = new MessageRing(1000)
  let covered = -1
  for (let s = 100; s < 400; s += 3) {
    small.append(batch([s, s + 1, s + 2]))
    t.ok(small.bytes <= 1000, `bytes ${small.bytes} <= 1000`)
    t.ok(small.coveredAfter! >= covered)
    covered = small.coveredAfter!
  }
  t.equal(
    small.bytes,
    size(range(400 - 3 * Math.floor(1000 / size([397, 398, 399])), 399)),
    'exactly the newest whole batches that fit',
  )
  small.clear()
  t.same([small.bytes, small.batchCount, small.coveredAfter], [0, 0, undefined])
})

t.test('a resume the ring covers is served from memory: no store read, every frame once, then live', async t => {
  const { log, pipeline } = await openStore(t)
  const streams = new TelemetryStreams(log, { keepaliveMs: 3_600_000, bufferEvents: 1000, coalesceMs: 0 })
  const reads = countReads(log)
  const live = new RecordingResponse()
  const liveDone = streams.open(live as unknown as ServerResponse, { kind: 'new' })
  await emitEach(log, () => pipeline.emit(tick()), 50)
  t.equal(streams.ring.coveredAfter, 0, 'the ring has everything since the first stream opened')
  t.equal(streams.ring.bytes, await frameBytes(log, 1, 50))
  reads.n = 0

  const resumed = new RecordingResponse()
  const resumedDone = streams.open(resumed as unknown as ServerResponse, { kind: 'after', seq: 10 })
  t.same(allIds(resumed), range(11, 50), 'the backlog from the ring, at once (the socket drains)')
  t.equal(reads.n, 0, 'the store was not read')
  t.same([streams.stats.ringResumes, streams.stats.storeResumes], [1, 0])
  await emitEach(log, () => pipeline.emit(tick()), 5)
  t.same(allIds(resumed), range(11, 55), 'then live, nothing twice')
  t.same(allIds(live), range(1, 55))
  await streams.closeAll()
  await Promise.all([liveDone, resumedDone])
})

t.test('a resume older than the ring reads the store, then hands over to the ring: lossless', async t => {
  // The ring sized so that the newest 10 one-frame batches fit, no more.
  const { log, pipeline, streams, reads, ringBytes, liveDone } = await ringHub(t, {
    ringOf: [41, 50],
    pageSize: 10,
    events: 50,
  })
  t.equal(streams.ring.bytes, ringBytes, 'exactly the bound: the newest 10 frames')
  t.equal(streams.ring.coveredAfter, 40)
  reads.n = 0

  const resumed = new RecordingResponse()
  const resumedDone = streams.open(resumed as unknown as ServerResponse, { kind: 'after', seq: 5 })
  t.same([streams.stats.ringResumes, streams.stats.storeResumes], [0, 1])
  await emitEach(log, () => pipeline.emit(tick()), 3) // commits while it pages the store
  await waitFor(() => allIds(resumed).length >= 48, 10_000, 'caught up')
  const ids = allIds(resumed)
  t.same(ids, range(6, 53), 'store pages 6..45, then the ring from 46, then live: each once, in order')
  t.equal(reads.n, 4, 'four pages of 10 (6-15, 16-25, 26-35, 36-45), then no more store reads')
  await streams.closeAll()
  await Promise.all([liveDone, resumedDone])
})

t.test('ring catch-up writes one batch per drain; a batch evicted meanwhile is read from the store', async t => {
  const { log, pipeline, streams, reads, liveDone } = await ringHub(t, { ringOf: [11, 20], pageSize: 100, events: 20 })
  t.equal(streams.ring.coveredAfter, 10)
  reads.n = 0

  const slow = new RecordingResponse()
  slow.paused = true
  const slowDone = streams.open(slow as unknown as ServerResponse, { kind: 'after', seq: 12 })
  t.same(allIds(slow), [13], 'one batch, then it waits for the drain')
  slow.drain()
  t.same(allIds(slow), [13, 14], 'one more per drain')
  t.equal(streams.stats.ringResumes, 1)
  // Much more is committed: the batch it needs next (15) leaves the ring.
  await emitEach(log, () => pipeline.emit(tick()), 40)
  t.equal(streams.ring.coveredAfter, 50)
  t.same(allIds(slow), [13, 14], 'nothing queued for it while it does not drain')
  slow.resume()
  await waitFor(() => allIds(slow).length >= 48, 10_000, 'caught up')
  t.same(allIds(slow), range(13, 60), 'store from 15 (one page), then live: lossless, in order')
  t.equal(reads.n, 1)
  await emitEach(log, () => pipeline.emit(tick()), 2)
  t.same(allIds(slow), range(13, 62))
  await streams.closeAll()
  await Promise.all([liveDone, slowDone])
})

t.test('commits with no stream open clear the ring: a later resume reads the store', async t => {
  const { log, pipeline } = await openStore(t)
  const streams = new TelemetryStreams(log, { keepaliveMs: 3_600_000, bufferEvents: 1000, coalesceMs: 0 })
  const first = new RecordingResponse()
  const firstDone = streams.open(first as unknown as ServerResponse, { kind: 'new' })
  await emitEach(log, () => pipeline.emit(tick()), 5)
  t.equal(streams.ring.coveredAfter, 0)
  first.emit('close') // the client goes away
  await firstDone
  t.equal(streams.size, 0)
  await emitEach(log, () => pipeline.emit(tick()), 5) // nobody frames these: the ring would have a hole
  t.equal(streams.ring.coveredAfter, undefined, 'the ring forgot everything')
  t.equal(streams.ring.bytes, 0)
  const again = new RecordingResponse()
  const againDone = streams.open(again as unknown as ServerResponse, { kind: 'after', seq: 3 })
  t.same([streams.stats.ringResumes, streams.stats.storeResumes], [0, 1])
  await waitFor(() => allIds(again).length >= 7, 10_000, 'caught up')
  t.same(allIds(again), range(4, 10), 'from the store: nothing lost')
  await streams.closeAll()
  await againDone
})
