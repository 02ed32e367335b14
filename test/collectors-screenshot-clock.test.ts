// Screenshot scheduling on a manual clock and a fake page session (no browser, no real timers):
// the interval ticker, the minimum-interval deferral, the capture timeout, and that disabling the
// category or detaching the last page leaves no timer behind. The real-Chromium behaviour (PNG
// content, rescaling, active page) is covered by collectors-screenshot.test.ts.
import t from 'tap'
import { FakeClock } from './helpers/fake-timers.js'
import { fakeAccepted } from './helpers/store.js'
import { fakeSession } from './helpers/fake-session.js'
import { createScreenshotCollector } from '../collectors/screenshot.js'
import type { EventInput } from '../src/pipeline/pipeline.js'

/** A page session whose captureScreenshot answers with a fresh frame each time (or never, when `stuck`). */
function fakePage(id = 'P1') {
  const state = { shots: 0, stuck: false }
  const page = fakeSession(
    'page',
    method => {
      if (method !== 'Page.captureScreenshot') return Promise.resolve({})
      if (state.stuck) return new Promise(() => undefined)
      return Promise.resolve({ data: `frame-${++state.shots}` })
    },
    id,
  )
  return { ...page, state }
}

/** Lets the capture's promise chain run (captures are async; the clock is not). */
const settle = () => new Promise(r => setImmediate(r))

function setup(opts: { intervalMs?: number; minIntervalMs?: number; captureTimeoutMs?: number } = {}) {
  const clock = new FakeClock()
  const frames: string[] = []
  const emit = (e: EventInput) => {
    frames.push((e.data as { png: string }).png)
    return fakeAccepted(e)
  }
  let enabled = false
  let listener: ((on: boolean) => void) | undefined
  let subscriptions = 0
  const collector = createScreenshotCollector({
    ...opts,
    clock,
    isEnabled: () => enabled,
    onEnabledChange: l => {
      listener = l
      subscriptions++
      return () => {
        listener = undefined
        subscriptions--
      }
    },
  })
  const setEnabled = (on: boolean) => {
    enabled = on
    listener?.(on)
  }
  return { clock, frames, emit, collector, setEnabled, subscriptions: () => subscriptions }
}

t.test('interval ticker and minimum interval run on the injected clock', async t => {
  const s = setup({ intervalMs: 5000, minIntervalMs: 1000 })
  const page = fakePage()
  const detach = s.collector.attach!(page.session, s.emit) as () => void
  t.equal(s.clock.pending, 0, 'category off: no timer at attach')
  s.setEnabled(true)
  await settle()
  t.same(s.frames, ['frame-1'], 'switching the category on captures at once')
  t.same(s.clock.dueIn, [5000], 'one interval ticker')
  page.fire('Page.loadEventFired')
  t.same(s.clock.dueIn, [1000, 5000], 'a load right after a capture is deferred to the minimum interval')
  s.clock.advance(999)
  await settle()
  t.same(s.frames, ['frame-1'])
  s.clock.advance(1)
  await settle()
  t.same(s.frames, ['frame-1', 'frame-2'], 'the deferred capture at 1000 ms')
  s.clock.advance(4000)
  await settle()
  t.same(s.frames, ['frame-1', 'frame-2', 'frame-3'], 'the ticker at 5000 ms')
  s.clock.advance(5000)
  await settle()
  t.equal(s.frames.length, 4, 'and every 5000 ms')
  t.equal(s.collector.stats.emitted, 4)

  s.setEnabled(false)
  t.equal(s.clock.pending, 0, 'category off: ticker and deferral cleared')
  s.clock.advance(60_000)
  await settle()
  t.equal(s.frames.length, 4)
  s.setEnabled(true)
  await settle()
  t.equal(s.frames.length, 5, 'on again: one capture at once')
  detach()
  detach()
  t.equal(s.clock.pending, 0, 'last page detached: no timer left')
  t.equal(page.listeners(), 0, 'and no listener')
  t.equal(s.subscriptions(), 0, 'and no category subscription')
})

t.test('a capture that never answers is abandoned after captureTimeoutMs; the next one runs', async t => {
  const s = setup({ intervalMs: 5000, minIntervalMs: 1000, captureTimeoutMs: 3000 })
  const page = fakePage()
  void s.collector.attach!(page.session, s.emit)
  page.state.stuck = true
  s.setEnabled(true)
  await settle()
  t.same(s.clock.dueIn, [3000, 5000], 'the capture timeout and the ticker')
  s.clock.advance(3000)
  await settle()
  t.equal(s.collector.stats.failed, 1, 'timed out')
  page.state.stuck = false
  s.clock.advance(2000)
  await settle()
  t.same(s.frames, ['frame-1'], 'the ticker capture after the abandoned one')
})

t.test('the active page is the most recently opened or navigated one', async t => {
  const s = setup()
  const a = fakePage('A')
  const b = fakePage('B')
  void s.collector.attach!(a.session, s.emit)
  const detachB = s.collector.attach!(b.session, s.emit) as () => void
  t.equal(s.collector.activeTargetId(), 'B', 'newest tab')
  a.fire('Page.frameNavigated', { frame: { id: 'A' } })
  t.equal(s.collector.activeTargetId(), 'A', 'main-frame navigation makes a page active')
  b.fire('Page.frameNavigated', { frame: { id: 'sub', parentId: 'B' } })
  t.equal(s.collector.activeTargetId(), 'A', 'a sub-frame navigation does not')
  b.fire('Page.loadEventFired')
  t.equal(s.collector.activeTargetId(), 'B', 'a load does')
  detachB()
  t.equal(s.collector.activeTargetId(), 'A', 'the next most recent takes over')
})
