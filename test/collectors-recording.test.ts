// The recording collector's acknowledgements, with a fake session so the order of a frame and the
// answer to Page.stopScreencast is set exactly: every frame that arrives is acknowledged once,
// before and after recording is switched off, whenever the stop is answered, and again once it is
// switched back on (real Chromium: test/recording-browser.test.ts).
import t from 'tap'
import type { Protocol } from 'devtools-protocol'
import { createRecordingCollector, type CapturedFrame, type RecordingCollector } from '../collectors/recording.js'
import { fakeSession } from './helpers/fake-session.js'
import { FakeClock } from './helpers/fake-timers.js'
import type { Detach, TargetSession } from '../src/monitor/types.js'

/**
 * A fake page session whose Page.stopScreencast is answered only when the test says so; its frames
 * come a second apart on the collector's clock (each gets its slot under the rate cap at once).
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
  const frame = () => {
    clock.advance(1000)
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
