// Screen recording against real headless Chromium, the whole daemon attached through a counting
// relay (what Chromium sends the daemon and what the daemon asks of it, counted on the wire).
//
// "No screencast running" is checked on that wire: screencast frames go only to the CDP session
// that started the screencast, so another client attached to the page could never see the daemon's
// frames, whatever runs. The relay sits on the daemon's own connection: no Page.startScreencast
// sent and no Page.screencastFrame received there means Chromium captures nothing for the daemon.
// "Nothing came" is proved by order, not by waiting a while: the relay sends a command of its own in
// the daemon's session that answers only after the page painted more animation frames; a frame
// Chromium took for the daemon meanwhile is on that wire before the answer.
import t, { type Test } from 'tap'
import CDP from 'chrome-remote-interface'
import { createHash } from 'node:crypto'
import { readdir, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { DaemonHandle } from '../src/main.js'
import type { LaunchedBrowser } from '../src/monitor/launch.js'
import { frameIndexBeforeSeq } from '../src/viewer/model/recording.js'
import { startBrowser } from './helpers/browser.js'
import { countingRelay, daemonBehindRelay } from './helpers/cdp-relay.js'
import { startServer, waitFor } from './helpers/http.js'
import { openStore, tempDir } from './helpers/store.js'
import { FrameStore, type FrameStoreFs } from '../src/recording/frame-store.js'
import { createRecordingCollector } from '../collectors/recording.js'
import { Monitor, RECORDING, type CaptureSwitches } from '../src/monitor/index.js'
import {
  CLICK_COLOR,
  RAF_PAGE,
  SAME_PAGE,
  STEP_COLORS,
  frameJpeg,
  jpegColor,
  listFrames,
  nearest,
  stepsPage,
  type FrameItem,
} from './helpers/recording.js'

const TOKEN = 'recording-token'
t.setTimeout(300_000)

function startRecordingDaemon(t: Test, browser: LaunchedBrowser, args: string[]) {
  return daemonBehindRelay(t, browser.wsUrl, TOKEN, args)
}

/** A new tab (the visible one: the last created), navigated once the daemon attached it. */
async function openTab(t: Test, browser: LaunchedBrowser, d: DaemonHandle, url: string) {
  const opener = await CDP({ target: browser.wsUrl, local: true })
  const { targetId } = await opener.send('Target.createTarget', { url: 'about:blank' })
  await opener.close()
  const session = await waitFor(
    () => d.monitor!.targets().find(x => x.targetId === targetId),
    10_000,
    'tab attached by the daemon',
  )
  const driver = await CDP({
    target: `ws://127.0.0.1:${new URL(browser.wsUrl).port}/devtools/page/${targetId}`,
    local: true,
  })
  t.teardown(() => driver.close())
  await driver.send('Page.enable')
  const loaded = driver.Page.loadEventFired()
  await driver.send('Page.navigate', { url })
  await loaded
  return { targetId, sessionId: session.sessionId, driver }
}

const evaluate = (driver: CDP.Client, expression: string) =>
  driver.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true })

type Relay = Awaited<ReturnType<typeof countingRelay>>

/** A barrier in the daemon's own CDP session: answered once the page painted `n` more animation frames. */
async function painted(relay: Relay, sessionId: string, n = 10): Promise<void> {
  const answer = (await relay.inject(sessionId, 'Runtime.evaluate', {
    expression: `new Promise(r => { let n = ${n}; const f = () => (--n > 0 ? requestAnimationFrame(f) : r(true)); requestAnimationFrame(f) })`,
    awaitPromise: true,
    returnByValue: true,
  })) as { result?: { result?: { value?: unknown } } }
  if (answer.result?.result?.value !== true) throw new Error(`paint barrier: ${JSON.stringify(answer)}`)
}

/** Waits, on the wire, until the daemon acknowledged every frame it was sent on the session. */
const allAcked = (relay: Relay, sessionId: string) =>
  relay.until(
    () => relay.sent('Page.screencastFrameAck', sessionId).length === relay.count('Page.screencastFrame', sessionId),
    10_000,
    'one ack per frame received',
  )

async function events(d: DaemonHandle) {
  await d.log.flush()
  const out: { seq: number; event: { type: string; ts: number; data: Record<string, unknown> } }[] = []
  let cursor: number | undefined
  for (;;) {
    const page = await d.log.read({ order: 'asc', limit: 100, cursor, sinceUs: cursor ? undefined : 0 })
    out.push(...page.records.map(r => JSON.parse(r.json) as (typeof out)[number]))
    if (!page.hasMore) return out
    cursor = page.nextCursor
  }
}

const framesOf = async (d: DaemonHandle, targetId: string): Promise<FrameItem[]> => {
  await d.frames.flush()
  return (await listFrames(d.url, d.browserId, TOKEN)).filter(f => f.target_id === targetId)
}

t.test('recording on: 10 content changes come as frames in order, and a click lines up with its frame', async t => {
  const site = await startServer(t, { '/steps': stepsPage(500) })
  const browser = await startBrowser(t)
  const { d, relay } = await startRecordingDaemon(t, browser, ['--recording'])
  const { targetId, sessionId, driver } = await openTab(t, browser, d, site.url + 'steps')
  t.ok(relay.sent('Page.startScreencast', sessionId).length >= 1, 'the daemon started a screencast on the tab')
  const startParams = relay.sent('Page.startScreencast', sessionId)[0]!.params as Record<string, unknown>
  t.match(startParams, { format: 'jpeg', quality: 50, maxWidth: 960, maxHeight: 540 })
  await evaluate(driver, 'go()')
  await waitFor(async () => (await evaluate(driver, 'window.stepsDone')).result.value === true, 20_000, 'steps')
  // The last state waits at most one slot (200 ms at 5 fps) before it is kept.
  const colorsOf = async (frames: FrameItem[]) =>
    Promise.all(
      frames.map(async f =>
        nearest(await jpegColor(await frameJpeg(d.url, d.browserId, TOKEN, f.frame_id)), [...STEP_COLORS, CLICK_COLOR]),
      ),
    )
  let frames: FrameItem[] = []
  let colors: number[] = []
  await waitFor(
    async () => {
      frames = await framesOf(d, targetId)
      colors = await colorsOf(frames)
      return colors.at(-1) === 10
    },
    10_000,
    'the last state recorded',
  )
  const states = colors.filter((c, i) => i === 0 || c !== colors[i - 1])
  t.same(states.slice(-11), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'every state, in order')
  for (let i = 1; i < frames.length; i++) {
    t.ok(frames[i]!.frame_id > frames[i - 1]!.frame_id, 'frame ids increase')
    t.ok(frames[i]!.ts > frames[i - 1]!.ts, 'timestamps increase')
    t.ok(frames[i]!.after_seq >= frames[i - 1]!.after_seq, 'after_seq never decreases')
  }
  const jpegs = await Promise.all(frames.map(f => frameJpeg(d.url, d.browserId, TOKEN, f.frame_id)))
  const hashes = jpegs.map(b => createHash('sha1').update(b).digest('hex'))
  t.ok(
    hashes.every((h, i) => i === 0 || h !== hashes[i - 1]),
    'no two consecutive frames of the page are identical',
  )
  t.ok(frames.every((f, i) => f.bytes === jpegs[i]!.length && f.width > 0 && f.height > 0))
  t.ok(
    frames.every(f => f.viewport_width! > 0 && f.viewport_height! > 0),
    'viewport size carried',
  )
  // Frame ts on the events' clock: within the span of the page's events.
  const all = await events(d)
  const nav = all.find(e => e.event.type === 'page_navigation' && e.event.data.target_id === targetId)!
  t.ok(frames[0]!.ts >= nav.event.ts - 5_000_000 && frames.at(-1)!.ts <= Date.now() * 1000, 'ts on the events clock')

  // The click: its marker goes on the frame before the click's seq, which still shows state 10.
  for (const type of ['mousePressed', 'mouseReleased'] as const)
    await driver.send('Input.dispatchMouseEvent', { type, x: 100, y: 100, button: 'left', clickCount: 1 })
  const click = await waitFor(
    async () =>
      (await events(d)).find(e => e.event.type === 'interaction_click' && e.event.data.target_id === targetId),
    10_000,
    'interaction_click',
  )
  await waitFor(
    async () => {
      frames = await framesOf(d, targetId)
      colors = await colorsOf(frames)
      return colors.at(-1) === STEP_COLORS.length
    },
    10_000,
    'the red frame after the click',
  )
  const at = frameIndexBeforeSeq(frames, click.seq)
  t.ok(at >= 0, 'a frame before the click')
  t.equal(colors[at], 10, 'the frame before the click shows the page before it')
  t.equal(colors[at + 1], STEP_COLORS.length, 'the next frame shows what the click did')
  t.ok(frames[at + 1]!.after_seq >= click.seq, 'and is after the click in seq order')
  t.ok(frames[at]!.ts <= click.event.ts, 'the marker frame is not later than the click')
})

t.test('recording off: no screencast on the wire; PATCH switches it on and off again live', async t => {
  const site = await startServer(t, { '/raf': RAF_PAGE })
  const browser = await startBrowser(t)
  const { d, relay } = await startRecordingDaemon(t, browser, [])
  const { targetId, sessionId } = await openTab(t, browser, d, site.url + 'raf')
  await painted(relay, sessionId)
  t.equal(relay.sent('Page.startScreencast').length, 0, 'no screencast started while off')
  t.equal(relay.count('Page.screencastFrame', sessionId), 0, 'no frame flows to the daemon while off')
  t.same(await framesOf(d, targetId), [], 'nothing stored')
  t.equal(d.screencast!.recording.size, 0)

  const patch = async (enabled: boolean) => {
    const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ recording: { enabled } }),
    })
    t.equal(res.status, 200)
    t.same(((await res.json()) as { recording: unknown }).recording, { enabled })
    await d.monitor!.planApplied()
  }
  await patch(true)
  t.equal(relay.sent('Page.startScreencast', sessionId).length, 1, 'screencast started on the page')
  await waitFor(async () => (await framesOf(d, targetId)).length >= 5, 10_000, 'frames while on')
  t.ok(relay.count('Page.screencastFrame', sessionId) > 0, 'frames flow while on')
  await patch(false)
  t.equal(relay.sent('Page.stopScreencast', sessionId).length, 1, 'screencast stopped on the page')
  await relay.until(() => relay.answered('Page.stopScreencast', sessionId) === 1, 10_000, 'the stop answered')
  // Frames Chromium took before it stopped come before this barrier's answer.
  await painted(relay, sessionId)
  const seen = relay.count('Page.screencastFrame', sessionId)
  const stored = (await framesOf(d, targetId)).length
  await painted(relay, sessionId)
  t.equal(
    relay.count('Page.screencastFrame', sessionId),
    seen,
    'no frame flows once switched off (the page still repaints)',
  )
  t.equal((await framesOf(d, targetId)).length, stored, 'nothing more stored')
  await allAcked(relay, sessionId)
  t.equal(
    relay.sent('Page.screencastFrameAck', sessionId).length,
    relay.count('Page.screencastFrame', sessionId),
    'every frame received was acknowledged, those after the stop too',
  )
  await patch(true)
  await waitFor(async () => (await framesOf(d, targetId)).length > stored, 10_000, 'frames again once on')
})

t.test('a tab switch moves the recording to the tab now visible', async t => {
  const site = await startServer(t, { '/raf': RAF_PAGE, '/steps': stepsPage(300) })
  const browser = await startBrowser(t)
  const { d } = await startRecordingDaemon(t, browser, ['--recording'])
  const a = await openTab(t, browser, d, site.url + 'raf')
  await waitFor(async () => (await framesOf(d, a.targetId)).length >= 3, 10_000, 'frames of tab A')
  const b = await openTab(t, browser, d, site.url + 'raf')
  await waitFor(
    async () => (await framesOf(d, b.targetId)).length >= 3,
    10_000,
    'frames of tab B once it is the visible one',
  )
  const aCount = (await framesOf(d, a.targetId)).length
  // Five more frames of the visible tab B: frames tab A would have had meanwhile come no later.
  const bCount = (await framesOf(d, b.targetId)).length
  await waitFor(async () => (await framesOf(d, b.targetId)).length >= bCount + 5, 10_000, '5 more frames of tab B')
  t.equal((await framesOf(d, a.targetId)).length, aCount, 'hidden tab A is not recorded')
  const browserCdp = await CDP({ target: browser.wsUrl, local: true })
  t.teardown(() => browserCdp.close())
  await browserCdp.send('Target.activateTarget', { targetId: a.targetId })
  await waitFor(
    async () => (await framesOf(d, a.targetId)).length >= aCount + 3,
    10_000,
    'tab A recorded again after the switch',
  )
})

t.test('identical frames are dropped; the rate cap holds', async t => {
  const site = await startServer(t, { '/same': SAME_PAGE, '/raf': RAF_PAGE })
  const browser = await startBrowser(t)
  const { d } = await startRecordingDaemon(t, browser, ['--recording', '--recording-max-fps', '4'])
  const same = await openTab(t, browser, d, site.url + 'same')
  const dupBefore = d.screencast!.stats.duplicates
  await waitFor(() => d.screencast!.stats.duplicates - dupBefore > 10, 10_000, '10 identical repaints received')
  // Before the canvas paints, the page may show once blank: at most that and the canvas are kept.
  t.ok((await framesOf(d, same.targetId)).length <= 2, 'a page that repaints the same pixels is stored once')

  const raf = await openTab(t, browser, d, site.url + 'raf')
  const frames = await waitFor(
    async () => {
      const f = await framesOf(d, raf.targetId)
      return f.length >= 16 && f
    },
    30_000,
    '16 frames of a page that changes every animation frame',
  )
  // A frame waits for its slot and keeps its arrival time, so two can be closer than 1/fps; any one
  // second still holds at most fps + 1 of them (at most 4 fps). How close to 4 fps a loaded machine
  // gets is bench/recording.ts's to measure (frames per minute of its canvas page).
  // The rule's bound, which load cannot break (a late frame waits for its slot): the closest six
  // spanned 1,233-1,248 ms over 3 runs of this file at load 7-15 (1,250 at exactly 4 fps).
  let closest = Infinity
  for (let i = 0; i + 5 < frames.length; i++) closest = Math.min(closest, frames[i + 5]!.ts - frames[i]!.ts)
  t.ok(
    closest > 1_000_000,
    `at most 5 frames in any second at 4 fps (6 frames span ${Math.round(closest / 1000)} ms at least)`,
  )
})

t.test('hostile: a page repainting every animation frame, a small store', async t => {
  const FPS = 5
  const BOUND = 1024 * 1024
  const site = await startServer(t, { '/raf': RAF_PAGE })
  const browser = await startBrowser(t)
  const started = Date.now() * 1000
  const { d, dir, relay } = await startRecordingDaemon(t, browser, [
    '--recording',
    '--recording-max-bytes',
    String(BOUND),
    '--recording-quality',
    '95',
  ])
  const raf = await openTab(t, browser, d, site.url + 'raf?noise')
  const logsBefore = (await evaluate(raf.driver, 'window.logs()')).result.value as number
  const from = Date.now() * 1000
  // Bytes on disk sampled until the bound forced retention 10 times (the store turned over).
  const bytesSeen: number[] = []
  await waitFor(
    async () => {
      let sum = 0
      for (const f of await readdir(join(dir, 'recording', 'frames')))
        sum += (await stat(join(dir, 'recording', 'frames', f)).catch(() => ({ size: 0 }))).size
      bytesSeen.push(sum)
      return d.frames.stats().removed_by_retention >= 10
    },
    60_000,
    'retention forced 10 times',
  )
  const until = Date.now() * 1000
  const seconds = (until - from) / 1e6
  const logsAfter = (await evaluate(raf.driver, 'window.logs()')).result.value as number
  await d.frames.flush()
  const stats = d.frames.stats()
  t.ok(Math.max(...bytesSeen) <= BOUND, `store bytes on disk never above the bound (max ${Math.max(...bytesSeen)})`)
  t.ok(stats.bytes + stats.pending_bytes <= BOUND, 'store accounting within the bound')
  const all = await listFrames(
    d.url,
    d.browserId,
    TOKEN,
    `since=${new Date(from / 1000).toISOString()}&until=${new Date(until / 1000).toISOString()}`,
  )
  const ofPage = all.filter(f => f.target_id === raf.targetId)
  // Frames removed by retention still had their ids: count every id of the page's window.
  const received = d.screencast!.stats
  // Every page since the daemon started (the first blank tab too) is under the same rate cap.
  const sinceStart = (until - started) / 1e6
  // A bound of the rate cap's rule, which load cannot break (it only lengthens the window). Measured
  // over 11 fresh-clone suite runs (quiet to load 14): 20-22 kept in 5.8-6.5 s, bounds of 50-53.
  t.ok(received.kept <= FPS * sinceStart + 1 + 20, `kept ${received.kept} in ${sinceStart.toFixed(1)} s`)
  const ids = new Set(ofPage.map(f => f.frame_id))
  // Arrival times of kept frames are at least a slot apart but one: at most fps x seconds + 1 in a window.
  // Measured over 11 fresh-clone suite runs (quiet to load 14): 10 frames in 3.1-3.7 s against
  // bounds of 16-19 (1.6x); like the line above, load only lowers the count.
  const most = Math.floor(FPS * seconds) + 1
  t.ok(ids.size <= most, `frames stored in ${seconds.toFixed(1)} s: ${ids.size} <= ${most}`)
  t.ok(stats.removed_by_retention > 0, 'the bound forced retention')
  const state = (await (
    await fetch(`${d.url}/browsers/${d.browserId}/recording`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as { gaps: { reason: string }[] }
  t.ok(
    state.gaps.some(g => g.reason === 'retention'),
    'the retention gap is reported',
  )
  const metrics = await (await fetch(`${d.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  t.match(metrics, /browser_telemetry_recording_enabled 1/)
  t.match(metrics, /browser_telemetry_recording_frames_total\{outcome="stored"\} [1-9]/)
  t.match(metrics, /browser_telemetry_recording_frames_total\{outcome="removed_retention"\} [1-9]/)
  const held = Number(/browser_telemetry_recording_bytes (\d+)/.exec(metrics)?.[1])
  t.ok(held > 0 && held <= BOUND, `recording bytes gauge within the bound (${held})`)
  // Acks paced at the cap: Chromium captures (and encodes) no more frames than are kept, give or
  // take the two it may have in flight per page; unpaced it sent one per animation frame.
  t.ok(
    received.received <= FPS * sinceStart + 1 + 20,
    `Chromium held to the rate cap: received ${received.received} in ${sinceStart.toFixed(1)} s (kept ${received.kept})`,
  )
  // Paced, an ack waits a slot for each frame held before it: Chromium holds at most 3 unacknowledged,
  // so 3 x 200 ms at 5 fps. Measured 586-597 ms over 3 runs of this file at load 1.2 (3 held): 2.5x
  // under this bound, left for timers firing late under load; an ack that waited for the store would
  // come after its 1 MiB-bounded writes and retention.
  t.ok(
    received.maxAckDelayMs < 1500,
    `every frame acknowledged within 1.5 s of its capture (max ${Math.round(received.maxAckDelayMs)} ms)`,
  )
  // Switched off, the frames still on the wire are acknowledged too: one ack per frame received.
  const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ recording: { enabled: false } }),
  })
  t.equal(res.status, 200)
  await d.monitor!.planApplied()
  await relay.until(() => relay.answered('Page.stopScreencast', raf.sessionId) === 1, 10_000, 'the stop answered')
  await painted(relay, raf.sessionId)
  await allAcked(relay, raf.sessionId)
  t.equal(
    relay.sent('Page.screencastFrameAck', raf.sessionId).length,
    relay.count('Page.screencastFrame', raf.sessionId),
    'one ack per frame',
  )
  t.comment(
    `hostile: received ${received.received}, kept ${received.kept}, max ack delay ${Math.round(received.maxAckDelayMs)} ms, max held ${received.maxHeldAcks}`,
  )
  // Event capture unaffected: every console line of the window is stored. A marker logged after them
  // in the same page is stored after them too.
  await evaluate(raf.driver, "console.log('tick barrier')")
  await waitFor(
    async () => (await events(d)).some(e => e.event.type === 'console_log' && e.event.data.text === 'tick barrier'),
    10_000,
    'the marker line stored',
  )
  const logs = (await events(d))
    .filter(e => e.event.type === 'console_log' && e.event.data.target_id === raf.targetId)
    .filter(e => e.event.data.text !== 'tick barrier')
    .map(e => Number(String(e.event.data.text).replace('tick ', '')))
  const want = Array.from({ length: logsAfter - logsBefore }, (_, i) => logsBefore + 1 + i)
  t.same(
    want.filter(n => !logs.includes(n)),
    [],
    `all ${want.length} console lines logged during the flood were captured`,
  )
})

t.test('a store that cannot keep up: frames dropped as a gap, every frame still acknowledged in its slot', async t => {
  const site = await startServer(t, { '/raf': RAF_PAGE })
  const browser = await startBrowser(t)
  const relay = await countingRelay(t, browser.wsUrl)
  // Every write takes 1.5 s: the writer falls behind at once.
  const slowFs: FrameStoreFs = {
    writeFile: async (p, data) => {
      await new Promise(r => setTimeout(r, 1500))
      await writeFile(p, data)
    },
    rename,
    unlink,
  }
  const store = await FrameStore.open({
    dir: await tempDir(t),
    maxBytes: 64 * 1024 * 1024,
    maxPendingFrames: 4,
    fs: slowFs,
  })
  t.teardown(() => store.close())
  const screencast = createRecordingCollector({ sink: store, lastSeq: () => 0, maxFps: 10 })
  const { pipeline } = await openStore(t)
  let switches: CaptureSwitches = { enabled: [RECORDING] }
  const planListeners: ((s: CaptureSwitches) => void)[] = []
  const monitor = new Monitor({
    cdpUrl: relay.url,
    emit: pipeline.emit,
    collectors: [screencast],
    capture: {
      current: () => switches,
      onChange: l => {
        planListeners.push(l)
        return () => undefined
      },
    },
  })
  t.teardown(() => monitor.stop())
  await monitor.start()
  const opener = await CDP({ target: browser.wsUrl, local: true })
  const { targetId } = await opener.send('Target.createTarget', { url: site.url + 'raf' })
  await opener.close()
  const sessionId = (await waitFor(() => monitor.targets().find(x => x.targetId === targetId), 10_000, 'tab attached'))
    .sessionId
  // The writer fell behind and frames kept coming: 30 received while each write takes 1.5 s.
  await waitFor(
    () => store.stats().dropped.backpressure > 0 && screencast.stats.received > 30,
    60_000,
    'frames dropped under backpressure, 30 received',
  )
  // Recording off (as a PATCH would): the screencast stops; frames already on the wire are acked too.
  switches = { enabled: [] }
  for (const l of planListeners) l(switches)
  await monitor.planApplied()
  await relay.until(() => relay.answered('Page.stopScreencast', sessionId) === 1, 10_000, 'the stop answered')
  await painted(relay, sessionId)
  await allAcked(relay, sessionId)
  t.equal(
    relay.sent('Page.screencastFrameAck', sessionId).length,
    relay.count('Page.screencastFrame', sessionId),
    `one ack per frame received (${relay.count('Page.screencastFrame', sessionId)})`,
  )
  t.ok(screencast.stats.received > 30, `frames kept flowing (${screencast.stats.received})`)
  // Paced at 10 fps an ack waits a slot for each frame held before it (3 x 100 ms at most). Measured
  // 284-289 ms over 3 runs of this file at load 1.2: 3.5x under the bound; an ack that waited for the
  // store would wait out its 1.5 s writes.
  t.ok(
    screencast.stats.maxAckDelayMs < 1000,
    `acks not delayed by the store (max ${Math.round(screencast.stats.maxAckDelayMs)} ms)`,
  )
  const stats = store.stats()
  t.ok(stats.dropped.backpressure > 0, `frames dropped under backpressure (${stats.dropped.backpressure})`)
  t.ok(
    store.gaps().some(g => g.reason === 'backpressure'),
    'reported as a gap',
  )
  t.equal(screencast.stats.sinkDropped, stats.dropped.backpressure, 'the collector saw the same drops')
})
