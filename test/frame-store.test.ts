// The recording's frame store without a browser: the byte bound held exactly with oldest-first
// retention, gaps in the frame ids (and why), backpressure from a slow disk, write errors, paging
// rules, and recovery after a crash at every point of a frame's write.
import t from 'tap'
import { appendFile, readdir, readFile, rename, stat, truncate, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { FrameStore, type FrameInput, type FrameStoreFs } from '../src/recording/frame-store.js'
import { tempDir } from './helpers/store.js'

/** A fake "JPEG": SOI, n filler bytes carrying a tag (so every frame differs), EOI. */
function jpeg(n: number, tag: number): Buffer {
  const b = Buffer.alloc(Math.max(n, 8), tag & 0xff)
  b[0] = 0xff
  b[1] = 0xd8
  b.writeUInt32BE(tag, 2)
  b[b.length - 2] = 0xff
  b[b.length - 1] = 0xd9
  return b
}
let clock = 1_700_000_000_000_000
function frame(n: number, tag: number, target = 'T1'): FrameInput {
  clock += 100_000
  return { ts: clock, target_id: target, after_seq: tag, width: 10, height: 10, jpeg: jpeg(n, tag) }
}
async function filesBytes(dir: string): Promise<number> {
  let sum = 0
  for (const f of await readdir(join(dir, 'frames'))) sum += (await stat(join(dir, 'frames', f))).size
  return sum
}

t.test('the byte bound holds exactly: oldest frames removed first, reported as a retention gap', async t => {
  const dir = await tempDir(t)
  const fs = await FrameStore.open({ dir, maxBytes: 10_000 })
  t.teardown(() => fs.close())
  for (let i = 1; i <= 30; i++) {
    t.equal(fs.add(frame(1000, i)).dropped, undefined)
    await fs.flush()
    t.ok(fs.stats().bytes <= 10_000, `bytes within the bound after frame ${i}`)
  }
  const s = fs.stats()
  t.equal(s.bytes, 10_000, 'exactly 10 frames of 1000 bytes fill the bound')
  t.equal(s.frames, 10)
  t.equal(s.first_frame_id, 21)
  t.equal(s.last_frame_id, 30)
  t.equal(s.removed_by_retention, 20)
  t.equal(await filesBytes(dir), 10_000, 'the files on disk hold exactly the bound')
  t.same(
    fs.gaps().map(g => [g.reason, g.from_frame_id, g.to_frame_id]),
    [['retention', 1, 20]],
    'one retention gap covering the removed ids',
  )
  t.equal(await fs.read(20), undefined, 'a removed frame is unknown')
  t.same(await fs.read(21), jpeg(1000, 21), 'a kept frame reads back')
  // A frame that does not fit the whole bound is dropped, its id a gap.
  const big = fs.add(frame(20_000, 99))
  t.equal(big.dropped, 'too_large')
  t.equal(fs.add(frame(1000, 100)).frame_id, big.frame_id + 1)
  await fs.flush()
  t.ok(
    fs.gaps().some(g => g.reason === 'too_large' && g.from_frame_id === big.frame_id),
    'the oversize frame is a gap',
  )
})

t.test('paging: cursor, since/until, has-more, oldest first', async t => {
  const dir = await tempDir(t)
  const fs = await FrameStore.open({ dir, maxBytes: 1_000_000, maxPendingFrames: 100 })
  t.teardown(() => fs.close())
  const ts: number[] = []
  for (let i = 1; i <= 25; i++) {
    const f = frame(100, i)
    ts.push(f.ts)
    fs.add(f)
  }
  await fs.flush()
  const all: number[] = []
  let cursor: number | undefined
  for (;;) {
    const p = fs.list({ cursor, limit: 10 })
    all.push(...p.items.map(i => i.frame_id))
    if (!p.hasMore) {
      t.equal(p.nextCursor, 0)
      break
    }
    t.equal(p.nextCursor, p.items.at(-1)!.frame_id + 1)
    cursor = p.nextCursor
  }
  t.same(
    all,
    Array.from({ length: 25 }, (_, i) => i + 1),
  )
  const w = fs.list({ sinceUs: ts[4], untilUs: ts[9], limit: 100 })
  t.same(
    w.items.map(i => i.frame_id),
    [5, 6, 7, 8, 9],
    'since inclusive, until exclusive',
  )
  t.equal(w.hasMore, false)
  const w2 = fs.list({ sinceUs: ts[4], untilUs: ts[9], limit: 3 })
  t.same([w2.hasMore, w2.nextCursor], [true, 8])
  t.same(
    fs.list({ cursor: 8, untilUs: ts[9], limit: 3 }).items.map(i => i.frame_id),
    [8, 9],
  )
  const item = fs.get(5)!
  t.same(Object.keys(item).sort(), ['after_seq', 'bytes', 'frame_id', 'height', 'target_id', 'ts', 'width'])
})

t.test('a slow disk: frames beyond the queue are dropped at once (backpressure gap), never waited for', async t => {
  const dir = await tempDir(t)
  let release: () => void = () => undefined
  const gate = new Promise<void>(r => (release = r))
  const slow: FrameStoreFs = {
    writeFile: async (p, d) => {
      await gate
      await writeFile(p, d)
    },
    rename,
    unlink,
  }
  const fs = await FrameStore.open({ dir, maxBytes: 1_000_000, maxPendingFrames: 4, fs: slow })
  t.teardown(() => fs.close())
  const results = Array.from({ length: 10 }, (_, i) => fs.add(frame(100, i + 1)))
  t.same(
    results.map(r => r.dropped ?? 'ok'),
    ['ok', 'ok', 'ok', 'ok', ...Array(6).fill('backpressure')],
  )
  t.equal(fs.stats().pending_frames, 4)
  release()
  await fs.flush()
  t.same(
    fs.list({ limit: 100 }).items.map(i => i.frame_id),
    [1, 2, 3, 4],
  )
  t.match(fs.gaps(), [{ reason: 'backpressure', from_frame_id: 5, to_frame_id: 10 }])
  t.equal(fs.stats().dropped.backpressure, 6)
})

t.test('a failing write is a gap; nothing half-written is listed or left behind', async t => {
  const dir = await tempDir(t)
  let fail = false
  const flaky: FrameStoreFs = {
    writeFile: async (p, d) => {
      if (fail) {
        await writeFile(p, d.subarray(0, 10))
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' })
      }
      await writeFile(p, d)
    },
    rename,
    unlink,
  }
  const fs = await FrameStore.open({ dir, maxBytes: 1_000_000, fs: flaky })
  t.teardown(() => fs.close())
  fs.add(frame(100, 1))
  await fs.flush()
  fail = true
  fs.add(frame(100, 2))
  await fs.flush()
  fail = false
  fs.add(frame(100, 3))
  await fs.flush()
  t.same(
    fs.list({ limit: 10 }).items.map(i => i.frame_id),
    [1, 3],
  )
  t.match(fs.gaps(), [{ reason: 'write_error', from_frame_id: 2 }])
  t.same((await readdir(join(dir, 'frames'))).sort(), ['000000000001.jpg', '000000000003.jpg'])
})

t.test('recovery: no entry survives without its whole JPEG, orphans go, ids are never reused', async t => {
  const dir = await tempDir(t)
  const a = await FrameStore.open({ dir, maxBytes: 1_000_000 })
  for (let i = 1; i <= 6; i++) a.add(frame(500, i))
  await a.flush()
  // A crash (no close): then damage the store the ways an interrupted write or power loss could.
  const f = (id: number) => join(dir, 'frames', `${String(id).padStart(12, '0')}.jpg`)
  await unlink(f(2)) // entry without its file
  await truncate(f(3), 100) // torn file (size differs)
  const torn = await readFile(f(4))
  torn.fill(0, 200, 300) // same size, other bytes (power loss): caught by the hash after an unclean stop
  await writeFile(f(4), torn)
  await writeFile(f(7), jpeg(500, 7)) // renamed but never journaled
  await writeFile(join(dir, 'frames', '.tmp-8'), 'half') // interrupted temp file
  await appendFile(join(dir, 'index.jsonl'), '{"frame_id":9,"ts":1,"tar') // torn journal line
  const b = await FrameStore.open({ dir, maxBytes: 1_000_000 })
  t.teardown(() => b.close())
  t.same(
    b.list({ limit: 100 }).items.map(i => i.frame_id),
    [1, 5, 6],
    'only whole frames are listed',
  )
  for (const id of [1, 5, 6]) t.same(await b.read(id), jpeg(500, id))
  t.same(
    (await readdir(join(dir, 'frames'))).sort(),
    [1, 5, 6].map(id => `${String(id).padStart(12, '0')}.jpg`),
  )
  const next = b.add(frame(500, 10)).frame_id
  t.ok(next > 7, `the next id (${next}) is above every id ever used`)
  t.match(b.gaps(), [{ reason: 'unclean_stop' }], 'the unclean stop is reported as a gap')
  await b.flush()
  await b.close()
  // A clean stop continues without a gap and checks nothing by hash.
  const c = await FrameStore.open({ dir, maxBytes: 1_000_000 })
  t.teardown(() => c.close())
  t.equal(c.add(frame(500, 11)).frame_id, next + 1)
  t.same(c.gaps(), [])
})

t.test('a reopened store keeps its frames and the bound; an emptied store still never reuses ids', async t => {
  const dir = await tempDir(t)
  const a = await FrameStore.open({ dir, maxBytes: 5_000 })
  for (let i = 1; i <= 2000; i++) {
    a.add(frame(1000, i))
    await a.flush()
  }
  await a.close()
  const b = await FrameStore.open({ dir, maxBytes: 2_500 })
  t.teardown(() => b.close())
  t.equal(b.stats().bytes, 2000, 'a smaller bound applies at open')
  t.ok(b.stats().first_frame_id > 1990)
  t.ok(b.add(frame(1000, 1)).frame_id > 2000)
  const journal = await readFile(join(dir, 'index.jsonl'), 'utf8')
  t.ok(journal.split('\n').length < 50, 'the journal was compacted')
})
