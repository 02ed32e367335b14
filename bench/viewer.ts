// Session viewer at scale: with 100k events in the log, the time from opening /viewer/ to
// the first rows on screen (goal <= 1 s), and frame times while scrolling up through history (the
// list pages older events in as it goes). Baseline: the same on a log of 1k events, same process,
// same Chromium. Real Debian Chromium through playwright-core; medians of RUNS fresh browser contexts.
// Then the same two logs saved as debug bundles and opened from disk with no daemon (the page from a
// static server, the zip through the file picker): time from picking the file to the first rows.
//   npx tsx bench/viewer.ts            (BIG=100000 SMALL=1000 RUNS=5 FRAMES=300 BUNDLES=1)
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import { loadViewerAssets, registerViewerRoutes } from '../src/api/routes/viewer.js'
import { startApiServer } from '../src/api/server.js'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { Pipeline, type EventInput } from '../src/pipeline/pipeline.js'
import { EventLog } from '../src/store/event-log.js'
import { buildViewer } from '../scripts/build-viewer.mjs'
import { createWriteStream } from 'node:fs'
import { pipeline as pipeStreams } from 'node:stream/promises'
import { buildBundle } from '../src/bundle/bundle.js'
import { startViewServer } from '../src/cli/view.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { Redactor } from '../src/events/redact.js'
import { fmt, median, realisticEvent, withTempDir } from './common.js'

const BIG = Number(process.env.BIG ?? 100_000)
const SMALL = Number(process.env.SMALL ?? 1_000)
const RUNS = Number(process.env.RUNS ?? 5)
const FRAMES = Number(process.env.FRAMES ?? 300)
const BUNDLES = process.env.BUNDLES !== '0'
const TOKEN = 'bench-token'
const BROWSER_ID = 'bench-browser'

/** A session-like mix: requests with responses, console lines, clicks. */
function sessionEvent(i: number): EventInput {
  const ctx = { target_id: 'T1', target_type: 'page' as const, session_id: 'S1', nav_seq: 1 + Math.floor(i / 5000) }
  switch (i % 4) {
    case 0:
      return realisticEvent(i)
    case 1:
      return {
        type: 'network_response',
        source: { kind: 'cdp' },
        data: {
          ...ctx,
          url: `https://shop.example.com/api/v2/products/${i - 1}`,
          request_id: `1234.${i - 1}`,
          status: 200,
          status_text: 'OK',
          headers: { 'content-type': 'application/json' },
          mime_type: 'application/json',
        },
      }
    case 2:
      return {
        type: 'console_log',
        source: { kind: 'cdp' },
        data: { ...ctx, level: i % 40 === 2 ? 'error' : 'log', text: `render item ${i}`, args: [`render item ${i}`] },
      }
    default:
      return {
        type: 'interaction_click',
        source: { kind: 'cdp' },
        data: { ...ctx, x: i % 1280, y: i % 720, selector: `#item-${i}`, tag: 'button', text: 'Add' },
      }
  }
}

interface Figures {
  firstRowsMs: number
  frameMedianMs: number
  frameP95Ms: number
  frameMaxMs: number
  longFrames: number
  loadedAfterScroll: number
}

/** Where measure() saved each log's debug bundle (events count -> zip path). */
const bundles = new Map<number, string>()

async function measure(browser: Browser, events: number, dir: string, assetsDir: string): Promise<Figures[]> {
  let now = 1_700_000_000_000_000
  const log = await EventLog.open({
    path: join(dir, `log-${events}`),
    retentionIntervalMs: 0,
    maxBytes: 64 * 1024 ** 3,
    maxAgeMs: 1e15,
  })
  // 100 events a second of the session's clock (a click every 40 ms): a busy session, inside the
  // interaction category's human-rate cap on that clock, so every event is stored.
  const pipeline = new Pipeline({ log, clock: () => (now += 10_000), sheddingClock: () => now / 1000 })
  for (let i = 0; i < events; i++) {
    pipeline.emit(sessionEvent(i))
    if (i % 5000 === 4999) await log.flush()
  }
  await log.flush()
  if (BUNDLES) {
    const zip = join(dir, `bundle-${events}.zip`)
    const build = buildBundle(
      {
        browserId: BROWSER_ID,
        daemonVersion: 'bench',
        log,
        categories: () => CONFIGURABLE_CATEGORIES,
        redaction: new Redactor().policy(),
      },
      { sinceUs: 0 },
    )
    await pipeStreams(build.output, createWriteStream(zip))
    await build.done
    bundles.set(events, zip)
  }
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  const app = createApiApp({
    browserId: BROWSER_ID,
    log,
    pipeline,
    tokens,
    routes: [r => registerViewerRoutes(r, { assets: loadViewerAssets(assetsDir) })],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  const out: Figures[] = []
  try {
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
      const page = await context.newPage()
      await page.goto(`${server.url}/viewer/#token=${TOKEN}&browser=${BROWSER_ID}&panel=all`)
      await page.waitForSelector('#list-all .vrow .c-seq')
      // From navigation start (the page's time origin) to the frame that shows the first rows.
      const firstRowsMs = await page.evaluate(async () => {
        for (;;) {
          const m = performance.getEntriesByName('viewer:first-rows')[0]
          if (m) return m.startTime
          await new Promise(r => setTimeout(r, 10))
        }
      })
      // Background history fill settles first (2000 events), then scroll up through it and beyond.
      await page.waitForFunction(
        n =>
          Number(/^(\d+) events loaded/.exec(document.getElementById('window-info')?.textContent ?? '')?.[1] ?? 0) >= n,
        Math.min(events, 2000),
        { timeout: 60_000 },
      )
      await page.click('#follow') // pause: scrolling, not following
      const deltas = await page.evaluate(async frames => {
        const list = document.getElementById('list-all')!
        list.scrollTop = list.scrollHeight
        await new Promise(r => requestAnimationFrame(r))
        const ds: number[] = []
        let last = performance.now()
        for (let i = 0; i < frames; i++) {
          list.scrollTop -= 300
          await new Promise(r => requestAnimationFrame(r))
          const t = performance.now()
          ds.push(t - last)
          last = t
        }
        return ds
      }, FRAMES)
      const loadedAfterScroll = await page.evaluate(() =>
        Number(/^(\d+) events loaded/.exec(document.getElementById('window-info')?.textContent ?? '')?.[1] ?? 0),
      )
      const sorted = [...deltas].sort((a, b) => a - b)
      out.push({
        firstRowsMs,
        frameMedianMs: median(deltas),
        frameP95Ms: sorted[Math.floor(sorted.length * 0.95)]!,
        frameMaxMs: sorted.at(-1)!,
        longFrames: deltas.filter(d => d > 50).length,
        loadedAfterScroll,
      })
      await context.close()
    }
  } finally {
    await server.close(500)
    await app.closeStreams()
    await log.close()
  }
  return out
}

/** Opens a saved bundle RUNS times (fresh context each): ms from picking the file to the first rows. */
async function measureBundle(browser: Browser, zip: string, assetsDir: string): Promise<number[]> {
  const view = await startViewServer(zip, { assets: loadViewerAssets(assetsDir) })
  const out: number[] = []
  try {
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
      const page = await context.newPage()
      // The page alone (no ?bundle=): the zip comes from disk through the file picker.
      await page.goto(view.url.replace(/\?.*$/, '') + '#panel=all')
      await page.waitForSelector('#open-bundle', { state: 'attached' })
      await page.evaluate(() => {
        document.getElementById('open-bundle')!.addEventListener('change', () => performance.mark('bench:picked'), {
          capture: true,
        })
      })
      await page.setInputFiles('#open-bundle', zip)
      await page.waitForSelector('#list-all .vrow .c-seq', { timeout: 60_000 })
      out.push(
        await page.evaluate(async () => {
          for (;;) {
            const m = performance.getEntriesByName('viewer:first-rows')[0]
            const picked = performance.getEntriesByName('bench:picked')[0]
            if (m && picked) return m.startTime - picked.startTime
            await new Promise(r => setTimeout(r, 10))
          }
        }),
      )
      await context.close()
    }
  } finally {
    await view.close()
  }
  return out
}

const summary = (xs: Figures[]) => ({
  firstRowsMs: median(xs.map(x => x.firstRowsMs)),
  frameMedianMs: median(xs.map(x => x.frameMedianMs)),
  frameP95Ms: median(xs.map(x => x.frameP95Ms)),
  frameMaxMs: median(xs.map(x => x.frameMaxMs)),
  longFrames: median(xs.map(x => x.longFrames)),
  loadedAfterScroll: median(xs.map(x => x.loadedAfterScroll)),
})

await withTempDir(async dir => {
  const assetsDir = join(dir, 'viewer')
  await buildViewer({ outDir: assetsDir })
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_FLAGS.filter(f => !f.startsWith('--headless')),
  })
  try {
    const small = summary(await measure(browser, SMALL, dir, assetsDir))
    const big = summary(await measure(browser, BIG, dir, assetsDir))
    console.log(
      `viewer, medians of ${RUNS} fresh contexts, ${FRAMES} scroll frames of 300 px each (upwards, paging older history in)`,
    )
    for (const [name, s] of [
      [`${SMALL} events (baseline)`, small],
      [`${BIG} events`, big],
    ] as const) {
      console.log(
        `  ${name.padEnd(22)} first rows ${fmt(s.firstRowsMs, 0)} ms; frame median ${fmt(s.frameMedianMs, 1)} ms, p95 ${fmt(s.frameP95Ms, 1)} ms, max ` +
          `${fmt(s.frameMaxMs, 1)} ms, frames > 50 ms: ${s.longFrames}; events loaded after scrolling: ${s.loadedAfterScroll}`,
      )
    }
    console.log(
      `  ratio ${BIG}/${SMALL}: first rows ${fmt(big.firstRowsMs / small.firstRowsMs)}x, frame p95 ${fmt(big.frameP95Ms / small.frameP95Ms)}x`,
    )
    console.log(`  goal: first rows <= 1000 ms with ${BIG} events: ${big.firstRowsMs <= 1000 ? 'met' : 'NOT met'}`)
    if (BUNDLES) {
      const smallB = median(await measureBundle(browser, bundles.get(SMALL)!, assetsDir))
      const bigB = median(await measureBundle(browser, bundles.get(BIG)!, assetsDir))
      console.log(`bundle opened from disk with no daemon (file picker), medians of ${RUNS} fresh contexts`)
      console.log(
        `  first rows: ${SMALL} events ${fmt(smallB, 0)} ms (baseline), ${BIG} events ${fmt(bigB, 0)} ms (${fmt(bigB / smallB)}x)`,
      )
    }
  } finally {
    await browser.close()
  }
})
