// The screenshots of docs/viewer.md, taken of a real session: the daemon (its own headless
// Chromium, recording on) records an agent driving swagger-ui, monaco-editor and jsoneditor
// (test/helpers/real-apps.ts, the same session the suite judges), then /viewer/ is opened in a
// second Chromium and each panel is saved as docs/viewer-<panel>.png.
//   npx tsx scripts/viewer-screenshots.ts
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Page } from 'playwright-core'
import { parseServeConfig } from '../src/config/config.js'
import { silentLogger } from '../src/log.js'
import { startDaemon } from '../src/main.js'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { viewerUrl } from '../src/cli/open.js'
import type { Envelope } from '../src/events/index.js'
import { runAgentSession, serveRealApps } from '../test/helpers/real-apps.js'

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '../docs')
const TOKEN = 'viewer-screenshots'
const cleanups: (() => unknown)[] = []
const scope = { teardown: (fn: () => unknown) => void cleanups.unshift(fn) }

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise(r => setTimeout(r, 50))
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'viewer-shots-'))
  scope.teardown(() => rm(dir, { recursive: true, force: true }))
  const apps = await serveRealApps(scope)
  const d = await startDaemon(
    parseServeConfig(
      ['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0', '--token', TOKEN, '--recording'],
      {},
    ),
    { logger: silentLogger, announce: () => {}, showNewToken: false },
  )
  scope.teardown(() => d.close())
  const stored = async (): Promise<Envelope[]> =>
    (await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })).records.map(r => JSON.parse(r.json) as Envelope)

  const pw = await chromium.connectOverCDP(`http://127.0.0.1:${d.proxy!.address().port}`)
  const page = await pw.contexts()[0]!.newPage()
  await page.setViewportSize({ width: 1100, height: 700 })
  const cdp = await pw.newBrowserCDPSession()
  const send = cdp.send.bind(cdp) as unknown as (m: string, p: object) => Promise<{ stepId: string }>
  await runAgentSession(apps, {
    page,
    startStep: async name => (await send('BrowserTelemetry.startStep', { name })).stepId,
    endStep: async stepId => void (await send('BrowserTelemetry.endStep', { stepId })),
    stored: (what, pred) => until(what, async () => (await stored()).find(pred)),
  })
  await pw.close()
  await d.sourceMaps.settled()
  await d.frames.flush()

  const viewer = await chromium.launch({ executablePath: '/usr/bin/chromium', args: [...CHROMIUM_FLAGS] })
  scope.teardown(() => viewer.close())
  const v = await viewer.newPage({ viewport: { width: 1400, height: 860 } })
  const url = d.url
  await v.goto(viewerUrl(url, TOKEN, d.browserId))
  const total = (await stored()).length
  await until('the session loaded', async () => {
    const n = Number(/^(\d+) events loaded/.exec((await v.textContent('#window-info')) ?? '')?.[1] ?? -1)
    return n >= total
  })
  const shot = async (p: Page, name: string) => {
    await p.waitForTimeout(300) // the last paint of the pane (a screenshot, not an assertion)
    await p.screenshot({ path: join(DOCS, `viewer-${name}.png`) })
    console.log(`docs/viewer-${name}.png`)
  }

  // The agent's steps and actions, "write code" open: one typing run, the shortcuts by name.
  await v.click('#tab-agent')
  await v.waitForSelector('#list-agent .vrow')
  await v.click('#list-agent .vrow:has-text("write code") [data-toggle]')
  await v.click('#list-agent .vrow:has-text("read the API docs") [data-toggle]')
  await shot(v, 'agent')

  // The console: swagger-ui's logged YAMLException with its mapped stack in the detail pane.
  await v.click('#tab-console')
  await v.fill('#filter-q', 'YAMLException').catch(() => undefined)
  await v.waitForSelector('#list-console .vrow')
  await v.click('#list-console .vrow')
  await shot(v, 'console')

  // The network waterfall of the monaco page, the worker script selected.
  await v.fill('#filter-q', '').catch(() => undefined)
  await v.click('#tab-network')
  await v.fill('#filter-q', 'monaco').catch(() => undefined)
  await v.waitForSelector('#list-network .vrow')
  await v.click('#list-network .vrow:has-text("worker")').catch(() => v.click('#list-network .vrow'))
  await shot(v, 'network')

  // The timeline: one section per navigation with its markers and vitals.
  await v.fill('#filter-q', '').catch(() => undefined)
  await v.click('#tab-timeline')
  await v.waitForSelector('#list-timeline .vrow')
  await shot(v, 'timeline')
}

void main()
  .then(
    () => 0,
    err => {
      console.error(err)
      return 1
    },
  )
  .then(async code => {
    for (const fn of cleanups) await fn()
    process.exit(code)
  })
