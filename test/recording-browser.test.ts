// Screen recording against real headless Chromium, the whole daemon attached through a counting
// relay (what Chromium sends the daemon and what the daemon asks of it, counted on the wire).
//
// "No screencast running" is checked on that wire: screencast frames go only to the CDP session
// that started the screencast, so another client attached to the page could never see the daemon's
// frames, whatever runs. The relay sits on the daemon's own connection: no Page.startScreencast
// sent and no Page.screencastFrame received there means Chromium captures nothing for the daemon.
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
import { Monitor, RECORDING, capturePlan } from '../src/monitor/index.js'
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
  t.match(startParams, { format: 'jpeg', quality: 60, maxWidth: 1280, maxHeight: 720 })
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
  await new Promise(r => setTimeout(r, 300))
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
  await new Promise(r => setTimeout(r, 1500))
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
  await new Promise(r => setTimeout(r, 500)) // frames already on the wire
  const seen = relay.count('Page.screencastFrame', sessionId)
  const stored = (await framesOf(d, targetId)).length
  await new Promise(r => setTimeout(r, 1500))
  t.equal(
    relay.count('Page.screencastFrame', sessionId),
    seen,
    'no frame flows once switched off (the page still repaints)',
  )
  t.equal((await framesOf(d, targetId)).length, stored, 'nothing more stored')
  t.equal(
    relay.sent('Page.screencastFrameAck', sessionId).length,
    relay.count('Page.screencastFrame', sessionId),
    'every frame received was acknowledged',
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
  await new Promise(r => setTimeout(r, 1000))
  t.ok((await framesOf(d, a.targetId)).length <= aCount + 1, 'hidden tab A is not recorded')
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
  await new Promise(r => setTimeout(r, 2000))
  t.ok(
    d.screencast!.stats.duplicates - dupBefore > 10,
    `identical repaints received and dropped (${d.screencast!.stats.duplicates - dupBefore})`,
  )
  t.ok((await framesOf(d, same.targetId)).length <= 2, 'a page that repaints the same pixels is stored once')

  const raf = await openTab(t, browser, d, site.url + 'raf')
  await new Promise(r => setTimeout(r, 500))
  const from = Date.now() * 1000
  await new Promise(r => setTimeout(r, 3000))
  const until = Date.now() * 1000
  const inWindow = (await framesOf(d, raf.targetId)).filter(f => f.ts >= from && f.ts < until)
  t.ok(inWindow.length <= 4 * 3 + 1, `at most 4 fps: ${inWindow.length} frames in 3 s`)
  t.ok(inWindow.length >= 6, `and close to it (${inWindow.length})`)
  // A frame waits for its slot and keeps its arrival time, so two can be closer than 1/fps; any one
  // second still holds at most fps + 1 of them.
  for (let i = 0; i + 5 < inWindow.length; i++)
    t.ok(inWindow[i + 5]!.ts - inWindow[i]!.ts > 1_000_000, 'at most 5 frames in any second at 4 fps')
})

t.test('hostile: a page repainting every animation frame, a small store', async t => {
  const N = 6
  const FPS = 5
  const BOUND = 1024 * 1024
  const site = await startServer(t, { '/raf': RAF_PAGE })
  const browser = await startBrowser(t)
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
  const bytesSeen: number[] = []
  const deadline = Date.now() + N * 1000
  while (Date.now() < deadline) {
    let sum = 0
    for (const f of await readdir(join(dir, 'recording', 'frames')))
      sum += (await stat(join(dir, 'recording', 'frames', f)).catch(() => ({ size: 0 }))).size
    bytesSeen.push(sum)
    await new Promise(r => setTimeout(r, 200))
  }
  const until = Date.now() * 1000
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
  t.ok(received.kept <= FPS * (N + 2) + 1 + 20, `kept ${received.kept}`)
  const ids = new Set(ofPage.map(f => f.frame_id))
  t.ok(ids.size <= FPS * N + 1, `frames stored in ${N} s: ${ids.size} <= ${FPS * N + 1}`)
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
  t.ok(received.received > received.kept, `Chromium sent more than was kept (${received.received} > ${received.kept})`)
  t.ok(
    received.maxAckDelayMs < 1000,
    `every frame acknowledged within 1 s of its capture (max ${Math.round(received.maxAckDelayMs)} ms)`,
  )
  // Switched off, the frames still on the wire are acknowledged too: one ack per frame received.
  const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ recording: { enabled: false } }),
  })
  t.equal(res.status, 200)
  await waitFor(
    () =>
      relay.sent('Page.screencastFrameAck', raf.sessionId).length ===
      relay.count('Page.screencastFrame', raf.sessionId),
    5000,
    'one ack per frame',
  )
  t.comment(
    `hostile: received ${received.received}, kept ${received.kept}, max ack delay ${Math.round(received.maxAckDelayMs)} ms`,
  )
  // Event capture unaffected: every console line of the window is stored.
  await new Promise(r => setTimeout(r, 300))
  const logs = (await events(d))
    .filter(e => e.event.type === 'console_log' && e.event.data.target_id === raf.targetId)
    .map(e => Number(String(e.event.data.text).replace('tick ', '')))
  const want = Array.from({ length: logsAfter - logsBefore }, (_, i) => logsBefore + 1 + i)
  t.same(
    want.filter(n => !logs.includes(n)),
    [],
    `all ${want.length} console lines logged during the flood were captured`,
  )
})

t.test('a store that cannot keep up: frames dropped as a gap, every frame still acknowledged at once', async t => {
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
  let plan = capturePlan([RECORDING])
  const planListeners: ((p: ReturnType<typeof capturePlan>) => void)[] = []
  const monitor = new Monitor({
    cdpUrl: relay.url,
    emit: pipeline.emit,
    collectors: [screencast],
    capture: {
      current: () => plan,
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
  await new Promise(r => setTimeout(r, 4000))
  // Recording off (as a PATCH would): the screencast stops; frames already on the wire are acked too.
  plan = capturePlan([])
  for (const l of planListeners) l(plan)
  await monitor.planApplied()
  await waitFor(
    () => relay.sent('Page.screencastFrameAck', sessionId).length >= relay.count('Page.screencastFrame', sessionId),
    5000,
    'every frame acknowledged',
  ).catch(() => undefined)
  t.equal(
    relay.sent('Page.screencastFrameAck', sessionId).length,
    relay.count('Page.screencastFrame', sessionId),
    `one ack per frame received (${relay.count('Page.screencastFrame', sessionId)})`,
  )
  t.ok(screencast.stats.received > 30, `frames kept flowing (${screencast.stats.received} in 4 s)`)
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
