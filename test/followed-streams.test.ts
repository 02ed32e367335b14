// FollowedStreams (fleet serve's SSE) over a stand-in source: the handover from backlog to the feed,
// the `: lagging` cut of a client that stops reading, keepalives, a broken feed ending the stream,
// and the client cap. No NATS: the source is an array and a callback.
import t from 'tap'
import { FollowedStreams } from '../src/sse/followed-streams.js'
import type { FollowedSource } from '../src/sse/telemetry-source.js'
import type { ReadQuery, ReadResult, StoredRecord } from '../src/store/event-log.js'
import { RecordingResponse } from './helpers/sse.js'
import { waitFor } from './helpers/http.js'
import type { ServerResponse } from 'node:http'

const rec = (seq: number): StoredRecord => ({
  seq,
  ts: seq,
  category: 'console',
  json: `{"seq":${seq},"event":{"ts":${seq}}}`,
})

/** Records 1..stored readable; push() feeds later ones to every follower; end() breaks the feeds. */
class FakeSource implements FollowedSource {
  records: StoredRecord[] = []
  private feeds: { on: (r: StoredRecord[]) => void; end: (e: Error) => void }[] = []
  stopped = 0
  constructor(stored: number) {
    for (let i = 1; i <= stored; i++) this.records.push(rec(i))
  }
  read(q: ReadQuery): Promise<ReadResult> {
    const from = q.cursor ?? 1
    const out = this.records.filter(r => r.seq >= from).slice(0, q.limit + 1)
    const hasMore = out.length > q.limit
    const records = out.slice(0, q.limit)
    return Promise.resolve({ records, hasMore, nextCursor: hasMore ? records[records.length - 1]!.seq + 1 : 0 })
  }
  follow(on: (r: StoredRecord[]) => void, end: (e: Error) => void) {
    const feed = { on, end }
    this.feeds.push(feed)
    return Promise.resolve({
      lastSeq: this.records.length,
      stop: () => {
        this.stopped++
        this.feeds = this.feeds.filter(f => f !== feed)
      },
    })
  }
  push(n: number): void {
    const added: StoredRecord[] = []
    for (let i = 0; i < n; i++) added.push(rec(this.records.length + 1 + i))
    this.records.push(...added)
    for (const f of this.feeds) f.on(added)
  }
  end(): void {
    for (const f of [...this.feeds]) f.end(new Error('feed broke'))
  }
}

const ids = (res: RecordingResponse) =>
  res.writes
    .join('')
    .match(/^id: \d+$/gm)
    ?.map(l => Number(l.slice(4))) ?? []
const tick = () => new Promise(r => setImmediate(r))

t.test('replay then live: every seq once, in order, across the handover', async t => {
  const source = new FakeSource(1200)
  const streams = new FollowedStreams(() => source, { pageSize: 100 })
  const begin = await streams.prepare('vm', { kind: 'oldest' })
  source.push(5) // stored after the feed started, before the response began: held, not lost
  const res = new RecordingResponse()
  const done = begin(res as unknown as ServerResponse)
  source.push(5)
  for (let i = 0; i < 50 && ids(res).length < 1210; i++) await tick()
  t.same(
    ids(res),
    Array.from({ length: 1210 }, (_, i) => i + 1),
  )
  t.equal(streams.stats.open, 1)
  res.end()
  await done
  t.equal(streams.stats.open, 0)
  t.equal(source.stopped, 1, 'the feed is stopped with the stream')
})

t.test('a client that stops reading is cut with `: lagging` past bufferEvents; others unaffected', async t => {
  const source = new FakeSource(0)
  const streams = new FollowedStreams(() => source, { bufferEvents: 50, bufferBytes: 1 << 20 })
  const slow = new RecordingResponse()
  const fast = new RecordingResponse()
  void (await streams.prepare('vm', { kind: 'new' }))(slow as unknown as ServerResponse)
  void (await streams.prepare('vm', { kind: 'new' }))(fast as unknown as ServerResponse)
  slow.paused = true
  for (let i = 0; i < 10; i++) source.push(10)
  t.equal(streams.stats.slowDisconnects, 1)
  t.match(slow.writes[slow.writes.length - 1], /^: lagging: client too slow/)
  t.ok(slow.writableEnded)
  t.same(
    ids(fast),
    Array.from({ length: 100 }, (_, i) => i + 1),
    'the reading client got all 100',
  )
  await streams.closeAll(10)
  t.ok(fast.writableEnded, 'closeAll ends the open stream')
  t.equal(streams.stats.open, 0)
})

t.test('keepalive while idle; a broken feed ends the stream; the cap refuses beyond maxClients', async t => {
  const source = new FakeSource(3)
  const streams = new FollowedStreams(() => source, { keepaliveMs: 20, maxClients: 1 })
  const res = new RecordingResponse()
  const done = (await streams.prepare('vm', { kind: 'new' }))(res as unknown as ServerResponse)
  const keepalives = () => res.writes.filter(w => w === ': keepalive\n\n').length
  await waitFor(() => keepalives() >= 2, 5000, 'two keepalives')
  t.same(new Set(res.writes), new Set([': keepalive\n\n']), 'only keepalive comments while idle')
  t.equal(streams.refuseIfFull(), true, 'a second stream would pass maxClients')
  t.equal(streams.stats.refused, 1)
  source.end()
  await done
  t.ok(res.writableEnded, 'the response ended when the feed broke (the client resumes with Last-Event-ID)')
  t.equal(streams.refuseIfFull(), false, 'room again')
})
