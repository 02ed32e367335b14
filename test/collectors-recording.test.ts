// The recording collector's acknowledgements, with a fake session so the order of a frame and the
// answer to Page.stopScreencast is set exactly: every frame that arrives is acknowledged once,
// before and after recording is switched off, whenever the stop is answered, and again once it is
// switched back on; acks are paced at the rate cap (real Chromium: test/recording-browser.test.ts).
import t from 'tap'
import type { Protocol } from 'devtools-protocol'
import { createRecordingCollector, type CapturedFrame, type RecordingCollector } from '../collectors/recording.js'
import { fakeSession } from './helpers/fake-session.js'
import { FakeClock } from './helpers/fake-timers.js'
import type { Detach, TargetSession } from '../src/monitor/types.js'

/**
 * A fake page session whose Page.stopScreencast is answered only when the test says so; its frames
 * come a second apart on the collector's clock (each gets its slot under the rate cap at once)
 * unless `frame(gapMs)` says otherwise.
 */
function page(clock: FakeClock) {
  const acks: number[] = []
  let answerStop: (() => void) | undefined
  const fake = fakeSession('page', (method, params) => {
    if (method === 'Page.screencastFrameAck') acks.push((params as { sessionId: number }).sessionId)
    if (method === 'Page.stopScreencast') return new Promise(r => (answerStop = () => r({})))
    return Promise.resolve({})
  })
  let n = 0
  const frame = (gapMs = 1000) => {
    clock.advance(gapMs)
    const p: Protocol.Page.ScreencastFrameEvent = {
      data: Buffer.from(`frame ${++n}`).toString('base64'),
      sessionId: n,
      metadata: {
        offsetTop: 0,
        pageScaleFactor: 1,
        deviceWidth: 800,
        deviceHeight: 600,
        scrollOffsetX: 0,
        scrollOffsetY: 0,
      },
    }
    fake.fire('Page.screencastFrame', p)
  }
  const stopAnswered = async () => {
    answerStop!()
    // The collector's handling of the answer runs on the promise's continuations.
    for (let i = 0; i < 5; i++) await Promise.resolve()
  }
  return { ...fake, acks, frame, stopAnswered }
}

/** The collector's attach is synchronous for a page: its detach comes back at once. */
const attach = (c: RecordingCollector, session: TargetSession) =>
  c.attach!(session, () => ({ dropped: 'invalid' })) as Detach

function collector(clock: FakeClock) {
  const kept: CapturedFrame[] = []
  const c = createRecordingCollector({ sink: { add: f => (kept.push(f), {}) }, lastSeq: () => 0, clock })
  return { c, kept }
}

t.test('frames after Page.stopScreencast is answered are still acknowledged, once each', async t => {
  const clock = new FakeClock()
  const p = page(clock)
  const { c, kept } = collector(clock)
  const detach = attach(c, p.session)
  p.frame()
  p.frame()
  t.same(p.acks, [1, 2], 'each frame acknowledged as it arrives')
  detach()
  t.equal(p.sent.filter(m => m === 'Page.stopScreencast').length, 1)
  p.frame() // on the wire before the answer
  await p.stopAnswered()
  p.frame() // after the answer
  p.frame()
  t.same(p.acks, [1, 2, 3, 4, 5], 'every frame acknowledged, after the answer too')
  t.equal(c.stats.received, 5)
  t.equal(kept.length, 2, 'frames after the switch-off are only acknowledged, not kept')
})

t.test('switched on again: one ack per frame, not one per recorder that ever listened', async t => {
  const clock = new FakeClock()
  const p = page(clock)
  const { c, kept } = collector(clock)
  const detach = attach(c, p.session)
  const listenersOn = p.listeners()
  p.frame()
  detach()
  await p.stopAnswered()
  p.frame()
  const again = attach(c, p.session)
  t.equal(p.listeners(), listenersOn, 'the new recorder replaces the one that only acknowledged')
  p.frame()
  p.frame()
  t.same(p.acks, [1, 2, 3, 4], 'one ack per frame')
  t.equal(kept.length, 3, 'kept while on: the first frame and the two after switching on again')
  again()
  p.frame()
  t.same(p.acks, [1, 2, 3, 4, 5])
})

t.test('the page goes away: its listeners go with it, nothing is sent to it', async t => {
  const clock = new FakeClock()
  const p = page(clock)
  const { c } = collector(clock)
  const before = p.listeners()
  const detach = attach(c, p.session)
  p.frame()
  p.abort.abort()
  detach()
  t.equal(p.listeners(), before, 'no listener left on a session that went away')
  t.equal(p.sent.filter(m => m === 'Page.stopScreencast').length, 0, 'no stop sent to a page that is gone')
  t.same(p.acks, [1])
})

t.test('acks are paced at the rate cap: one per slot, at most 8 held, the held ones sent at switch-off', async t => {
  const clock = new FakeClock()
  const p = page(clock)
  const { c, kept } = collector(clock) // 5 fps: a slot is 200 ms
  const detach = attach(c, p.session)
  p.frame() // t = 1000, after a quiet spell
  t.same(p.acks, [1], 'the first frame after a quiet spell: acknowledged at once')
  for (let i = 2; i <= 9; i++) p.frame(10)
  t.same(p.acks, [1], 'eight frames within the slot: all held')
  t.same(clock.dueIn, [120, 120], 'at t = 1080: the ack slot and the rate cap slot, both at t = 1200')
  p.frame(10) // a ninth unacknowledged frame: Chromium is not pacing as expected
  t.same(p.acks, [1, 2], 'never more than eight held: the oldest goes at once')
  t.equal(c.stats.maxHeldAcks, 8)
  clock.advance(109)
  t.same(p.acks, [1, 2], 'not before the slot')
  clock.advance(1)
  t.same(p.acks, [1, 2, 3], 'the next at its slot (t = 1200)')
  clock.advance(199)
  t.same(p.acks, [1, 2, 3])
  clock.advance(1)
  t.same(p.acks, [1, 2, 3, 4], 'one more a slot later (t = 1400)')
  t.same(
    kept.map(f => f.jpeg.toString()),
    ['frame 1', 'frame 10'],
    'kept: the first frame and the last one waiting for the slot',
  )
  t.equal(c.stats.rateLimited, 8, 'the eight in between were replaced while waiting')
  p.frame(10) // t = 1410
  t.same(p.acks, [1, 2, 3, 4])
  detach()
  t.same(p.acks, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 'switched off: the held acks sent at once, oldest first')
  t.equal(clock.pending, 0, 'no timer left')
  p.frame(10)
  t.same(p.acks.length, 12, 'after the switch-off every frame is acknowledged at once')
})
