// The player's pure rules (frames <-> event rows, clicks on frames, gaps) and the bound on blob URLs.
import t from 'tap'
import { resolveObjectURL } from 'node:buffer'
import { frameGaps, frameIndexAt, frameIndexBeforeSeq, type RecordingFrame } from '../src/viewer/model/recording.js'
import { clicksOnFrame, frameIndexOf, rowIndexAtTime } from '../src/viewer/model/player.js'
import type { Envelope, Row } from '../src/viewer/model.js'
import { ImageCache } from '../src/viewer/image-cache.js'

const frame = (frame_id: number, ts: number, after_seq: number, target_id = 'A'): RecordingFrame => ({
  frame_id,
  ts,
  target_id,
  after_seq,
  width: 640,
  height: 400,
  bytes: 1000,
  viewport_width: 1280,
  viewport_height: 800,
})
const frames = [frame(1, 1000, 2), frame(2, 2000, 5), frame(5, 3000, 9), frame(6, 4000, 12, 'B')]
const click = (seq: number, x: number, y: number, target_id = 'A') =>
  ({
    seq,
    event: {
      type: 'interaction_click',
      category: 'interaction',
      ts: 0,
      source: { kind: 'cdp' },
      data: { target_id, x, y, selector: '#b' },
    },
  }) as unknown as Envelope

t.test('seek rules', async t => {
  t.equal(frameIndexAt(frames, 999), -1)
  t.equal(frameIndexAt(frames, 1000), 0)
  t.equal(frameIndexAt(frames, 2999), 1)
  t.equal(frameIndexAt(frames, 10_000), 3)
  t.equal(frameIndexBeforeSeq(frames, 2), -1, 'a frame that arrived after the event is not before it')
  t.equal(frameIndexBeforeSeq(frames, 3), 0)
  t.equal(frameIndexBeforeSeq(frames, 9), 1)
  t.equal(frameIndexBeforeSeq(frames, 10), 2)
  t.equal(frameIndexOf(frames, { tUs: 3500, seq: 6 }), 1, 'an event moment uses its seq')
  t.equal(frameIndexOf(frames, { tUs: 3500 }), 2, 'a time uses the time')
  t.same(frameGaps(frames), [{ afterFrameId: 2, missing: 2, fromTs: 2000, untilTs: 3000 }])
})

t.test('rows at a moment', async t => {
  const rows = [
    { kind: 'event', seq: 1, ts: 100 },
    { kind: 'gap', seq: 2, gap: { from: 2, to: 4, count: 3 } },
    { kind: 'event', seq: 5, ts: 300 },
    { kind: 'event', seq: 6, ts: 300 },
    { kind: 'event', seq: 7, ts: 500 },
  ] as unknown as Row[]
  t.equal(rowIndexAtTime(rows, 50), -1)
  t.equal(rowIndexAtTime(rows, 100), 0)
  t.equal(rowIndexAtTime(rows, 299), 0, 'never a gap row')
  t.equal(rowIndexAtTime(rows, 300), 3, 'the last row at that time')
  t.equal(rowIndexAtTime(rows, 10_000), 4)
})

t.test('clicks drawn on the frame before them, of their own page, at viewport scale', async t => {
  const clicks = [click(4, 640, 400), click(7, 100, 200), click(13, 1, 1), click(10, 5, 5, 'B')]
  t.same(
    clicksOnFrame(frames, 0, clicks).map(c => [c.seq, c.left, c.top]),
    [[4, 0.5, 0.5]],
  )
  t.same(
    clicksOnFrame(frames, 1, clicks).map(c => c.seq),
    [7],
  )
  // seq 13 comes after B's frame 6 (after_seq 12), but A's last frame before it is frame 5.
  t.same(
    clicksOnFrame(frames, 2, clicks).map(c => c.seq),
    [13],
  )
  t.same(clicksOnFrame(frames, 3, clicks), [], "B's click at seq 10 came before any frame of B")
})

t.test('at most N blob URLs alive; the evicted are revoked', async t => {
  const cache = new ImageCache(3)
  const urls = [1, 2, 3, 4, 5].map(id => cache.put(id, new Blob([`jpeg ${id}`])))
  t.equal(cache.size, 3)
  t.equal(resolveObjectURL(urls[0]!), undefined, 'the oldest revoked')
  t.equal(resolveObjectURL(urls[1]!), undefined)
  t.ok(resolveObjectURL(urls[4]!), 'the newest alive')
  t.equal(cache.get(3), urls[2], 'a hit')
  cache.put(6, new Blob(['6']))
  t.ok(resolveObjectURL(urls[2]!), 'a recently shown one survives')
  t.equal(resolveObjectURL(urls[3]!), undefined, 'the least recently shown goes')
  cache.clear()
  t.equal(cache.size, 0)
  t.equal(resolveObjectURL(urls[2]!), undefined)
})
