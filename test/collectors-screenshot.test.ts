// Screenshot collector through the real Monitor against real headless Chromium: PNG of the
// viewport, cadence, stop/restart with the category, page_load captures, duplicate skipping,
// rescaling under the envelope cap, which page is "active", and the default 5 s cadence (on an
// injected clock) against a held page load.
import t, { type Test } from 'tap'
import { inflateSync } from 'node:zlib'
import CDP from 'chrome-remote-interface'
import { Monitor, type Collector } from '../src/monitor/index.js'
import { DEFAULT_CATEGORIES, type Emit, type Pipeline } from '../src/pipeline/pipeline.js'
import type { Envelope } from '../src/events/index.js'
import { createScreenshotCollector, type ScreenshotCollectorOptions } from '../collectors/screenshot.js'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor, type TestServer } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { FakeClock } from './helpers/fake-timers.js'

const WITH_SCREENSHOTS = [...DEFAULT_CATEGORIES, 'screenshot' as const]
const PAGES = {
  '/ticker':
    '<body style="margin:0"><div id="c" style="font-size:80px"></div><script>let i = 0; setInterval(() => { c.textContent = i++ }, 30)</script></body>',
  '/static': '<body style="margin:0;background:#eee"><h1>still</h1></body>',
  '/red': '<body style="margin:0;padding-left:20px;background:rgb(255,0,0)"><p>red</p></body>',
  '/blue': '<body style="margin:0;padding-left:20px;background:rgb(0,0,255)"><p>blue</p></body>',
  '/green': '<body style="margin:0;padding-left:20px;background:rgb(0,255,0)"><p>green</p></body>',
  '/noise': `<body style="margin:0;overflow:hidden"><canvas id="n"></canvas><script>
    n.width = innerWidth; n.height = innerHeight
    const ctx = n.getContext('2d'), img = ctx.createImageData(n.width, n.height)
    for (let i = 0; i < img.data.length; i++) img.data[i] = (i % 4 === 3) ? 255 : Math.random() * 256
    ctx.putImageData(img, 0, 0)</script></body>`,
}

/** Width/height from the IHDR chunk, after checking the PNG signature. */
function pngSize(b64: string): { width: number; height: number } {
  const buf = Buffer.from(b64, 'base64')
  if (!buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    throw new Error('not a PNG')
  if (buf.toString('latin1', 12, 16) !== 'IHDR') throw new Error('no IHDR first')
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) }
}

/** RGB of the top-left pixel (for any filter type, the first pixel's raw bytes are its value). */
function firstPixel(b64: string): [number, number, number] {
  const buf = Buffer.from(b64, 'base64')
  const idat: Buffer[] = []
  for (let off = 8; off < buf.length;) {
    const len = buf.readUInt32BE(off)
    if (buf.toString('latin1', off + 4, off + 8) === 'IDAT') idat.push(buf.subarray(off + 8, off + 8 + len))
    off += 12 + len
  }
  const raw = inflateSync(Buffer.concat(idat))
  return [raw[1]!, raw[2]!, raw[3]!]
}

interface Shot {
  ts: number
  png: string
  envelope: Envelope
}
const PNG_1PX = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)

async function setup(
  t: Test,
  server: TestServer,
  startPath: string,
  opts: Partial<ScreenshotCollectorOptions>,
  maxEnvelopeBytes?: number,
) {
  const browser = await startBrowser(t, { startUrl: server.url + startPath.slice(1) })
  const pageId = (await CDP.List({ port: browser.port })).find(x => x.type === 'page')!.id
  const client = await CDP({ port: browser.port, target: pageId })
  t.teardown(() => client.close())
  const value = async (expression: string) =>
    (await client.Runtime.evaluate({ expression, returnByValue: true })).result.value as unknown
  // Right after launch the headless window is not sized yet (outerHeight 0, a taller viewport).
  await waitFor(
    async () =>
      await value(
        `document.readyState === 'complete' && outerHeight > 0 && location.pathname === ${JSON.stringify(startPath)}`,
      ),
    10000,
    'start page loaded',
  )
  const { pipeline } = await openStore(
    t,
    {},
    { categories: WITH_SCREENSHOTS, ...(maxEnvelopeBytes ? { maxEnvelopeBytes } : {}) },
  )
  const shots: Shot[] = []
  const emit: Emit = input => {
    const r = pipeline.emit(input)
    if (r.accepted !== undefined && r.envelope.event.type === 'monitor_screenshot')
      shots.push({ ts: r.envelope.event.ts, png: r.envelope.event.data.png, envelope: r.envelope })
    return r
  }
  const collector = createScreenshotCollector({
    isEnabled: () => pipeline.isEnabled('screenshot'),
    onEnabledChange: l => pipeline.onCategoriesChanged(s => l(s.has('screenshot'))),
    ...opts,
  })
  // Sees every Page.captureScreenshot the collector sends: start/end times prove the in-flight and spacing rules.
  const calls: { start: number; end?: number }[] = []
  const inFlight = { now: 0, max: 0 }
  // withhold.next: the next capture is never answered, as Chromium sometimes does when a navigation replaces its document.
  const withhold = { next: false }
  const spy: Collector = {
    name: 'spy',
    attach: (session, e) =>
      collector.attach!(
        new Proxy(session, {
          get(target, prop) {
            if (prop !== 'send') return Reflect.get(target, prop, target)
            return async (method: string, params?: object) => {
              if (method !== 'Page.captureScreenshot')
                return (target.send as (m: string, p?: object) => Promise<unknown>)(method, params)
              const call: { start: number; end?: number } = { start: performance.now() }
              calls.push(call)
              if (withhold.next) {
                withhold.next = false
                return new Promise(() => undefined)
              }
              inFlight.max = Math.max(inFlight.max, ++inFlight.now)
              try {
                return await (target.send as (m: string, p?: object) => Promise<unknown>)(method, params)
              } finally {
                call.end = performance.now()
                inFlight.now--
              }
            }
          },
        }),
        e,
      ),
  }
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit, collectors: [spy] })
  t.teardown(() => monitor.stop())
  await monitor.start()
  const viewport = (await value('[innerWidth * devicePixelRatio, innerHeight * devicePixelRatio]')) as [number, number]
  return {
    browser,
    pipeline: pipeline as Pipeline,
    shots,
    calls,
    inFlight,
    withhold,
    collector,
    monitor,
    client,
    pageId,
    viewport,
  }
}

/**
 * A page at /<path> whose load waits for an image the server holds until release() (a changing
 * counter keeps frames distinct); requested() tells whether the image was asked for.
 */
function heldLoad(server: TestServer, path: string) {
  let release: () => void = () => undefined
  const held = new Promise<void>(r => {
    release = r
  })
  let requested = false
  server.route(`/${path}.png`, (_req, res) => {
    requested = true
    void held.then(() => {
      res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' })
      res.end(PNG_1PX)
    })
  })
  server.route(
    `/${path}`,
    `<body style="margin:0;background:rgb(255,0,0)"><div id="c" style="font-size:60px"></div><img src="/${path}.png"><script>let i = 0; setInterval(() => ` +
      `{ c.textContent = i++ }, 20)</script></body>`,
  )
  return { release, requested: () => requested }
}

t.test('screenshots', async t => {
  const server = await startServer(t, PAGES)

  t.test(
    'viewport PNG on the configured cadence; stops when disabled, resumes when enabled (injected clock)',
    async t => {
      // The collector's timers run on a manual clock: the cadence is exact, and "no capture while
      // disabled" is shown by moving that clock past four intervals, not by waiting for them.
      const clock = new FakeClock()
      const { pipeline, shots, calls, collector, viewport } = await setup(t, server, '/ticker', {
        intervalMs: 400,
        minIntervalMs: 100,
        clock,
      })
      // The monitor replays the start page's load after attach: one capture, answered first.
      await waitFor(() => calls.length === 1 && calls[0]!.end !== undefined, 10000, "the capture for the page's load")
      t.same(clock.dueIn, [400], 'one ticker, 400 ms away, nothing else pending')
      for (let n = 1; n <= 5; n++) {
        clock.advance(400)
        t.equal(calls.length, 1 + n, `the ticker started capture ${n} at ${400 * n} ms`)
        await waitFor(() => calls[n]!.end !== undefined, 10000, `capture ${n} answered`)
      }
      // The page changes every 30 ms: no capture is a duplicate of the one before.
      await waitFor(() => shots.length === 6, 10000, '6 screenshots')
      for (const s of shots) {
        t.same(pngSize(s.png), { width: viewport[0], height: viewport[1] })
        t.same(Object.keys(s.envelope.event.data), ['png'])
        t.same(s.envelope.event.source, { kind: 'cdp', event: 'Page.captureScreenshot' })
        t.equal(s.envelope.event.category, 'screenshot')
        t.equal(s.envelope.event.truncated, undefined)
      }
      t.ok(
        calls.every((c, i) => i === 0 || c.start >= calls[i - 1]!.end!),
        'at most one capture in flight',
      )

      pipeline.setCategories(DEFAULT_CATEGORIES)
      t.same(clock.dueIn, [], 'disabled: no timer left that could start a capture')
      const captured = collector.stats.captured
      const emitted = shots.length
      clock.advance(1600)
      t.equal(calls.length, 6, 'no capture started in four intervals while disabled')
      t.equal(collector.stats.captured, captured, 'no captures while disabled')
      t.equal(shots.length, emitted, 'no screenshots while disabled')

      pipeline.setCategories(WITH_SCREENSHOTS)
      t.equal(calls.length, 7, 'switching on captures at once')
      await waitFor(() => calls[6]!.end !== undefined, 10000, 'that capture answered')
      t.same(clock.dueIn, [400], 'and the ticker runs again')
      clock.advance(400)
      t.equal(calls.length, 8, 'a capture one interval later')
      await waitFor(() => shots.length > emitted, 5000, 'screenshot after re-enabling')
    },
  )

  t.test('one capture after each page load (interval far away)', async t => {
    const { shots, client } = await setup(t, server, '/red', { intervalMs: 600_000, minIntervalMs: 50 })
    await client.Page.enable()
    const colored = (rgb: readonly number[]) => shots.filter(s => firstPixel(s.png).join() === rgb.join())
    for (const [path, rgb] of [
      ['blue', [0, 0, 255]],
      ['green', [0, 255, 0]],
    ] as const) {
      const loaded = client.Page.loadEventFired()
      await client.Page.navigate({ url: server.url + path })
      await loaded
      await waitFor(() => colored(rgb).length > 0, 5000, `screenshot after loading ${path}`)
      t.equal(colored(rgb).length, 1, `one screenshot of ${path}`)
    }
  })

  t.test(
    'a capture Chromium never answers is given up when its page navigates, and the new page is captured',
    async t => {
      const { shots, client, pipeline, collector, withhold, calls } = await setup(t, server, '/red', {
        intervalMs: 600_000,
        minIntervalMs: 50,
        captureTimeoutMs: 600_000, // only the navigation can free the collector
      })
      await client.Page.enable()
      const colored = (rgb: readonly number[]) => shots.filter(s => firstPixel(s.png).join() === rgb.join())
      await waitFor(() => colored([255, 0, 0]).length === 1, 10000, 'the start page captured')
      await waitFor(() => calls.every(c => c.end !== undefined), 10000, 'no capture in flight')
      // Off and on again: switching on captures at once, and that capture is never answered.
      withhold.next = true
      const stranded = calls.length
      pipeline.setCategories(DEFAULT_CATEGORIES)
      pipeline.setCategories(WITH_SCREENSHOTS)
      await waitFor(() => calls.length > stranded, 10000, 'the capture on switching on')
      t.equal(withhold.next, false, 'that capture is the withheld one')
      const loaded = client.Page.loadEventFired()
      await client.Page.navigate({ url: server.url + 'blue' })
      await loaded
      await waitFor(() => colored([0, 0, 255]).length > 0, 10000, 'screenshot after loading blue')
      t.equal(collector.stats.abandoned, 1, 'the withheld capture was abandoned')
      t.equal(calls[stranded]!.end, undefined, 'and is still unanswered')
      t.equal(colored([0, 0, 255]).length, 1, 'one screenshot of blue')
    },
  )

  t.test('captures go on while a page loads, one in flight at most, and never hold its load event back', async t => {
    const { release, requested: imageRequested } = heldLoad(server, 'loading')
    const { calls, inFlight, client, collector } = await setup(t, server, '/static', {
      intervalMs: 100,
      minIntervalMs: 50,
    })
    await client.Page.enable()
    let loadedAt: number | undefined
    const loaded = client.Page.loadEventFired().then(() => {
      loadedAt = performance.now()
    })
    await client.Page.navigate({ url: `${server.url}loading` })
    await waitFor(imageRequested, 5000, 'the held image requested')
    const startedLoading = calls.length
    await waitFor(
      () => calls.filter(c => c.end !== undefined).length >= startedLoading + 3,
      10000,
      'three captures while the load is pending',
    )
    t.equal(loadedAt, undefined, 'no load event yet: the captures did not wait for it')
    const releasedAt = performance.now()
    release()
    await loaded
    t.ok(loadedAt! >= releasedAt, 'load fired once the image came')
    // The capture after load (requested by Page.loadEventFired) follows the load, not the other way round.
    await waitFor(() => calls.some(c => c.start >= loadedAt! && c.end !== undefined), 5000, 'a capture after the load')
    // A capture abandoned after a navigation may stay unanswered while the next one runs.
    t.ok(
      inFlight.max <= 1 + collector.stats.abandoned,
      `never more than one capture in flight besides abandoned ones (max ${inFlight.max}, abandoned ${collector.stats.abandoned})`,
    )
  })

  t.test(
    'default cadence (5 s, minimum 1 s; injected clock): interval captures run while a load is pending, the load fires with one started, its own capture waits for the minimum interval, one in flight at most',
    async t => {
      // The collector has its default intervals, driven by a manual clock so five seconds pass in one
      // call (Chromium and the captures themselves are real).
      const { release, requested: imageRequested } = heldLoad(server, 'loading-default')
      const clock = new FakeClock()
      const { calls, inFlight, client, shots, collector } = await setup(t, server, '/static', { clock })
      // The monitor replays the start page's load after attach (lifecycle stand-in): one capture, answered first.
      await waitFor(
        () => calls.length === 1 && calls[0]!.end !== undefined,
        10000,
        "the capture for the adopted page's load",
      )
      const base = 1
      t.same(clock.dueIn, [5000], 'defaults: one ticker, 5 s away, nothing else pending')
      await client.Page.enable()
      let loadedAt: number | undefined
      const loaded = client.Page.loadEventFired().then(() => {
        loadedAt = performance.now()
      })
      await client.Page.navigate({ url: `${server.url}loading-default` })
      await waitFor(imageRequested, 5000, 'the held image requested')
      t.equal(calls.length, base, 'a navigation asks for no capture')
      const ended = (n: number) => waitFor(() => calls[base + n - 1]?.end !== undefined, 10000, `capture ${n} answered`)
      for (let n = 1; n <= 2; n++) {
        clock.advance(5000)
        t.equal(calls.length, base + n, `the ticker started capture ${n} at ${5000 * n} ms`)
        await ended(n)
      }
      t.equal(loadedAt, undefined, 'two interval captures answered while the load was pending: they do not wait for it')
      // The third tick and the image in the same turn: the load races a capture Chromium is taking.
      clock.advance(5000)
      t.equal(calls.length, base + 3, 'the ticker started capture 3 at 15000 ms')
      release()
      await loaded
      // Which of the load and capture 3's answer comes first is Chromium's race; what follows holds for both.
      t.type(loadedAt, 'number', 'the load fired once the image was released')
      await ended(3)
      // The load asked for a capture: deferred to the minimum interval after capture 3, not run next to it.
      await waitFor(() => clock.dueIn.join() === '1000,5000', 5000, 'the load capture deferred')
      t.equal(
        calls.length,
        base + 3,
        'no capture started on the load while one was in flight or within the minimum interval',
      )
      clock.advance(999)
      t.equal(calls.length, base + 3, 'not before 1000 ms')
      clock.advance(1)
      t.equal(calls.length, base + 4, 'the load capture, 1000 ms after the previous one')
      await ended(4)
      t.ok(calls[base + 3]!.start >= loadedAt!, 'it follows the load event')
      // A capture abandoned after a navigation may stay unanswered while the next one runs.
      t.ok(
        inFlight.max <= 1 + collector.stats.abandoned,
        `never more than one capture in flight besides abandoned ones (max ${inFlight.max}, abandoned ${collector.stats.abandoned})`,
      )
      t.ok(
        calls.every((c, i) => i === 0 || c.start >= calls[i - 1]!.end!),
        'each capture starts after the previous one answered',
      )
      await waitFor(() => shots.length >= 2, 5000, 'frames stored')
      t.same(firstPixel(shots.at(-1)!.png), [255, 0, 0], 'the last frame is the loaded page')
    },
  )

  t.test('identical consecutive frames are skipped', async t => {
    const { shots, collector } = await setup(t, server, '/static', { intervalMs: 150, minIntervalMs: 50 })
    await waitFor(() => collector.stats.duplicates >= 4, 10000, 'duplicate frames')
    t.equal(shots.length, 1)
    t.equal(collector.stats.emitted, 1)
  })

  t.test('a PNG too large for the envelope is re-captured smaller, never truncated', async t => {
    const cap = 60_000
    const { shots, collector, viewport } = await setup(
      t,
      server,
      '/noise',
      { intervalMs: 300, minIntervalMs: 50, maxBytes: cap },
      cap,
    )
    await waitFor(() => shots.length >= 1, 15000, 'scaled screenshot')
    const s = shots[0]!
    const size = pngSize(s.png)
    t.ok(
      size.width < viewport[0] && size.width > 0 && size.height < viewport[1] && size.height > 0,
      `scaled to ${size.width}x${size.height} from ${viewport.join('x')}`,
    )
    t.ok(Math.abs(size.width / size.height - viewport[0] / viewport[1]) < 0.1, 'aspect ratio kept')
    t.ok(Buffer.byteLength(JSON.stringify(s.envelope)) <= cap, 'envelope within the cap')
    t.equal(s.envelope.event.truncated, undefined)
    t.ok(collector.stats.rescaled >= 1)
    t.equal(collector.stats.oversize, 0)
  })

  t.test('the active page is the one most recently opened or navigated', async t => {
    const { shots, collector, browser, client, pageId } = await setup(t, server, '/red', {
      intervalMs: 200,
      minIntervalMs: 50,
    })
    await waitFor(() => shots.length >= 1, 5000, 'first screenshot')
    t.same(firstPixel(shots.at(-1)!.png), [255, 0, 0])
    const res = await fetch(`${browser.httpUrl}/json/new?${server.url}blue`, { method: 'PUT' })
    const { id: blueId } = (await res.json()) as { id: string }
    await waitFor(() => collector.activeTargetId() === blueId, 5000, 'new tab active')
    await waitFor(() => shots.length > 0 && firstPixel(shots.at(-1)!.png)[2] === 255, 5000, 'blue screenshot')
    await client.Page.enable()
    const loaded = client.Page.loadEventFired()
    await client.Page.navigate({ url: `${server.url}green` })
    await loaded
    await waitFor(() => collector.activeTargetId() === pageId, 5000, 'navigated tab active again')
    await waitFor(() => firstPixel(shots.at(-1)!.png)[1] === 255, 5000, 'green screenshot')
    t.same(firstPixel(shots.at(-1)!.png), [0, 255, 0])
    // Closing the active tab hands over to the next most recent one.
    await fetch(`${browser.httpUrl}/json/close/${pageId}`)
    await waitFor(() => collector.activeTargetId() === blueId, 5000, 'blue active after close')
    await waitFor(() => firstPixel(shots.at(-1)!.png)[2] === 255, 5000, 'blue screenshot again')
  })
})
