// The recording player in the session viewer, as a user sees it: a daemon records a real Chromium
// session with --recording (a page that changes colour and logs a line at each step, then a click),
// and a second Chromium (playwright-core) opens /viewer/. Clicking a console line seeks the video to
// the frame before it; scrubbing and playing move the console list; the click marker is drawn on
// its frame; axe finds nothing serious; the CSP holds (blob: images, no violation) and the token is
// in no URL. Screenshots go to test-output/viewer/.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { startDaemon } from '../src/main.js'
import { parseServeConfig } from '../src/config/config.js'
import { silentLogger } from '../src/log.js'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { viewerUrl } from '../src/cli/open.js'
import { VIEWER_CSP } from '../src/api/routes/viewer.js'
import { frameIndexBeforeSeq } from '../src/viewer/model/recording.js'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'
import { listFrames, type FrameItem } from './helpers/recording.js'

const repo = join(import.meta.dirname, '..')
const artifacts = join(repo, 'test-output', 'viewer')
const TOKEN = 'viewer-player-token'
const require = createRequire(import.meta.url)
const axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8')
t.setTimeout(240_000)

const STEPS = `<!doctype html><html><head><title>steps</title><style>html,body{margin:0;height:100%}
#b{position:absolute;left:200px;top:150px;width:160px;height:60px}</style></head><body>
<button id="b">Press</button><script>
const colors = ['#000','#00f','#0f0','#0ff','#ff0','#f0f','#888','#fff'];
document.body.style.background = colors[0];
window.done = false;
window.go = () => { let n = 0; const step = () => { n++; document.body.style.background = colors[n]; console.log('step ' + n);
  if (n < colors.length - 1) setTimeout(step, 700); else window.done = true }; setTimeout(step, 700) };
document.getElementById('b').addEventListener('click', () => { document.body.style.background = '#f00'; console.log('pressed') });
</script></body></html>`

interface Env {
  seq: number
  event: { type: string; ts: number; data: Record<string, unknown> }
}

t.test('the recording player', async t => {
  if (!existsSync(join(repo, 'dist', 'viewer', 'index.html'))) {
    t.fail('dist/viewer is not built: run npm run build (npm test builds it first)')
    return
  }
  await mkdir(artifacts, { recursive: true })
  const site = await startServer(t, { '/steps': STEPS })
  const browser = await startBrowser(t)
  const dir = await tempDir(t, 'bt-player-')
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dir,
      '--cdp-url',
      browser.wsUrl,
      '--token',
      TOKEN,
      '--proxy-listen',
      'off',
      '--recording',
    ],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {} })
  t.teardown(() => d.close())

  // The recorded session: a tab stepping through colours, one console line per step, then a click.
  const opener = await CDP({ target: browser.wsUrl, local: true })
  const { targetId } = await opener.send('Target.createTarget', { url: 'about:blank' })
  await opener.close()
  await waitFor(() => d.monitor!.targets().find(x => x.targetId === targetId), 10_000, 'tab attached')
  const driver = await CDP({
    target: `ws://127.0.0.1:${new URL(browser.wsUrl).port}/devtools/page/${targetId}`,
    local: true,
  })
  t.teardown(() => driver.close())
  await driver.send('Page.enable')
  const loaded = driver.Page.loadEventFired()
  await driver.send('Page.navigate', { url: site.url + 'steps' })
  await loaded
  await driver.send('Runtime.evaluate', { expression: 'go()' })
  await waitFor(
    async () =>
      (await driver.send('Runtime.evaluate', { expression: 'window.done', returnByValue: true })).result.value === true,
    20_000,
    'steps done',
  )
  const readEvents = async () => {
    await d.log.flush()
    const out: Env[] = []
    for (let cursor: number | undefined; ;) {
      const page = await d.log.read({ order: 'asc', limit: 100, cursor, sinceUs: cursor ? undefined : 0 })
      out.push(...page.records.map(r => JSON.parse(r.json) as Env))
      if (!page.hasMore) return out
      cursor = page.nextCursor
    }
  }
  const readFrames = async () => {
    await d.frames.flush()
    return listFrames(d.url, d.browserId, TOKEN)
  }
  /** Waits until the first event `is` picks is stored and a frame taken after it is stored too. */
  const frameAfter = (is: (e: Env) => boolean, what: string) =>
    waitFor(
      async () => {
        const e = (await readEvents()).find(is)
        return e !== undefined && (await readFrames()).some(f => f.after_seq >= e.seq)
      },
      20_000,
      `a frame after ${what}`,
    )
  // The last step on a frame of its own before the click.
  await frameAfter(e => e.event.type === 'console_log' && e.event.data.text === 'step 7', 'the last step')
  for (const type of ['mousePressed', 'mouseReleased'] as const)
    await driver.send('Input.dispatchMouseEvent', { type, x: 280, y: 180, button: 'left', clickCount: 1 })
  await frameAfter(e => e.event.type === 'interaction_click' && e.event.data.target_id === targetId, 'the click')
  const events = await readEvents()
  const frames: FrameItem[] = await readFrames()
  const steps = events.filter(e => e.event.type === 'console_log' && /^step \d$/.test(String(e.event.data.text)))
  const click = events.find(e => e.event.type === 'interaction_click' && e.event.data.target_id === targetId)!
  t.equal(steps.length, 7, 'seven console steps recorded')
  t.ok(click, 'the click recorded')
  t.ok(frames.length >= 8, `frames recorded (${frames.length})`)

  // The viewer, in a second Chromium; nothing may leave 127.0.0.1, no URL may carry the token.
  const viewerBrowser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_FLAGS.filter(f => !f.startsWith('--headless')),
  })
  t.teardown(() => viewerBrowser.close())
  const context = await viewerBrowser.newContext({ viewport: { width: 1400, height: 900 } })
  const urls: string[] = []
  await context.route('**/*', route => {
    const u = new URL(route.request().url())
    urls.push(u.href)
    if (u.protocol === 'data:' || u.protocol === 'blob:' || u.hostname === '127.0.0.1') return route.continue()
    return route.abort()
  })
  // Not subject to the page's CSP (injected by the protocol): collects the page's CSP violations.
  await context.addInitScript(() => {
    const w = window as unknown as { cspViolations: string[] }
    w.cspViolations = []
    document.addEventListener('securitypolicyviolation', e =>
      w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
    )
  })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', m => {
    if (m.type() === 'error') problems.push(m.text())
  })
  page.on('pageerror', e => problems.push(`pageerror: ${e.message}`))
  const response = await page.goto(viewerUrl(d.url, TOKEN, d.browserId))
  t.equal(response!.headers()['content-security-policy'], VIEWER_CSP)
  t.match(VIEWER_CSP, /img-src 'self' data: blob:/, 'the CSP lets blob: images in')
  await page.click('#tab-console')
  await page.waitForSelector('#tab-console[aria-selected="true"]')
  await page.waitForFunction(() => Number(document.querySelector('.player')?.getAttribute('data-frames')) > 0, null, {
    timeout: 15_000,
  })
  await page.waitForSelector('#player-image')
  t.match(await page.getAttribute('#player-image', 'src'), /^blob:/, 'the frame is a blob: URL')
  // The Filmstrip lists periodic screenshots; its count names the recording's frames beside them.
  await page.click('#tab-filmstrip')
  const held = Number(await page.getAttribute('.player', 'data-frames'))
  const count = await page.textContent('#row-count')
  t.match(count, new RegExp(`^\\d+ screenshots? · ${held} recording frames? in the player$`), `filmstrip: ${count}`)
  await page.click('#tab-console')
  await page.waitForSelector('#tab-console[aria-selected="true"]')

  const frameShown = () => page.getAttribute('.player', 'data-frame-id').then(Number)
  const selectedSeq = () =>
    page.evaluate(() => Number(document.querySelector('#list-console [aria-selected="true"] .c-seq')?.textContent ?? 0))
  const rowOf = (seq: number) => page.locator('#list-console .vrow', { has: page.locator(`.c-seq:text-is("${seq}")`) })

  await t.test('clicking a console line seeks the video to the frame before it', async t => {
    for (const step of [steps[2]!, steps[5]!]) {
      await rowOf(step.seq).click()
      const want = frames[frameIndexBeforeSeq(frames, step.seq)]!.frame_id
      await page
        .waitForFunction(id => document.querySelector('.player')?.getAttribute('data-frame-id') === String(id), want, {
          timeout: 5000,
        })
        .catch(() => undefined)
      t.equal(await frameShown(), want, `${String(step.event.data.text)}: frame ${want}`)
    }
    await page.screenshot({ path: join(artifacts, 'player-seek.png') })
  })

  await t.test('scrubbing moves the console list to that moment', async t => {
    const first = frames[0]!
    for (const target of [steps[1]!, steps[4]!]) {
      // Just after the step's line: the list selects that line.
      const ms = Math.round((target.event.ts - first.ts) / 1000) + 50
      await page.$eval(
        '#player-scrub',
        (el, v) => {
          const input = el as HTMLInputElement
          input.value = String(v)
          input.dispatchEvent(new Event('input', { bubbles: true }))
        },
        ms,
      )
      await page
        .waitForFunction(
          seq => document.querySelector('#list-console [aria-selected="true"] .c-seq')?.textContent === String(seq),
          target.seq,
          { timeout: 5000 },
        )
        .catch(() => undefined)
      t.equal(await selectedSeq(), target.seq, `scrubbed to ${String(target.event.data.text)}`)
    }
  })

  await t.test('playing moves the console list along and the frames with it', async t => {
    await rowOf(steps[0]!.seq).click()
    const frame0 = await frameShown()
    await page.click('#player-play')
    t.equal(await page.getAttribute('#player-play', 'aria-pressed'), 'true')
    await page.waitForFunction(seq => {
      const s = Number(document.querySelector('#list-console [aria-selected="true"] .c-seq')?.textContent ?? 0)
      return s > seq
    }, steps[1]!.seq)
    t.ok((await selectedSeq()) > steps[1]!.seq, 'the list moved past the next steps while playing')
    t.not(await frameShown(), frame0, 'the frame moved too')
    await page.click('#player-play')
    t.equal(await page.getAttribute('#player-play', 'aria-pressed'), 'false', 'paused')
    const blobs = Number(await page.getAttribute('.player', 'data-blobs'))
    t.ok(blobs >= 1 && blobs <= 24, `blob URLs alive are bounded (${blobs})`)
  })

  await t.test('the click marker is drawn on the frame before the click', async t => {
    await page.click('#tab-interactions')
    await page.waitForSelector('#tab-interactions[aria-selected="true"]')
    await page.locator('#list-interactions .vrow', { has: page.locator(`.c-seq:text-is("${click.seq}")`) }).click()
    const want = frames[frameIndexBeforeSeq(frames, click.seq)]!.frame_id
    await page.waitForSelector(`.player-click[data-seq="${click.seq}"]`, { timeout: 5000 })
    t.equal(await frameShown(), want, 'the frame before the click')
    t.equal(Number(await page.getAttribute('.player-click', 'data-x')), click.event.data.x)
    const box = await page.locator('#player-image').boundingBox()
    const mark = await page.locator('.player-click').boundingBox()
    const f = frames.find(x => x.frame_id === want)!
    const cx = mark!.x + mark!.width / 2 - box!.x
    const cy = mark!.y + mark!.height / 2 - box!.y
    t.ok(
      Math.abs(cx / box!.width - Number(click.event.data.x) / f.viewport_width!) < 0.02 &&
        Math.abs(cy / box!.height - Number(click.event.data.y) / f.viewport_height!) < 0.02,
      `marker at the click's place on the frame (${cx.toFixed(0)}, ${cy.toFixed(0)})`,
    )
    await page.screenshot({ path: join(artifacts, 'player-click.png') })
  })

  await t.test('live: a new frame is followed', async t => {
    await page.click('#player-live')
    await driver.send('Runtime.evaluate', { expression: "document.body.style.background = '#0a0'" })
    await waitFor(
      async () => (await listFrames(d.url, d.browserId, TOKEN)).length > frames.length,
      10_000,
      'a new frame stored',
    )
    const newest = (await listFrames(d.url, d.browserId, TOKEN)).at(-1)!.frame_id
    await page.waitForFunction(
      id => Number(document.querySelector('.player')?.getAttribute('data-frame-id')) >= id,
      newest,
      {
        timeout: 10_000,
      },
    )
    t.ok((await frameShown()) >= newest, 'the player shows the newest frame')
  })

  await t.test('accessibility, CSP, token', async t => {
    await page.evaluate(axeSource)
    for (const panel of ['console', 'timeline']) {
      await page.click(`#tab-${panel}`)
      const violations = await page.evaluate(async () => {
        const r = await (
          window as unknown as {
            axe: { run(ctx: Document): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> }
          }
        ).axe.run(document)
        return r.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }))
      })
      t.same(violations, [], `${panel} with the player: ${JSON.stringify(violations)}`)
    }
    t.same(
      await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
      [],
      'no CSP violation',
    )
    t.same(problems, [], 'no console errors')
    t.same(
      urls.filter(u => u.includes(TOKEN)),
      [],
      'the token is in no request URL (the fragment it came in is never sent)',
    )
    t.ok(
      urls.some(u => /\/recording\/frames\/\d+$/.test(u)),
      'frames were fetched from the API',
    )
  })
})
