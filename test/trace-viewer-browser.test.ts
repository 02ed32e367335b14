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
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { deriveActions } from '../src/actions/index.js'
import { closedPort } from './helpers/ports.js'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'
import { driveThroughProxy, startTestDaemon } from './helpers/agent-driver.js'
import { unzipAll } from './helpers/bundle.js'

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

/** The trace viewer's files from a 127.0.0.1 origin of their own (as trace.playwright.dev serves them). */
async function serveViewer(t: Test): Promise<string> {
  const server = createServer((req, res: ServerResponse) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!)
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
  const streams: ServerResponse[] = []
  t.teardown(() => streams.forEach(r => r.destroy()))
  const seen: string[] = []
  const site = await startServer(t, {
    '/': `<!doctype html><title>shop</title>${ICON}<body style="background:#3a7">
<button id="buy" onclick="buy()">Buy</button>
<script>
function buy() {
  document.body.style.background = '#a37'
  console.log('hello trace')
  console.warn('careful')
  fetch('/data.json').then(r => r.json())
  fetch('/hop').then(r => r.text())
  fetch('/missing')
  fetch('http://127.0.0.1:${deadPort}/nothing').catch(() => {})
  fetch('/stream').then(r => fetch('/streaming?status=' + r.status))
  setTimeout(() => { throw new Error('boom in the page') }, 0)
}
</script></body>`,
    '/hop': (_req, res) => {
      res.writeHead(302, { location: '/final.json' })
      res.end()
    },
    '/final.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"final":true}')
    },
    '/data.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"n":42}')
    },
    // Headers and a first chunk, then nothing: the body never ends (the tab navigates away).
    '/stream': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('first chunk\n')
      streams.push(res)
    },
    '/streaming': (_req, res) => {
      res.writeHead(204)
      res.end()
    },
    '/done': `<!doctype html><title>done</title>${ICON}<body style="background:#37a"><p>done</p></body>`,
  })
  site.server.prependListener('request', req => seen.push(req.url ?? ''))
  const dir = await tempDir(t)
  const viewerOrigin = await serveViewer(t)
  const { d, stored } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--token', TOKEN, '--proxy-listen', '127.0.0.1:0'],
    ...['--recording', '--trace-link-origins', `https://trace.playwright.dev,${viewerOrigin}`],
  ])
  const { pw, page, startStep, endStep } = await driveThroughProxy(d)
  const stepId = await startStep('buy something')
  await page.goto(site.url)
  await page.click('#buy')
  await waitFor(
    async () => {
      const all = await stored()
      return (
        all.some(e => e.event.type === 'console_error' && e.event.data.text.includes('boom in the page')) &&
        all.some(e => e.event.type === 'network_response' && e.event.data.status === 404) &&
        all.some(e => e.event.type === 'network_response' && (e.event.data.url ?? '').endsWith('/data.json')) &&
        all.some(e => e.event.type === 'network_loading_failed') &&
        all.some(e => e.event.type === 'network_response' && (e.event.data.url ?? '').endsWith('/final.json')) &&
        seen.includes('/streaming?status=200')
      )
    },
    20_000,
    'the click and its effects stored',
  )
  await page.goto(`${site.url}done`)
  await endStep(stepId)
  await pw.close()
  await waitFor(async () => (await stored()).some(e => e.event.type === 'cdp_disconnect'), 20_000, 'the disconnect')
  await d.frames.flush()

  // The export takes the frames that came after events committed when it starts (a frame's
  // after_seq is the last event assigned when it came, maybe still in the group commit): every
  // frame after an event committed now is in it; one after an event not yet committed may not be.
  const committed = (await stored()).at(-1)!.seq
  const framesBefore = d.frames.list({ sinceUs: 0, limit: 10_000 }).items.filter(f => f.after_seq <= committed)
  // One window for the export and the link: an event committed between the two (a late body under
  // load) would otherwise make them differ.
  const until = new Date(Date.now() + 1).toISOString()
  const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/trace.zip?since=10m&until=${until}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/zip')
  const zip = Buffer.from(await res.arrayBuffer())
  await writeFile(join(dir, 'trace.zip'), zip)

  // The viewer fetches the trace from the daemon through a signed link, as trace.playwright.dev does.
  const made = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/trace-links`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ since: '10m', until }),
  })
  t.equal(made.status, 201)
  const link = (await made.json()) as { url: string; viewer_url: string; expires_at: string }
  t.notMatch(link.url, TOKEN, 'the token is not in the link')
  t.equal(link.viewer_url, `https://trace.playwright.dev/?trace=${encodeURIComponent(link.url)}`)
  // 10 s for the answer to arrive: measured 6-11 ms taken over 5 fresh-clone suite runs (quiet to
  // load 14), 900x under it.
  const expiresIn = Date.parse(link.expires_at) - Date.now()
  t.ok(expiresIn > 890_000 && expiresIn <= 900_000, `expires in 900 s by default (${expiresIn} ms)`)
  const cors = await fetch(link.url, { headers: { origin: 'https://trace.playwright.dev' } })
  t.equal(cors.status, 200)
  t.equal(cors.headers.get('access-control-allow-origin'), 'https://trace.playwright.dev', 'CORS for the viewer')
  const linked = await unzipAll(Buffer.from(await cors.arrayBuffer()))
  // The same trace as with the token.
  const notFrames = (m: Map<string, Buffer>) => [...m.keys()].filter(k => !k.startsWith('resources/frame-')).sort()
  t.same(notFrames(linked), notFrames(await unzipAll(zip)), 'the same trace as with the token')
  const stranger = await fetch(link.url, { headers: { origin: 'https://evil.example' } })
  t.equal(stranger.headers.get('access-control-allow-origin'), null, 'no CORS for another origin')
  await stranger.arrayBuffer()
  const credential = new URL(link.url).searchParams.get('link')!
  for (const path of ['telemetry/events', 'telemetry/bundle', 'telemetry/actions', 'recording/frames']) {
    const other = await fetch(`${d.url}/browsers/${d.browserId}/${path}?link=${credential}`)
    t.equal(other.status, 401, `the link opens nothing else: ${path}`)
    t.equal(((await other.json()) as { code: string }).code, 'unauthorized')
  }
  const widened = await fetch(`${link.url}&since=1h`)
  t.equal(widened.status, 400, 'a link fixes its window')
  t.match(await widened.json(), {
    code: 'bad_request',
    message: 'invalid since: a link fixes the window; leave this out',
  })
  const [payload, sig] = credential.split('.')
  const forged = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), s: 0 }),
  ).toString('base64url')
  const altered = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/trace.zip?link=${forged}.${sig}`)
  t.equal(altered.status, 401, 'an altered link is refused')
  t.match(await altered.json(), { code: 'unauthorized', message: /bad signature/ })
  const short = (await (
    await fetch(`${d.url}/browsers/${d.browserId}/telemetry/trace-links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ttl_seconds: 1 }),
    })
  ).json()) as { url: string }
  const expired = await waitFor(
    async () => {
      const r = await fetch(short.url, { headers: { origin: 'https://trace.playwright.dev' } })
      if (r.status === 200) await r.arrayBuffer()
      return r.status === 401 ? r : undefined
    },
    10_000,
    'the 1 s link to expire',
  )
  t.equal(expired.headers.get('access-control-allow-origin'), 'https://trace.playwright.dev', 'the refusal is readable')
  t.match(await expired.json(), { code: 'unauthorized', message: /expired at/ })
  for (const ttl of [0, 86_401, 1.5, '60']) {
    const bad = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/trace-links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ttl_seconds: ttl }),
    })
    t.equal(bad.status, 400, `ttl_seconds ${JSON.stringify(ttl)} is refused`)
    await bad.arrayBuffer()
  }

  const origin = viewerOrigin
  const viewer = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_FLAGS.filter(f => !f.startsWith('--headless')),
  })
  t.teardown(() => viewer.close())
  const context = await viewer.newContext({ viewport: { width: 1600, height: 1000 } })
  const vp: Page = await context.newPage()
  const problems: string[] = []
  vp.on('pageerror', e => problems.push(e.message))
  await vp.goto(`${origin}/index.html?trace=${encodeURIComponent(link.url)}`)
  await vp.waitForSelector('.action-title', { timeout: 30_000 })
  const tab = async (name: string) => {
    await vp.click(`.tabbed-pane-tab-label:text-is("${name}")`)
    await vp.waitForSelector(`.tab-content.tab-${name.toLowerCase()}`)
  }

  // Actions: the step, and inside it what Playwright did (setup left out): exactly the actions the
  // daemon derives from the same window (src/actions), in time order.
  const derived = deriveActions(await stored())
    .filter(a => a.kind !== 'setup')
    .sort((a, b) => a.start_ts - b.start_ts)
  t.same(
    await vp.locator('.action-title-method').allTextContents(),
    ['buy something', ...derived.map(a => a.title)],
    'the actions list',
  )
  const kinds = derived.map(a => a.kind)
  t.same(
    [kinds[0], kinds.includes('click'), kinds.at(-1)],
    ['navigate', true, 'navigate'],
    `goto, a click, goto: ${derived.map(a => a.title).join(', ')}`,
  )
  t.equal(derived.filter(a => a.step_id === stepId).length, derived.length, 'all in the step')

  // Film strip: every stored recording frame is a screencast frame; the strip draws them.
  const files = await unzipAll(zip)
  const traceLines = files
    .get('trace.trace')!
    .toString('utf8')
    .trim()
    .split('\n')
    .map(l => JSON.parse(l) as { type: string; [k: string]: unknown })
  t.equal(traceLines[0]!.type, 'context-options')
  t.equal(traceLines[0]!.version, 8, 'format version 8')
  const frameLines = traceLines.filter(l => l.type === 'screencast-frame')
  // Frames stored while the export ran may or may not be in it; every one stored before it is.
  const kept = d.frames.list({ sinceUs: 0, limit: 10_000 }).items
  t.ok(framesBefore.length > 0, `frames recorded (${framesBefore.length})`)
  t.ok(
    frameLines.length >= framesBefore.length,
    `every frame after an event committed before the export is in it (${frameLines.length} of ${framesBefore.length})`,
  )
  t.same(
    frameLines.map(l => l.sha1),
    kept.slice(0, frameLines.length).map(f => `frame-${f.frame_id}.jpeg`),
    'one screencast frame per stored recording frame, in order',
  )
  for (const l of frameLines) t.ok(files.has(`resources/${String(l.sha1)}`), `${String(l.sha1)} is in resources/`)
  await vp.waitForSelector('.film-strip-frame')
  const strip = await vp.$$eval('.film-strip-frame', els =>
    els.map(e => /url\("?([^")]+)"?\)/.exec((e as HTMLElement).style.backgroundImage)?.[1] ?? ''),
  )
  t.ok(strip.length > 0, `the film strip shows frames (${strip.length})`)
  const images = await vp.evaluate(
    urls => Promise.all(urls.map(u => fetch(u).then(async r => [r.status, (await r.arrayBuffer()).byteLength]))),
    [...new Set(strip)],
  )
  for (const [status, bytes] of images) t.ok(status === 200 && bytes! > 0, 'a film strip frame loads')

  // An action's Before and After: the recording frame on screen then, not a blank about:blank.
  const shots = traceLines.filter(l => l.type === 'screenshot')
  t.ok(
    shots.filter(l => l.phase === 'before').length >= derived.length - 1,
    `actions with a Before frame: ${shots.filter(l => l.phase === 'before').length} of ${derived.length}`,
  )
  for (const l of shots) t.ok(files.has(String(l.file)), `${String(l.file)} is in the zip`)
  const click = derived.find(a => a.kind === 'click')!
  await vp.click(`.action-title-method:text-is("${click.title}")`)
  const clickShots = shots.filter(l => l.callId === click.action_id).map(l => String(l.file))
  t.ok(clickShots.length > 0, `the click has its frames: ${clickShots.join(', ')}`)
  const shown = await waitFor(
    () =>
      vp
        .$eval('.aria-mode-screenshot img', e => {
          const img = e as HTMLImageElement
          return img.complete && img.naturalWidth > 0 ? { src: img.src, width: img.naturalWidth } : undefined
        })
        .catch(() => undefined),
    15_000,
    "the click's screenshot",
  )
  const imageWidth = shown.width
  t.ok(
    clickShots.some(f => shown.src.includes(`/file/${f}?`)),
    `the viewer shows one of the click's frames: ${shown.src.split('?')[0]}`,
  )
  t.ok(imageWidth > 0, `the click's screenshot is its recording frame (${imageWidth} px wide)`)

  // Network: every request the page server saw, with its status; the dead port failed; the stream
  // shows the status its headers brought although its body never ended.
  await tab('Network')
  const rows = await vp.$$eval('.network-list-view .list-view-entry', els =>
    els.map(e => [
      e.querySelector('.grid-view-column-name')!.getAttribute('title')!,
      e.querySelector('.grid-view-column-status')!.textContent!,
    ]),
  )
  const expected = [
    [site.url, '200'],
    [`${site.url}data.json`, '200'],
    [`${site.url}missing`, '404'],
    [`${site.url}hop`, '302'],
    [`${site.url}final.json`, '200'],
    [`http://127.0.0.1:${deadPort}/nothing`, 'canceled'],
    [`${site.url}stream`, '200'],
    [`${site.url}streaming?status=200`, '204'],
    [`${site.url}done`, '200'],
  ]
  t.same([...rows].sort(), [...expected].sort(), 'every request with its status')
  t.same(
    [...seen].sort(),
    ['/', '/data.json', '/done', '/final.json', '/hop', '/missing', '/stream', '/streaming?status=200'],
    'and those are all the requests the page server saw',
  )
  const network = files
    .get('trace.network')!
    .toString('utf8')
    .trim()
    .split('\n')
    .map(l => JSON.parse(l) as { snapshot: { request: { url: string }; response: Record<string, unknown> } })
  const stream = network.find(n => n.snapshot.request.url === `${site.url}stream`)!
  t.equal(stream.snapshot.response._incomplete, 'navigated', 'the stream is marked incomplete: the page navigated away')
  const data = network.find(n => n.snapshot.request.url === `${site.url}data.json`)!
  const body = (data.snapshot.response.content as { _sha1: string })._sha1
  t.equal(files.get(`resources/${body}`)?.toString('utf8'), '{"n":42}', 'the captured body is a resource')

  // Console: the messages with their levels, and the uncaught error with its stack.
  await tab('Console')
  const consoleRows = await vp.$$eval('.console-list-view .list-view-entry', els =>
    els.map(e => ({
      cls: e.className.replace('list-view-entry', '').trim(),
      text: e.querySelector('.console-line-message')?.textContent ?? '',
      stack: e.querySelector('.console-stack')?.textContent ?? '',
    })),
  )
  t.same(
    consoleRows.map(r => [r.cls, r.text]),
    [
      ['', 'hello trace'],
      ['warning', 'careful'],
      ['error', 'boom in the page'],
    ],
    'the console messages, levels and the error',
  )
  t.match(
    consoleRows[2]!.stack,
    /^Error: boom in the page\n\s+at .*127\.0\.0\.1:\d+\/:\d+:\d+/,
    'the error has its stack',
  )
  await tab('Metadata')
  t.match(await vp.locator('.tab-metadata').innerText(), /engine:\s*chromium/, 'the context line')
  t.same(problems, [], 'the viewer ran without errors')
})
