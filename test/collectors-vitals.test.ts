// Web Vitals and long animation frames through the real Monitor against real headless Chromium (one
// browser for the file): INP from slow click handlers (with the handler's script), LCP of an image,
// CLS from a late banner, FCP and TTFB with their parts, a long animation frame naming its script.
// What is stored when: poor at once while the page is shown, the rest when the page is left.
import t from 'tap'
import { startServer, waitFor, type Handler } from './helpers/http.js'
import { startCollecting } from './helpers/collector-harness.js'
import { createVitalsCollector } from '../collectors/vitals.js'
import { createPageCollector } from '../collectors/page.js'
import type { TargetSession } from '../src/monitor/index.js'
import { buildBundle } from '../src/bundle/bundle.js'
import { Redactor } from '../src/events/redact.js'
import { unzipAll } from './helpers/bundle.js'

/** Wall-clock epoch ms when this file started: every event it sees happened after. */
const FILE_STARTED_MS = Date.now()

// Chromium leaves low-entropy images (few bytes per pixel) out of LCP: the hero has some detail.
const HERO = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">${Array.from(
  { length: 300 },
  (_, i) =>
    `<rect x="${(i * 37) % 400}" y="${(i * 53) % 300}" width="20" height="20" fill="#${(i * 2654435).toString(16).slice(-6).padStart(6, '0')}"/>`,
).join('')}</svg>`
const APP_JS = `
function busy(ms) { const end = performance.now() + ms; while (performance.now() < end) {} }
document.getElementById('slow300').addEventListener('click', function onSlow300() { busy(300) })
document.getElementById('slow600').addEventListener('click', function onSlow600() { busy(600) })
`
const JANK_JS = `setTimeout(function blockMain() { const end = performance.now() + 120; while (performance.now() < end) {} }, 50)`
const CLS_JS = `setTimeout(function addBanner() {
  const b = document.createElement('div'); b.id = 'banner'; b.style.height = '50px'; b.textContent = 'Sale'
  document.body.prepend(b)
}, 300)`

const file =
  (type: string, body: string): Handler =>
  (_q, s) => {
    s.writeHead(200, { 'content-type': type })
    s.end(body)
  }

t.test('web vitals and long animation frames', async t => {
  const server = await startServer(t, {
    '/inp': `<title>inp</title><body style="margin:0"><button id="slow300" style="width:100px;height:40px">300</button>
<button id="slow600" style="width:100px;height:40px">600</button><script src="/app.js"></script></body>`,
    '/app.js': file('text/javascript', APP_JS),
    '/lcp': '<title>lcp</title><body style="margin:0"><img id="hero" src="/hero.svg" width="400" height="300"></body>',
    '/hero.svg': file('image/svg+xml', HERO),
    '/cls': `<title>cls</title><body style="margin:0"><p id="content" style="margin:0;height:100px">Article text</p><script src="/cls.js"></script></body>`,
    '/cls.js': file('text/javascript', CLS_JS),
    '/jank': '<title>jank</title><body><p>jank</p><script src="/jank.js"></script></body>',
    '/jank.js': file('text/javascript', JANK_JS),
    '/blank': '<title>blank</title>',
  })
  const collector = createVitalsCollector({ flushMs: 50 })
  const h = await startCollecting(t, [createPageCollector(), collector])
  const vitals = (tab: TargetSession, name: string) =>
    h.ofType('page_web_vital', e => h.forTarget(tab)(e) && e.data.name === name)
  const click = async (tab: TargetSession, x: number, y: number) => {
    await tab.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y })
    await tab.send('Input.dispatchMouseEvent', { type: 'mousePressed', x, y, button: 'left', clickCount: 1 })
    await tab.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x, y, button: 'left', clickCount: 1 })
  }

  const close = (a: number, b: number) => Math.abs(a - b) < 1e-6
  const loaded = (tab: TargetSession) =>
    waitFor(async () => (await h.evaluate(tab, 'document.readyState')) === 'complete', 10000, 'loaded')
  // Input sent before the page's first frame is presented may be hit-tested against nothing.
  const painted = async (tab: TargetSession) => {
    await loaded(tab)
    await waitFor(() => collector.latest(tab.targetId).FCP !== undefined, 10000, 'first paint')
    await h.evaluate(tab, 'new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))')
  }
  const held = (tab: TargetSession, name: 'LCP' | 'CLS' | 'INP', pred: (v: number) => boolean = () => true) =>
    waitFor(
      () => {
        const v = collector.latest(tab.targetId)[name]
        return v !== undefined && pred(v)
      },
      10000,
      `${name} held`,
    )

  t.test('INP of a 300 ms handler: needs-improvement, stored when the page is left', async t => {
    const tab = await h.openTab(`${server.url}inp`)
    await painted(tab)
    await click(tab, 50, 20)
    await held(tab, 'INP', v => v >= 300)
    const frame = await h.waitEvent('page_long_animation_frame', e =>
      e.data.scripts.some(s => s.source_function_name === 'onSlow300'),
    )
    t.same(
      frame.data.scripts.map(s => [s.source_url, s.source_function_name, s.invoker, s.invoker_type]),
      [[`${server.url}app.js`, 'onSlow300', 'BUTTON#slow300.onclick', 'event-listener']],
      'the long animation frame names the handler that blocked',
    )
    // Lower bounds the page sets (its handler spins 300 ms on performance.now()): measured frames of
    // 304-308 ms, scripts of 300-302 ms over 3 runs of this file at load 9-18.
    t.ok(
      frame.data.duration >= 300 && frame.data.blocking_duration > 0 && frame.data.scripts[0]!.duration >= 300,
      `frame ${frame.data.duration} ms, blocking ${frame.data.blocking_duration} ms, script ${frame.data.scripts[0]!.duration} ms`,
    )
    t.equal(frame.data.nav_seq, 1)
    t.equal(vitals(tab, 'INP').length, 0, 'not poor: nothing stored while the page is shown')

    await h.navigate(tab, `${server.url}blank`)
    const inp = await waitFor(() => vitals(tab, 'INP')[0], 10000, 'INP stored')
    const d = inp.data
    // The upper bound is web-vitals' needs-improvement limit, which the rating below pins too.
    // Measured 312-328 ms over 6 fresh-clone suite runs (quiet to load 14) and 304-312 over 3 runs of
    // this file at load 9-18: 1.52x under 500 at the worst. Thin-ish: input and presentation delay
    // are what load adds.
    t.ok(d.value >= 300 && d.value <= 500, `value ${d.value}`)
    t.equal(d.rating, 'needs-improvement')
    t.equal(d.delta, d.value, 'the first value stored: delta is the value')
    t.equal(d.nav_seq, 1, 'stored with the context of the page it measured')
    t.equal(d.url, `${server.url}inp`)
    t.equal(d.navigation_type, 'navigate')
    const a = d.attribution
    t.equal(a.interaction_target, '#slow300')
    t.equal(a.interaction_type, 'pointer')
    t.ok(close(a.input_delay! + a.processing_duration! + a.presentation_delay!, d.value), 'parts add up to the value')
    // Measured 302-304 ms over 3 runs of this file at load 9-18 (the handler's 300 ms spin).
    t.ok(a.processing_duration! >= 300, `processing ${a.processing_duration} ms`)
    t.match(a.longest_script, {
      source_url: `${server.url}app.js`,
      source_function_name: 'onSlow300',
      invoker: 'BUTTON#slow300.onclick',
      invoker_type: 'event-listener',
    })
    t.equal(a.longest_script_subpart, 'processing-duration')
    t.same(inp.source, { kind: 'cdp', event: 'Runtime.bindingCalled' })
  })

  t.test('INP of a click on the fifth page of a tab, left by navigation as soon as it is measured', async t => {
    // An agent's next step navigates right after its click. web-vitals alone measures INP in an
    // idle callback up to 1 s later, and its report when the page is hidden never reaches CDP: a
    // navigation inside that second lost the INP (0 of 2 runs clicking, then navigating after two
    // frames). The agent now runs idle callbacks once the interaction's long frames are delivered
    // (at most 150 ms after the next frame) and reports INP at once; the tab navigates the moment
    // the daemon holds it.
    const tab = await h.openTab(`${server.url}blank`)
    for (let i = 0; i < 3; i++) await h.navigate(tab, `${server.url}blank?${i}`)
    await h.navigate(tab, `${server.url}inp`)
    await painted(tab)
    const nav = tab.context().nav_seq!
    await click(tab, 50, 20)
    await held(tab, 'INP', v => v >= 300)
    await h.navigate(tab, `${server.url}blank?after`)
    await waitFor(() => vitals(tab, 'TTFB').find(e => e.data.nav_seq === nav + 1), 10000, "the next page's TTFB")
    const inp = vitals(tab, 'INP')
    t.same(
      inp.map(e => [e.data.nav_seq, e.data.url, e.data.attribution.interaction_target]),
      [[nav, `${server.url}inp`, '#slow300']],
      'the INP of the page left is stored once, with its page and target',
    )
    t.ok(inp[0]!.data.value >= 300, `value ${inp[0]!.data.value}`)
  })

  t.test('INP of a 600 ms handler: poor, stored while the page is still shown', async t => {
    const tab = await h.openTab(`${server.url}inp`)
    await painted(tab)
    await click(tab, 150, 20)
    const inp = await waitFor(() => vitals(tab, 'INP')[0], 10000, 'poor INP')
    t.equal(await h.evaluate(tab, 'document.visibilityState'), 'visible', 'the page is still shown')
    t.equal(tab.context().nav_seq, inp.data.nav_seq, 'and still on the measured document')
    // A lower bound the page sets: measured 608-624 ms over 6 fresh-clone suite runs (quiet to load
    // 14), 608-736 over 3 runs of this file at load 9-18.
    t.ok(inp.data.value >= 600, `value ${inp.data.value}`)
    t.equal(inp.data.rating, 'poor')
    t.equal(inp.data.attribution.interaction_target, '#slow600')
    t.equal(inp.data.attribution.longest_script?.source_url, `${server.url}app.js`)
    t.equal(inp.data.attribution.longest_script?.source_function_name, 'onSlow600')
    await h.navigate(tab, `${server.url}blank`)
    // Leaving is handled at the new document's commit, before its first report (its TTFB).
    await waitFor(() => vitals(tab, 'TTFB').find(e => e.data.nav_seq === 2), 10000, "the next page's TTFB")
    t.equal(vitals(tab, 'INP').length, 1, 'unchanged since stored as poor: not stored again')
  })

  t.test('LCP of an image with its element and URL; FCP and TTFB with their parts', async t => {
    const tab = await h.openTab(`${server.url}lcp`)
    await loaded(tab)
    await h.waitEvent('page_lcp', e => h.forTarget(tab)(e) && e.data.lcp_details.url === `${server.url}hero.svg`)
    await held(tab, 'LCP')
    // FCP and TTFB are final when reported: stored before the page is left.
    const ttfb = await waitFor(() => vitals(tab, 'TTFB')[0], 10000, 'TTFB')
    const fcp = await waitFor(() => vitals(tab, 'FCP')[0], 10000, 'FCP')
    t.equal(vitals(tab, 'LCP').length, 0, 'LCP waits for the page to be left')
    const ta = ttfb.data.attribution
    t.same(Object.keys(ta).sort(), [
      'cache_duration',
      'connection_duration',
      'dns_duration',
      'request_duration',
      'waiting_duration',
    ])
    t.ok(
      close(
        ta.waiting_duration! + ta.cache_duration! + ta.dns_duration! + ta.connection_duration! + ta.request_duration!,
        ttfb.data.value,
      ),
      'TTFB parts add up to the value',
    )
    t.equal(ttfb.data.rating, 'good')
    t.same(Object.keys(fcp.data.attribution).sort(), ['first_byte_to_fcp', 'time_to_first_byte'])
    t.equal(fcp.data.attribution.time_to_first_byte, ttfb.data.value, "FCP's first byte is the TTFB")
    t.ok(close(fcp.data.attribution.time_to_first_byte! + fcp.data.attribution.first_byte_to_fcp!, fcp.data.value))
    t.ok(fcp.data.value > ttfb.data.value)

    await h.navigate(tab, `${server.url}blank`)
    const lcp = await waitFor(() => vitals(tab, 'LCP')[0], 10000, 'LCP stored')
    const la = lcp.data.attribution
    t.equal(la.element, '#hero')
    t.equal(la.url, `${server.url}hero.svg`)
    t.equal(la.time_to_first_byte, ttfb.data.value)
    t.ok(
      close(
        la.time_to_first_byte! + la.resource_load_delay! + la.resource_load_duration! + la.element_render_delay!,
        lcp.data.value,
      ),
      'LCP parts add up to the value',
    )
    t.ok(la.resource_load_duration! > 0, 'the image was loaded')
    t.equal(lcp.data.rating, 'good')
    t.equal(lcp.data.nav_seq, 1)
    t.equal(vitals(tab, 'TTFB').filter(e => e.data.nav_seq === 1).length, 1, 'TTFB stored once')
  })

  t.test('CLS from a late banner with its shift target; stored when the tab closes', async t => {
    const tab = await h.openTab(`${server.url}cls`)
    await loaded(tab)
    const shift = await h.waitEvent('page_layout_shift', h.forTarget(tab))
    await held(tab, 'CLS', v => v > 0)
    t.equal(vitals(tab, 'CLS').length, 0)
    await fetch(`${h.browser.httpUrl}/json/close/${tab.targetId}`)
    const cls = await waitFor(() => vitals(tab, 'CLS')[0], 10000, 'CLS stored')
    const d = cls.data
    t.equal(d.value, shift.data.layout_shift_details.value, 'one shift: CLS is its value')
    t.equal(d.rating, d.value > 0.25 ? 'poor' : d.value > 0.1 ? 'needs-improvement' : 'good')
    t.same(d.attribution, {
      largest_shift_target: '#content',
      largest_shift_value: d.value,
      largest_shift_time: d.attribution.largest_shift_time,
    })
    // A lower bound (the page's 300 ms banner timer): measured 430-732 ms over 3 runs at load 9-18.
    t.ok(d.attribution.largest_shift_time! > 300, `after the banner timer (${d.attribution.largest_shift_time} ms)`)
  })

  t.test('a long animation frame names the script that blocked', async t => {
    const tab = await h.openTab(`${server.url}jank`)
    const frame = await h.waitEvent(
      'page_long_animation_frame',
      e => h.forTarget(tab)(e) && e.data.scripts.some(s => s.source_function_name === 'blockMain'),
    )
    t.same(
      frame.data.scripts.map(s => [s.source_url, s.source_function_name, s.invoker, s.invoker_type]),
      [[`${server.url}jank.js`, 'blockMain', 'TimerHandler:setTimeout', 'user-callback']],
    )
    // A lower bound the page sets (a 120 ms spin): measured 120.1-120.8 ms over 3 runs at load 9-18.
    t.ok(
      frame.data.duration >= 120 && frame.data.scripts[0]!.duration >= 120,
      `frame ${frame.data.duration} ms, script ${frame.data.scripts[0]!.duration} ms`,
    )
    // Epoch milliseconds: between this file's start and now (a monotonic or microsecond clock is not).
    t.ok(
      frame.data.start_time >= FILE_STARTED_MS && frame.data.start_time <= Date.now(),
      `epoch milliseconds (${frame.data.start_time})`,
    )
    t.equal(frame.data.url, `${server.url}jank`)
  })

  t.test('the debug bundle carries the vitals and long frames in its events', async t => {
    const stored = (await h.stored()).filter(
      e => e.event.type === 'page_web_vital' || e.event.type === 'page_long_animation_frame',
    )
    const build = buildBundle(
      {
        browserId: 'vm-1',
        daemonVersion: 'test',
        log: h.log,
        categories: () => ['page'],
        redaction: new Redactor().policy(),
      },
      { sinceUs: 0 },
    )
    const chunks: Buffer[] = []
    for await (const c of build.output) chunks.push(c as Buffer)
    await build.done
    const files = await unzipAll(Buffer.concat(chunks))
    const lines = files
      .get('events.ndjson')!
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map(l => JSON.parse(l) as { seq: number; event: { type: string } })
      .filter(e => e.event.type === 'page_web_vital' || e.event.type === 'page_long_animation_frame')
    t.ok(stored.length >= 10, `${stored.length} stored`)
    t.same(
      lines.map(e => e.seq),
      stored.map(e => e.seq),
      'every one of them, in order',
    )
  })
})
