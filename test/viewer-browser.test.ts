// The session viewer as a user sees it: a daemon records a real session from a local test site
// (navigations, clicks, typing, console errors, an uncaught exception, failed requests, screenshots)
// while Debian's Chromium (playwright-core) has /viewer/ open; the daemon is killed (-9) and
// restarted, so the log gets a gap and the page has to resume its stream. Every count shown is
// checked against the events API. Two Chromiums at most: the recorded one and the viewer's.
// Screenshots of each panel go to test-output/viewer/.
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import CDP from 'chrome-remote-interface'
import harValidator from 'har-validator'
import { chromium } from 'playwright-core'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { viewerUrl } from '../src/cli/open.js'
import { VIEWER_CSP } from '../src/api/routes/viewer.js'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { WebSocket, WebSocketServer } from 'ws'
import { tempDir } from './helpers/store.js'
import { closedPort } from './helpers/ports.js'
import { at as agentAt, tenStepSession } from './helpers/agent-session.js'
import { colorJpeg } from './helpers/recording.js'
import { yazlZip } from './helpers/zip.js'

const repo = join(import.meta.dirname, '..')
const artifacts = join(repo, 'test-output', 'viewer')
const TOKEN = 'viewer-test-token'
const require = createRequire(import.meta.url)
const axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8')

interface Env {
  seq: number
  event: { type: string; category: string; ts: number; data: Record<string, unknown> }
}
interface Daemon {
  child: ChildProcess
  url: string
  /** The CDP proxy's port (from its "CDP proxy listening" line). */
  proxyPort: number
  exited: Promise<number | null>
}

async function startDaemon(t: Test, args: string[]): Promise<Daemon> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(repo, 'src/cli.ts'), 'serve', ...args], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, BROWSER_TELEMETRY_LOG_LEVEL: 'info' },
  })
  const out: string[] = []
  child.stdout!.on('data', (d: Buffer) => out.push(String(d)))
  child.stderr!.on('data', (d: Buffer) => out.push(String(d)))
  const exited = new Promise<number | null>(r => child.once('exit', code => r(code)))
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const [url, proxyPort] = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode}: ${out.join('').slice(-2000)}`)
      const all = out.join('')
      const api = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*browser-telemetry listening/.exec(all)?.[1]
      const proxy = /"port":(\d+).*CDP proxy listening/.exec(all)?.[1]
      return api !== undefined && proxy !== undefined && ([api, Number(proxy)] as const)
    },
    60_000,
    'the daemon to listen',
  )
  return { child, url, proxyPort, exited }
}

async function allEvents(base: string, browserId: string): Promise<Env[]> {
  const out: Env[] = []
  let offset = 1
  for (;;) {
    const res = await fetch(`${base}/browsers/${browserId}/telemetry/events?offset=${offset}&limit=100`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
    if (res.status !== 200) throw new Error(`events: ${res.status}`)
    out.push(...((await res.json()) as Env[]))
    if (res.headers.get('x-has-more') !== 'true') return out
    offset = Number(res.headers.get('x-next-offset'))
  }
}

const SITE_ONE = (deadPort: number) => `<!doctype html><html><head><title>shop</title></head><body style="margin:0">
<h1 style="margin:0;height:40px">shop</h1>
<button id="buy" style="position:absolute;left:20px;top:60px;width:120px;height:40px">Buy now</button>
<input id="q" style="position:absolute;left:20px;top:120px;width:200px;height:24px">
<p id="out" style="position:absolute;left:20px;top:160px">ready</p>
<script>
  console.log('page one ready', JSON.stringify({ items: 3 }))
  console.warn('low stock')
  fetch('/api/items').then((r) => r.json())
  fetch('/missing')
  fetch('http://127.0.0.1:${deadPort}/down').catch(() => {})
  setTimeout(() => { throw new Error('uncaught kaboom') }, 20)
  document.getElementById('buy').addEventListener('click', () => {
    document.getElementById('out').textContent = 'bought'
    document.body.style.background = '#ffd'
    console.error('checkout failed: boom')
    fetch('/api/checkout', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer site-secret' }, body: JSON.stringify({ sku: 42 }) })
  })
</script></body></html>`
const SITE_TWO =
  '<!doctype html><title>two</title><body style="margin:0;background:#eef"><h2>second page</h2><script>console.log("second page")</script></body>'

t.test('session viewer against a recorded session', async t => {
  const top = t
  // The daemon serves the checkout's dist/viewer, which `npm test` builds before any test runs;
  // rebuilding it here would change files other tests' daemons may be serving.
  if (!existsSync(join(repo, 'dist', 'viewer', 'index.html'))) {
    t.fail('dist/viewer is not built: run npm run build (npm test builds it first)')
    return
  }
  await mkdir(artifacts, { recursive: true })
  const deadPort = await closedPort() // a port that refuses
  const site = await startServer(t, {
    '/': SITE_ONE(deadPort),
    '/two': SITE_TWO,
    '/api/items': (_q, s) => {
      s.writeHead(200, { 'content-type': 'application/json' })
      s.end('{"items":[1,2,3]}')
    },
    '/api/checkout': (q, s) => {
      q.resume()
      q.on('end', () => {
        s.writeHead(500, { 'content-type': 'application/json' })
        s.end('{"error":"declined"}')
      })
    },
  })

  // The recorded browser and the daemon attached to it (restarted below without the browser noticing).
  const browser = await startBrowser(t, { startUrl: 'about:blank' })
  const dir = await tempDir(t, 'bt-viewer-')
  // Ports the daemon picks at its first start: the daemon restarted below listens on the same ones,
  // where the open viewer reconnects to.
  const daemonArgs = (port = 0, proxyPort = 0) => [
    '--cdp-url',
    browser.httpUrl,
    '--data-dir',
    join(dir, 'data'),
    '--listen',
    `127.0.0.1:${port}`,
    '--proxy-listen',
    `127.0.0.1:${proxyPort}`,
    '--token',
    TOKEN,
    '--kmsg-path',
    join(dir, 'no-kmsg'),
    '--screenshot-interval',
    '300ms',
    '--categories',
    'console,network,page,interaction,control,connection,system,screenshot,captcha',
  ]
  let daemon = await startDaemon(t, daemonArgs())
  const { proxyPort } = daemon
  const restartArgs = daemonArgs(Number(new URL(daemon.url).port), proxyPort)
  const health = (await (await fetch(`${daemon.url}/healthz`)).json()) as { browser_id: string }
  const browserId = health.browser_id
  await waitFor(
    async () =>
      ((await (await fetch(`${daemon.url}/healthz`)).json()) as { monitor: { state: string } }).monitor.state ===
      'collecting',
    20_000,
    'monitor collecting',
  )

  const targets = (await (await fetch(`${browser.httpUrl}/json/list`)).json()) as { id: string; type: string }[]
  const pageTarget = targets.find(x => x.type === 'page')!
  const cdp = await CDP({ port: browser.port, target: pageTarget.id })
  t.teardown(() => cdp.close())
  await cdp.Page.enable()
  const has = async (pred: (e: Env) => boolean, what: string, n = 1) =>
    waitFor(async () => (await allEvents(daemon.url, browserId)).filter(pred).length >= n, 15_000, what)

  // Page one: console, fetches (ok, 404, refused), an uncaught exception; then a click and typing.
  await cdp.Page.navigate({ url: site.url })
  await has(e => e.event.type === 'page_navigation_settled', 'page one settled')
  await has(e => e.event.type === 'network_loading_failed', 'the refused fetch')
  const click = { x: 80, y: 80 }
  await cdp.Input.dispatchMouseEvent({ type: 'mouseMoved', ...click })
  await cdp.Input.dispatchMouseEvent({ type: 'mousePressed', ...click, button: 'left', clickCount: 1 })
  await cdp.Input.dispatchMouseEvent({ type: 'mouseReleased', ...click, button: 'left', clickCount: 1 })
  await cdp.Input.dispatchMouseEvent({ type: 'mousePressed', x: 60, y: 132, button: 'left', clickCount: 1 })
  await cdp.Input.dispatchMouseEvent({ type: 'mouseReleased', x: 60, y: 132, button: 'left', clickCount: 1 })
  for (const key of ['a', 'b']) {
    await cdp.Input.dispatchKeyEvent({
      type: 'keyDown',
      key,
      text: key,
      windowsVirtualKeyCode: key.toUpperCase().charCodeAt(0),
    })
    await cdp.Input.dispatchKeyEvent({ type: 'keyUp', key, windowsVirtualKeyCode: key.toUpperCase().charCodeAt(0) })
  }
  await has(e => e.event.type === 'interaction_key', 'key events', 2)
  await has(e => e.event.type === 'network_response' && e.event.data.status === 500, 'the checkout response')
  // A frame after the click (the page turned yellow), so the click has a nearest frame that shows it.
  const clickSeq = (await allEvents(daemon.url, browserId)).find(e => e.event.type === 'interaction_click')!.seq
  await has(e => e.event.type === 'monitor_screenshot' && e.seq > clickSeq, 'a screenshot after the click')
  // Page two: a dialog this client answers, and a WebSocket to a local echo server.
  await cdp.Page.navigate({ url: `${site.url}two` })
  await has(e => e.event.type === 'page_navigation_settled', 'page two settled', 2)
  const dialog = cdp.Page.javascriptDialogOpening().then(() => cdp.Page.handleJavaScriptDialog({ accept: true }))
  await cdp.Runtime.evaluate({ expression: 'alert("are you there?")' })
  await dialog
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  wss.on('connection', ws => ws.on('message', data => ws.send(String(data))))
  t.teardown(() => new Promise<void>(r => wss.close(() => r())))
  await new Promise<void>(r => wss.once('listening', () => r()))
  await cdp.Runtime.evaluate({
    awaitPromise: true,
    expression: `new Promise(r => { const ws = new WebSocket('ws://127.0.0.1:${(wss.address() as { port: number }).port}/live');
      ws.onopen = () => ws.send('ping'); ws.onmessage = () => ws.close(); ws.onclose = () => r(1) })`,
  })
  await has(e => e.event.type === 'network_websocket_closed', 'the socket closed')
  // The agent: commands through the CDP proxy, one of them refused by Chromium.
  const agent = new WebSocket(`ws://127.0.0.1:${proxyPort}${new URL(browser.wsUrl).pathname}`)
  await new Promise((resolve, reject) => agent.once('open', resolve).once('error', reject))
  for (const [id, method, params] of [
    [1, 'Browser.getVersion', {}],
    [2, 'Target.attachToTarget', { targetId: 'NO-SUCH-TARGET', flatten: true }],
    [3, 'Target.getTargets', {}],
  ] as const) {
    const answered = new Promise(r => agent.once('message', r))
    agent.send(JSON.stringify({ id, method, params }))
    await answered
  }
  agent.close()
  await has(e => e.event.type === 'cdp_disconnect', 'the agent left')

  // The viewer, in a second Chromium. Every request is intercepted: none may leave 127.0.0.1.
  const viewerBrowser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_FLAGS.filter(f => !f.startsWith('--headless')),
  })
  t.teardown(() => viewerBrowser.close())
  const context = await viewerBrowser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true })
  const offHost: string[] = []
  const seen: string[] = []
  await context.route('**/*', route => {
    const u = new URL(route.request().url())
    seen.push(u.href)
    if (u.protocol === 'data:' || u.protocol === 'blob:') return route.continue()
    if (u.hostname !== '127.0.0.1') {
      offHost.push(u.href)
      return route.abort()
    }
    return route.continue()
  })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', m => {
    if (m.type() === 'error') problems.push(m.text())
  })
  page.on('pageerror', e => problems.push(`pageerror: ${e.message}`))
  const countOf = async () => Number(await page.getAttribute('#row-count', 'data-count'))
  const showPanel = async (panel: string) => {
    await page.click(`#tab-${panel}`)
    await page.waitForSelector(`#tab-${panel}[aria-selected="true"]`)
  }
  const expectCount = async (n: number, what: string) => {
    await page
      .waitForFunction(want => Number(document.getElementById('row-count')?.getAttribute('data-count')) === want, n, {
        timeout: 5000,
      })
      .catch(() => undefined)
    t.equal(await countOf(), n, what)
  }
  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`) })

  const response = await page.goto(viewerUrl(daemon.url, TOKEN, browserId))
  t.equal(response!.headers()['content-security-policy'], VIEWER_CSP, 'strict CSP on the page')
  const loaded = () =>
    page.evaluate(() =>
      Number(/^(\d+) events loaded/.exec(document.getElementById('window-info')?.textContent ?? '')?.[1] ?? -1),
    )
  const recorded = await allEvents(daemon.url, browserId)
  await waitFor(
    async () => (await loaded()) >= recorded.length,
    10_000,
    `${recorded.length} events loaded (shown: ${await loaded()})`,
  )

  await t.test('the token moved from the fragment into sessionStorage only', async t => {
    const where = await page.evaluate(() => ({
      href: location.href,
      session: sessionStorage.getItem('browser-telemetry.token'),
      local: localStorage.length,
      cookie: document.cookie,
    }))
    t.notMatch(where.href, TOKEN, 'not in the address bar')
    t.equal(where.session, TOKEN)
    t.equal(where.local, 0)
    t.equal(where.cookie, '')
  })

  await t.test('live mode shows a new console line without a reload', async t => {
    await showPanel('console')
    t.equal(await page.getAttribute('#follow', 'aria-pressed'), 'true', 'follows by default')
    await page.waitForSelector('#live-status:text("live")')
    await cdp.Runtime.evaluate({ expression: 'console.log("live line 1")' })
    // How fast is bench/viewer.ts's business; here only that it arrives over the stream.
    await page.waitForSelector('#list-console .c-text:text("live line 1")', { timeout: 15_000 })
    t.equal(await page.locator('#list-console .c-text:text("live line 1")').count(), 1, 'shown once')
  })

  await t.test(
    'kill -9 and restart: the open viewer resumes (Last-Event-ID), shows the gap, repeats nothing',
    async t => {
      daemon.child.kill('SIGKILL')
      await daemon.exited
      await page.waitForSelector('#live-status:text("retrying")', { timeout: 10_000 })
      daemon = await startDaemon(top, restartArgs)
      await waitFor(
        async () =>
          ((await (await fetch(`${daemon.url}/healthz`)).json()) as { monitor: { state: string } }).monitor.state ===
          'collecting',
        20_000,
        'monitor collecting again',
      )
      await cdp.Runtime.evaluate({ expression: 'console.log("after restart")' })
      await page.waitForSelector('#list-console .c-text:text("after restart")', { timeout: 10_000 })
      await page.waitForSelector('#list-console .gap', { timeout: 5000 })
      // The restarted daemon's Runtime.enable replays the page's console buffer: those are new events with new seqs.
      const inLog = (await allEvents(daemon.url, browserId)).filter(e => e.event.data.text === 'live line 1').length
      t.equal(
        await page.locator('#list-console .c-text:text-is("live line 1")').count(),
        inLog,
        `shown as often as logged (${inLog}): nothing repeated by the resume`,
      )
    },
  )

  const events = await allEvents(daemon.url, browserId)
  const gaps = events.slice(1).filter((e, i) => e.seq > events[i]!.seq + 1)
  t.equal(gaps.length, 1, 'the unclean stop left exactly one gap')
  const requestIds = new Set(
    events
      .filter(e => e.event.type === 'network_request')
      .map(e => `${String(e.event.data.session_id)}|${String(e.event.data.request_id)}`),
  )
  t.ok(
    events
      .filter(e => e.event.type === 'network_response' || e.event.type === 'network_loading_failed')
      .every(e => requestIds.has(`${String(e.event.data.session_id)}|${String(e.event.data.request_id)}`)),
    'every response has its request (one row per request)',
  )

  // Pause, then compare with the API up to the last seq the page holds (screenshots keep coming).
  await page.click('#follow')
  t.equal(await page.getAttribute('#follow', 'aria-pressed'), 'false')
  await page.waitForSelector('#live-status:text("paused")')
  const lastShown = await page.evaluate(() =>
    Number(/seq \d+–(\d+)/.exec(document.getElementById('window-info')?.textContent ?? '')?.[1] ?? 0),
  )
  const now = (await allEvents(daemon.url, browserId)).filter(e => e.seq <= lastShown)
  t.equal(await loaded(), now.length, `the page holds every event up to seq ${lastShown}`)
  const cnt = (pred: (e: Env) => boolean) => now.filter(pred).length

  await t.test('rows per panel equal the API counts', async t => {
    const lane = new Set(['monitor', 'connection', 'control', 'system', 'captcha'])
    const expected: Record<string, number> = {
      console: cnt(e => e.event.category === 'console'),
      network: cnt(e => e.event.type === 'network_request' || e.event.type === 'network_websocket_created'),
      interactions: cnt(e => e.event.category === 'interaction'),
      filmstrip: cnt(e => e.event.type === 'monitor_screenshot'),
      // The three commands only prepared the browser: one setup action, in the (closed) Setup group.
      agent: 1,
      lane: cnt(e => lane.has(e.event.category) && e.event.type !== 'cdp_command'),
      all: now.length,
    }
    t.ok(
      expected.console! >= 6 &&
        expected.network! >= 6 &&
        cnt(e => e.event.type === 'cdp_command') === 3 &&
        expected.interactions! >= 3 &&
        expected.filmstrip! >= 2 &&
        expected.lane! >= 1,
      JSON.stringify(expected),
    )
    for (const [panel, n] of Object.entries(expected)) {
      await showPanel(panel)
      await expectCount(n, `${panel}: ${n} rows`)
      await shot(panel)
    }
    await showPanel('timeline')
    const navigations = cnt(
      e =>
        e.event.type === 'page_navigation' &&
        e.event.data.parent_frame_id === undefined &&
        e.event.data.target_type === 'page',
    )
    t.equal(
      await page.locator('#list-timeline [data-started="true"]').count(),
      navigations,
      `${navigations} navigations with their sections`,
    )
    const two = page.locator('#list-timeline .nav', { hasText: `${site.url}two` }).first()
    t.match(await two.textContent(), /navigation settled \d+ ms/, 'markers of the second navigation')
    const one = page.locator('#list-timeline .nav[data-started="true"]', { hasText: site.url }).first()
    t.match(
      await one.textContent(),
      /\d+ requests · \d+ failed · 2 console errors/,
      'summary: console errors of page one (console.error + uncaught)',
    )
    // Its Web Vitals in their rating colours: the latest of each metric under its (target, nav_seq)
    // (after the daemon's restart above, nav_seq counts again, so a later page may share the key).
    const first = now.find(e => e.event.type === 'page_web_vital' && e.event.data.url === site.url)
    const stored = (name: string) =>
      [...now]
        .reverse()
        .find(
          e =>
            e.event.type === 'page_web_vital' &&
            e.event.data.name === name &&
            e.event.data.target_id === first?.event.data.target_id &&
            e.event.data.nav_seq === first?.event.data.nav_seq,
        )
    for (const name of ['TTFB', 'FCP']) {
      const v = stored(name)
      t.ok(v, `${name} stored for page one's navigation`)
      if (v?.event.type !== 'page_web_vital') continue
      t.equal(
        await one
          .locator(`.vital.v-${v.event.data.rating}`, {
            hasText: `${name} ${Number(v.event.data.value).toFixed(0)} ms`,
          })
          .count(),
        1,
        `${name} on the row, coloured by its rating`,
      )
    }
    await one.click()
    await page.locator('#nav-vitals [data-vital="TTFB"]').waitFor()
    t.match(
      await page.locator('#nav-vitals [data-vital="TTFB"]').textContent(),
      /waiting_duration/,
      'attribution on selection',
    )
    await shot('timeline')
  })

  await t.test('filters narrow exactly', async t => {
    await showPanel('console')
    const consoleText = (e: Env) =>
      [e.event.data.text, ...(Array.isArray(e.event.data.args) ? e.event.data.args : [])].join(' ').toLowerCase()
    await page.fill('#filter-q', 'boom')
    await expectCount(
      cnt(e => e.event.category === 'console' && consoleText(e).includes('boom')),
      'text filter',
    )
    t.ok((await countOf()) >= 2, 'console.error and the uncaught exception both match')
    await page.selectOption('#filter-type', 'console_error')
    await expectCount(
      cnt(e => e.event.type === 'console_error' && consoleText(e).includes('boom')),
      'text + type',
    )
    t.equal(await page.locator('#list-console .lvl-exception').count(), 1, 'the uncaught exception is drawn distinctly')
    await page.fill('#filter-q', '')
    await page.selectOption('#filter-type', '')
    await showPanel('network')
    await page.selectOption('#filter-type', 'failed')
    await expectCount(
      cnt(
        e =>
          e.event.type === 'network_loading_failed' ||
          (e.event.type === 'network_response' && Number(e.event.data.status) >= 400),
      ),
      'failed requests',
    )
    await page.selectOption('#filter-type', '')
    await page.selectOption('#filter-target', pageTarget.id)
    await expectCount(
      cnt(
        e =>
          (e.event.type === 'network_request' || e.event.type === 'network_websocket_created') &&
          e.event.data.target_id === pageTarget.id,
      ),
      'target filter',
    )
    // Deep link: the filters are in the fragment and survive a reload (token from sessionStorage only).
    await page.fill('#filter-q', 'api')
    const want = cnt(
      e =>
        e.event.type === 'network_request' &&
        e.event.data.target_id === pageTarget.id &&
        String(e.event.data.url).includes('api'),
    )
    await expectCount(want, 'text + target')
    // The fragment is rewritten after the render that shows the rows: wait for it, do not race it.
    await page.waitForURL(/q=api/, { timeout: 5000 })
    t.match(page.url(), /panel=network/)
    await page.reload()
    await page.waitForSelector('#tab-network[aria-selected="true"]')
    await expectCount(want, 'the same rows after a reload of the deep link')
    t.equal(await page.inputValue('#filter-q'), 'api')
    await page.fill('#filter-q', '')
    await page.selectOption('#filter-target', '')
  })

  await t.test('network detail pane: headers, post data, body; redactions shown as such', async t => {
    await showPanel('network')
    await page.fill('#filter-q', 'checkout')
    await expectCount(1, 'the checkout request')
    await page.click('#list-network .vrow')
    const detail = page.locator('aside.detail')
    await detail.locator('text=Post data').waitFor()
    t.match(await detail.textContent(), /\{"sku":42\}/, 'post data')
    t.match(await detail.textContent(), /\{"error":"declined"\}/, 'response body')
    t.equal((await detail.locator('.redacted').count()) >= 1, true, 'the Authorization header is shown as redacted')
    t.notMatch(await detail.textContent(), /site-secret/)
    await shot('network-detail')
    await page.fill('#filter-q', '')
  })

  await t.test('Agent panel: the setup group, its action, the commands in order, the refused one marked', async t => {
    await showPanel('agent')
    await expectCount(1, 'one row: the Setup group, closed')
    t.equal(await page.textContent('#row-count'), '0 steps · 1 action')
    await page.click('#list-agent [data-toggle="setup"]')
    await expectCount(2, 'opened: its one action')
    t.equal(
      await page.textContent('#list-agent .k-action .a-title'),
      'set up (3 commands) (collapsed)',
      'the action, its state for screen readers',
    )
    t.equal(await page.locator('#list-agent .k-action.bad').count(), 1, 'a failed command makes it an error')
    await page.click('#list-agent .k-action [data-toggle]')
    await expectCount(5, 'the action opened: its three commands')
    t.same(
      await page
        .locator('#list-agent .k-cmd .a-title')
        .evaluateAll(els => els.map(e => e.textContent!.split(' · ')[0])),
      ['Browser.getVersion', 'Target.attachToTarget', 'Target.getTargets'],
    )
    t.equal(await page.locator('#list-agent .cmd-failed').count(), 1, 'one failure marked')
    await page.locator('#list-agent .cmd-failed').click()
    const detail = page.locator('aside.detail')
    await detail.locator('th', { hasText: 'outcome' }).waitFor()
    t.match(await detail.textContent(), /error.*-32602 No target with given id found/s, "Chromium's code and message")
    await shot('agent')
    // The keyboard closes what is selected's parent row: ArrowLeft on the action.
    await page.click('#list-agent .k-action')
    await page.focus('#list-agent')
    await page.keyboard.press('ArrowLeft')
    await expectCount(2, 'ArrowLeft closed the action')
    await page.keyboard.press('ArrowRight')
    await expectCount(5, 'ArrowRight opened it again')
    t.equal(await page.locator('#span-filter').count(), 0, 'a setup action narrows nothing')
  })

  await t.test(
    'timeline: the dialog marked on its navigation; the socket and its frames in the network panel',
    async t => {
      await showPanel('timeline')
      const two = page.locator('#list-timeline .nav', { hasText: `${site.url}two` }).first()
      t.match(await two.textContent(), /alert: are you there\?/, 'the dialog in the summary')
      t.equal(await two.locator('.m-dialog').count(), 1, 'and as a marker')
      await showPanel('network')
      await page.fill('#filter-q', '/live')
      await expectCount(1, 'the socket row')
      await page.click('#list-network .vrow')
      const detail = page.locator('aside.detail')
      await detail.locator('text=Frames (2)').waitFor()
      t.match(await detail.textContent(), /sent.*ping.*received.*ping/s, 'both frames')
      await page.fill('#filter-q', '')
    },
  )

  await t.test('a click marker is drawn on the nearest frame', async t => {
    await showPanel('filmstrip')
    await page.fill('#filter-q', '#buy')
    await page.waitForSelector('#list-filmstrip .click-marker')
    const marker = page.locator('#list-filmstrip .click-marker').first()
    t.equal(await marker.getAttribute('data-x'), String(click.x))
    t.equal(await marker.getAttribute('data-y'), String(click.y))
    // Drawn where the click was: marker centre over the image at x/width, y/height.
    const img = await page.locator('#list-filmstrip .shot img').first().boundingBox()
    const box = await marker.boundingBox()
    const natural = await page
      .locator('#list-filmstrip .shot img')
      .first()
      .evaluate((i: HTMLImageElement) => ({ w: i.naturalWidth, h: i.naturalHeight }))
    t.ok(Math.abs(box!.x + box!.width / 2 - (img!.x + (click.x / natural.w) * img!.width)) < 2, 'x position')
    t.ok(Math.abs(box!.y + box!.height / 2 - (img!.y + (click.y / natural.h) * img!.height)) < 2, 'y position')
    await shot('filmstrip-click')
    await page.fill('#filter-q', '')
  })

  await t.test('the gap is labelled where it occurs', async t => {
    await showPanel('console')
    const gap = page.locator('#list-console .gap')
    await gap.first().waitFor()
    const gapAt = events.findIndex((e, i) => i > 0 && e.seq > events[i - 1]!.seq + 1)
    const from = events[gapAt - 1]!.seq + 1
    const to = events[gapAt]!.seq - 1
    const n = to - from + 1
    t.equal(
      await gap.first().textContent(),
      n === 1 ? `1 event dropped (seq ${from})` : `${n} events dropped (seq ${from}–${to})`,
      `${n} missing seqs labelled where they are`,
    )
  })

  await t.test('keyboard: arrows move the selection and the detail pane follows', async t => {
    await showPanel('console')
    await page.focus('#list-console')
    await page.keyboard.press('Home')
    await page.keyboard.press('ArrowDown')
    t.equal(await page.getAttribute('#list-console [aria-selected="true"]', 'data-index'), '1')
    await page.waitForURL(/seq=\d+/, { timeout: 5000 })
    t.match(page.url(), /seq=\d+/, 'the position is in the deep link')
    await page.keyboard.press('ArrowRight').catch(() => undefined)
    await page.focus('#tab-console')
    await page.keyboard.press('ArrowRight')
    t.equal(await page.getAttribute('#tab-interactions', 'aria-selected'), 'true', 'arrow keys move between tabs')
  })

  await t.test('HAR and JSON lines exports', async t => {
    await showPanel('network')
    const [har] = await Promise.all([page.waitForEvent('download'), page.click('#export-har')])
    const doc = JSON.parse(await readFile((await har.path())!, 'utf8'))
    await t.resolves(harValidator.har(doc), 'valid HAR 1.2')
    t.equal(
      doc.log.entries.length,
      cnt(e => e.event.type === 'network_request' || e.event.type === 'network_websocket_created'),
      'one entry per request and per WebSocket of the session',
    )
    t.ok(
      doc.log.entries.some(
        (e: { request: { url: string; postData?: { text: string } } }) =>
          e.request.url === `${site.origin}/api/checkout` && e.request.postData?.text === '{"sku":42}',
      ),
    )
    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.click('#export-jsonl')])
    const lines = (await readFile((await jsonl.path())!, 'utf8'))
      .trim()
      .split('\n')
      .map(l => JSON.parse(l) as Env)
    // The reload of the deep link (filters test) followed live again until a row was selected
    // (keyboard test): compare with the API over the window the page holds now.
    t.equal(await page.getAttribute('#follow', 'aria-pressed'), 'false', 'paused (a selected row stops following)')
    const [first, last] = await page.evaluate(() =>
      (/seq (\d+)–(\d+)/.exec(document.getElementById('window-info')?.textContent ?? '') ?? []).slice(1).map(Number),
    )
    const held = (await allEvents(daemon.url, browserId)).filter(e => e.seq >= first! && e.seq <= last!)
    t.same(
      lines.map(e => e.seq),
      held.map(e => e.seq),
      `every loaded event (seq ${first}–${last}), in seq order`,
    )
    // Only the current navigation: page two's section.
    const navTwo = await page
      .locator('#filter-nav option', { hasText: `${site.url}two` })
      .first()
      .getAttribute('value')
    await page.selectOption('#filter-nav', navTwo!)
    const [har2] = await Promise.all([page.waitForEvent('download'), page.click('#export-har')])
    const doc2 = JSON.parse(await readFile((await har2.path())!, 'utf8'))
    t.same(
      doc2.log.entries
        .map((e: { request: { url: string } }) => e.request.url)
        .filter((u: string) => !u.endsWith('favicon.ico')),
      [`${site.url}two`, `ws://127.0.0.1:${(wss.address() as { port: number }).port}/live`],
      'navigation HAR: page two only (its document and its socket)',
    )
    await page.selectOption('#filter-nav', '')
  })

  await t.test('accessibility: axe finds no serious or critical violations', async t => {
    await page.evaluate(axeSource) // DevTools evaluation is not subject to the page CSP; the page itself stays strict
    for (const panel of ['timeline', 'filmstrip', 'network', 'console', 'agent']) {
      await showPanel(panel)
      await page.click(`#list-${panel} .vrow`)
      const violations = await page.evaluate(async () => {
        const r = await (
          window as unknown as {
            axe: { run(ctx: Document): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> }
          }
        ).axe.run(document)
        return r.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }))
      })
      t.same(
        violations.filter(v => v.impact === 'serious' || v.impact === 'critical'),
        [],
        `${panel}: ${JSON.stringify(violations)}`,
      )
    }
  })

  await t.test('jump to a seq and to a time', async t => {
    await showPanel('all')
    const target = now.find(e => e.event.type === 'interaction_click')!
    await page.fill('#jump', String(target.seq))
    await page.click('.jump button[type=submit]')
    await page.waitForSelector('#list-all [aria-selected="true"]')
    t.equal(
      await page.textContent('#list-all [aria-selected="true"] .c-seq'),
      String(target.seq),
      'the row of that seq is selected and in view',
    )
    t.match(page.url(), new RegExp(`seq=${target.seq}`))
    // A time reloads the window from there (history paged from that point): the first event at or after it.
    const at = now.find(e => e.event.type === 'page_navigation')!
    await page.fill('#jump', new Date(Math.floor(at.event.ts / 1000)).toISOString())
    await page.click('.jump button[type=submit]')
    const firstAtOrAfter = now.find(e => e.event.ts >= Math.floor(at.event.ts / 1000) * 1000)!
    await page.waitForFunction(
      seq => document.querySelector('#list-all [aria-selected="true"] .c-seq')?.textContent === String(seq),
      firstAtOrAfter.seq,
      { timeout: 5000 },
    )
    t.equal(
      await page.textContent('#list-all [aria-selected="true"] .c-seq'),
      String(firstAtOrAfter.seq),
      'jumped to the first event at or after the time',
    )
    await page.fill('#jump', 'not a time')
    await page.click('.jump button[type=submit]')
    await page.waitForSelector('[role=alert]:has-text("Cannot read")')
  })

  await t.test('the Agent panel of a ten-step script (a bundle): steps first, a step seeks and narrows', async t => {
    const session = tenStepSession().envelopes
    const colors = ['black', 'blue', 'green', 'cyan', 'yellow', 'magenta', 'gray', 'white', 'orange', 'purple']
    // A frame just before each step begins: frame i + 1 shows step i's start.
    const frames = colors.map((_, i) => {
      const ts = agentAt(1000 * (i + 1) - 5)
      const before = session.filter(e => e.event.ts < ts)
      return {
        frame_id: i + 1,
        ts,
        target_id: 'T1',
        after_seq: before.at(-1)?.seq ?? 0,
        width: 160,
        height: 120,
        bytes: 0,
      }
    })
    const jpegs = colors.map(c => colorJpeg(c))
    frames.forEach((f, i) => (f.bytes = jpegs[i]!.length))
    const zip = await yazlZip([
      { name: 'events.ndjson', data: session.map(e => JSON.stringify(e)).join('\n') + '\n' },
      { name: 'frames/index.json', data: JSON.stringify(frames) },
      ...jpegs.map((j, i) => ({ name: `frames/${i + 1}.jpg`, data: j, compress: false })),
    ])
    const p = await context.newPage()
    p.on('pageerror', e => problems.push(`pageerror: ${e.message}`))
    await p.goto(`${daemon.url}/viewer/`)
    await p.setInputFiles('#open-bundle', { name: 'agent.zip', mimeType: 'application/zip', buffer: zip })
    await p.waitForSelector('#bundle-status:text-is("from a bundle")')
    await p.click('#tab-agent')
    await p.waitForSelector('#list-agent .vrow')
    t.equal(await p.textContent('#row-count'), '11 steps · 12 actions')
    t.equal(await p.getAttribute('#row-count', 'data-count'), '11', 'ten steps and the Setup group')
    const keys = await p.locator('#list-agent .agent').evaluateAll(els => els.map(e => e.getAttribute('data-key')))
    t.same(keys, [...Array.from({ length: 10 }, (_, i) => `step:S${i}`), 'setup'], 'steps in order, setup last')
    // The first screen: every step row inside the list's visible box.
    const box = (await p.locator('#list-agent').boundingBox())!
    const lastStep = (await p.locator('#list-agent [data-key="step:S9"]').boundingBox())!
    t.ok(lastStep.y + lastStep.height <= box.y + box.height, 'all ten steps on the first screen')
    t.same(
      await p.locator('#list-agent .k-step .badges').evaluateAll(els => els.map(e => e.textContent)),
      ['', '', '', '1 console error', '', '1 failed request', '', '', '', ''],
      'effect badges: the console error of step 3, the failed request under step 5',
    )
    t.equal(await p.locator('#list-agent .k-step.bad').count(), 1, 'step 5 failed (its nested step did)')
    // Select step 3: the player shows its start, the other panels only its time.
    await p.click('#list-agent [data-key="step:S3"] .a-title')
    await p.waitForSelector('section.player[data-frame-id="4"]', { timeout: 10_000 })
    t.equal(
      await p.getAttribute('section.player', 'data-frame-id'),
      '4',
      'the player shows the frame at the start of step 3',
    )
    await p.waitForSelector('#span-filter')
    t.match(p.url(), /sel=step%3AS3&from=\d+&to=\d+/, 'the selection and its span are in the deep link')
    await p.click('#tab-console')
    await p.waitForFunction(() => document.getElementById('row-count')?.getAttribute('data-count') === '2')
    t.same(
      await p.locator('#list-console .c-text').evaluateAll(els => els.map(e => e.textContent)),
      ['step 3 log', 'boom'],
      "the console narrowed to step 3's span",
    )
    await p.click('#clear-span')
    await p.waitForFunction(() => document.getElementById('row-count')?.getAttribute('data-count') === '11')
    t.equal(await p.getAttribute('#row-count', 'data-count'), '11', 'Show all: every console line again')
    // Open step 5 and its nested step: the actions with their titles; an action narrows to its effects window.
    await p.click('#tab-agent')
    await p.click('#list-agent [data-toggle="step:S5"]')
    await p.click('#list-agent [data-toggle="step:S5a"]')
    t.same(await p.locator('#list-agent .k-action .a-title').evaluateAll(els => els.map(e => e.textContent)), [
      'click #b5 (collapsed)',
      'type 5 characters (collapsed)',
    ])
    await p.click('#list-agent .k-action.kind-type .a-title')
    const detail = p.locator('aside.detail')
    await detail.locator('h3', { hasText: 'Effects on its page' }).waitFor()
    t.match(await detail.textContent(), /failed requests1/, 'the failed request in its detail')
    await p.screenshot({ path: join(artifacts, 'agent-steps.png') })
    await p.evaluate(axeSource)
    const violations = await p.evaluate(async () => {
      const r = await (
        window as unknown as { axe: { run(d: Document): Promise<{ violations: { id: string; impact: string }[] }> } }
      ).axe.run(document)
      return r.violations.map(v => ({ id: v.id, impact: v.impact }))
    })
    t.same(
      violations.filter(v => v.impact === 'serious' || v.impact === 'critical'),
      [],
      `axe: ${JSON.stringify(violations)}`,
    )
    await p.close()
  })

  await t.test('login form: a pasted token, a wrong one refused', async t => {
    const fresh = await context.newPage()
    await fresh.goto(`${daemon.url}/viewer/`)
    await fresh.fill('#token', 'wrong-token')
    await fresh.click('button[type=submit]')
    await fresh.waitForSelector('[role=alert]:has-text("refused")')
    await fresh.fill('#token', TOKEN)
    await fresh.click('button[type=submit]')
    await fresh.waitForSelector('#row-count')
    t.equal(await fresh.evaluate(() => sessionStorage.getItem('browser-telemetry.token')), TOKEN)
    await fresh.screenshot({ path: join(artifacts, 'after-login.png') })
    await fresh.close()
  })

  await t.test(
    'a link pasted into the open sign-in page: the fragment change signs in, the token leaves the URL',
    async t => {
      const fresh = await context.newPage()
      await fresh.goto(`${daemon.url}/viewer/`)
      await fresh.waitForSelector('#token')
      await fresh.evaluate(
        link => {
          location.hash = new URL(link).hash
        },
        viewerUrl(daemon.url, TOKEN, browserId),
      )
      await fresh.waitForSelector('#row-count')
      t.notMatch(fresh.url(), /token=/, 'the token is gone from the address bar')
      t.equal(await fresh.evaluate(() => sessionStorage.getItem('browser-telemetry.token')), TOKEN)
      await fresh.close()
    },
  )

  t.same(offHost, [], 'no request left 127.0.0.1')
  t.ok(
    seen.some(u => u.includes('/telemetry/stream')),
    'the stream went through the interception too',
  )
  t.same(
    problems.filter(p => /Content.Security.Policy|Refused to|pageerror/i.test(p)),
    [],
    'no CSP violations or page errors',
  )
  t.same(
    problems.filter(p => !/status of 401|ERR_CONNECTION_REFUSED|ERR_INCOMPLETE_CHUNKED_ENCODING/.test(p)),
    [],
    'errors only from the wrong token and the killed daemon (its stream cut, its port closed)',
  )
})
