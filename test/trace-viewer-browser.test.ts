// The Playwright trace of a real session, opened in Playwright's own trace viewer. The daemon (in
// process) launches headless Chromium, records the screen, and its CDP proxy records Playwright
// driving a page it serves: one agent step, goto, a click that logs, warns, fetches (a JSON body, a
// 404, a dead port, a body that never ends) and throws, then goto /done. The trace zip is fetched
// from the API and opened in the trace viewer that ships in playwright-core (served from
// 127.0.0.1), in a second Chromium; the assertions read the rendered viewer.
import t from 'tap'
import type { Test } from 'tap'
import { writeFile } from 'node:fs/promises'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { readFile } from 'node:fs/promises'
import { chromium, type Page } from 'playwright-core'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import type { Envelope } from '../src/events/index.js'
import { closedPort } from './helpers/ports.js'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(240_000)
const TOKEN = 'trace-test-token'
const ICON = '<link rel="icon" href="data:,">'
const require = createRequire(import.meta.url)
const VIEWER_DIR = join(dirname(require.resolve('playwright-core/package.json')), 'lib/vite/traceViewer')

const MIME: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.ttf': 'font/ttf',
  '.webmanifest': 'application/manifest+json',
  '.zip': 'application/zip',
}

/** The trace viewer's files and the trace, from one 127.0.0.1 origin (a service worker needs one). */
async function serveViewer(t: Test, trace: Buffer): Promise<string> {
  const server = createServer((req, res: ServerResponse) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!)
    if (path === '/trace.zip') {
      res.writeHead(200, { 'content-type': 'application/zip' })
      return res.end(trace)
    }
    const file = join(VIEWER_DIR, path === '/' ? 'index.html' : path)
    if (!file.startsWith(VIEWER_DIR)) return res.writeHead(403).end()
    readFile(file).then(
      body => {
        res.writeHead(200, { 'content-type': MIME[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream' })
        res.end(body)
      },
      () => res.writeHead(404).end(),
    )
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>(r => (server.closeAllConnections(), server.close(() => r()))))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

t.test('a real session opens in the Playwright trace viewer', async t => {
  const deadPort = await closedPort()
  const site = await startServer(t, {
    '/': `<!doctype html><title>shop</title>${ICON}<body style="background:#3a7">
<button id="buy" onclick="buy()">Buy</button>
<script>
function buy() {
  document.body.style.background = '#a37'
  console.log('hello trace')
  console.warn('careful')
  fetch('/data.json').then(r => r.json()).then(j => { document.title = 'got ' + j.n })
  fetch('/missing')
  fetch('http://127.0.0.1:${deadPort}/nothing').catch(() => {})
  setTimeout(() => { throw new Error('boom in the page') }, 0)
}
</script></body>`,
    '/data.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"n":42}')
    },
    '/done': `<!doctype html><title>done</title>${ICON}<body style="background:#37a"><p>done</p></body>`,
  })
  const dir = await tempDir(t)
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dir,
      '--token',
      TOKEN,
      '--proxy-listen',
      '127.0.0.1:0',
      '--recording',
    ],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
  t.teardown(() => d.close())
  const stored = async (): Promise<Envelope[]> => {
    const page = await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })
    return page.records.map(r => JSON.parse(r.json) as Envelope)
  }

  const pw = await chromium.connectOverCDP(`http://127.0.0.1:${d.proxy!.address().port}`)
  const page = await pw.contexts()[0]!.newPage()
  const cdp = await pw.newBrowserCDPSession()
  const send = (cdp.send as unknown as (m: string, p: object) => Promise<{ stepId: string }>).bind(cdp)
  const { stepId } = await send('BrowserTelemetry.startStep', { name: 'buy something' })
  await page.goto(site.url)
  await page.click('#buy')
  await waitFor(
    async () => {
      const all = await stored()
      return (
        all.some(e => e.event.type === 'console_error' && e.event.data.text.includes('boom in the page')) &&
        all.some(e => e.event.type === 'network_response' && e.event.data.status === 404) &&
        all.some(e => e.event.type === 'network_response' && (e.event.data.url ?? '').endsWith('/data.json')) &&
        all.some(e => e.event.type === 'network_loading_failed')
      )
    },
    20_000,
    'the click and its effects stored',
  )
  await page.goto(`${site.url}done`)
  await send('BrowserTelemetry.endStep', { stepId })
  await pw.close()
  await waitFor(async () => (await stored()).some(e => e.event.type === 'cdp_disconnect'), 20_000, 'the disconnect')
  await d.frames.flush()

  const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/trace.zip?since=10m`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/zip')
  const zip = Buffer.from(await res.arrayBuffer())
  await writeFile(join(dir, 'trace.zip'), zip)

  const origin = await serveViewer(t, zip)
  const viewer = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_FLAGS.filter(f => !f.startsWith('--headless')),
  })
  t.teardown(() => viewer.close())
  const context = await viewer.newContext({ viewport: { width: 1600, height: 1000 } })
  const vp: Page = await context.newPage()
  const problems: string[] = []
  vp.on('pageerror', e => problems.push(e.message))
  await vp.goto(`${origin}/index.html?trace=${encodeURIComponent(`${origin}/trace.zip`)}`)
  await vp.waitForSelector('.action-title', { timeout: 30_000 })
  const dump = async (tab: string) => {
    await vp.click(`.tabbed-pane-tab-label:text-is("${tab}")`)
    await vp.waitForTimeout(1000)
    console.log('=====', tab, await vp.locator('.workbench').innerHTML())
  }
  await dump('Console')
  await dump('Network')
  await dump('Errors')
  await dump('Metadata')
  t.same(problems, [], 'the viewer ran without errors')
})
