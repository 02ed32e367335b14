// Web Vitals and long animation frames through the real Monitor against real headless Chromium (one
// browser for the file): INP from slow click handlers (with the handler's script), LCP of an image,
// CLS from a late banner, FCP and TTFB with their parts, a long animation frame naming its script.
// What is stored when: poor at once while the page is shown, the rest when the page is left.
import t from 'tap'
import { startServer, waitFor } from './helpers/http.js'
import { startCollecting, type Recorded } from './helpers/collector-harness.js'
import { createVitalsCollector } from '../collectors/vitals.js'
import { createPageCollector } from '../collectors/page.js'
import type { TargetSession } from '../src/monitor/index.js'

const HERO =
  '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><rect width="400" height="300" fill="teal"/></svg>'
const APP_JS = `
function busy(ms) { const end = performance.now() + ms; while (performance.now() < end) {} }
document.getElementById('slow300').addEventListener('click', function onSlow300() { busy(300) })
document.getElementById('slow600').addEventListener('click', function onSlow600() { busy(600) })
`
const JANK_JS = `setTimeout(function blockMain() { const end = performance.now() + 120; while (performance.now() < end) {} }, 50)`
const CLS_JS = `setTimeout(function addBanner() {
  const b = document.createElement('div'); b.id = 'banner'; b.style.height = '200px'; b.textContent = 'Sale'
  document.body.prepend(b)
}, 300)`

t.test('web vitals and long animation frames', async t => {
  const server = await startServer(t, {
    '/inp': `<title>inp</title><body style="margin:0"><button id="slow300" style="width:100px;height:40px">300</button>
<button id="slow600" style="width:100px;height:40px">600</button><script src="/app.js"></script></body>`,
    '/app.js': (_q, s) => {
      s.writeHead(200, { 'content-type': 'text/javascript' })
      s.end(APP_JS)
    },
    '/lcp': '<title>lcp</title><body style="margin:0"><img id="hero" src="/hero.svg" width="400" height="300"></body>',
    '/hero.svg': (_q, s) => {
      s.writeHead(200, { 'content-type': 'image/svg+xml' })
      s.end(HERO)
    },
    '/cls': `<title>cls</title><body style="margin:0"><p id="content" style="margin:0;height:300px;font-size:40px">Article text</p><script src="/cls.js"></script></body>`,
    '/cls.js': (_q, s) => {
      s.writeHead(200, { 'content-type': 'text/javascript' })
      s.end(CLS_JS)
    },
    '/jank': '<title>jank</title><body><p>jank</p><script src="/jank.js"></script></body>',
    '/jank.js': (_q, s) => {
      s.writeHead(200, { 'content-type': 'text/javascript' })
      s.end(JANK_JS)
    },
    '/blank': '<title>blank</title>',
  })
  const h = await startCollecting(t, [createPageCollector(), createVitalsCollector({ flushMs: 50 })])
  const vitals = (tab: TargetSession, name: string) =>
    h.ofType('page_web_vital', e => h.forTarget(tab)(e) && e.data.name === name)
  const click = async (tab: TargetSession, x: number, y: number) => {
    await tab.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y })
    await tab.send('Input.dispatchMouseEvent', { type: 'mousePressed', x, y, button: 'left', clickCount: 1 })
    await tab.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x, y, button: 'left', clickCount: 1 })
  }

  t.test('explore', async t => {
    const tab = await h.openTab(`${server.url}inp`)
    await h.waitEvent('page_load' as never, undefined, 10000).catch(() => undefined)
    await waitFor(async () => (await h.evaluate(tab, 'document.readyState')) === 'complete', 10000, 'loaded')
    await click(tab, 50, 20)
    await click(tab, 150, 20)
    await waitFor(() => vitals(tab, 'INP')[0], 10000, 'poor INP')
    await h.navigate(tab, `${server.url}blank`)
    await new Promise(r => setTimeout(r, 500))
    for (const e of h.events.filter(e => e.type === 'page_web_vital' || e.type === 'page_long_animation_frame')) console.log(JSON.stringify(e.data, null, 1))
    t.pass()
  })
  void (undefined as unknown as Recorded)
})
