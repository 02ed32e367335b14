// The Playwright trace of a 30-minute session against the debug bundle of the same window: export
// time and peak RSS, each export in a process of its own (bench/trace-export-child.mjs: the compiled
// code with the daemon's runtime settings), bundle and trace interleaved, medians of RUNS. Goals: the trace takes
// at most 1.2x the bundle's time (without its video) and at most 200 MB of RSS. Then the trace is
// opened from disk in the trace viewer of playwright-core (served on 127.0.0.1, in Chromium): the
// time to its first render (the action list and the film strip drawn), goal <= 5 s.
//   npx tsx bench/trace-export.ts     (MINUTES=30 STEPS_PER_S=5 FPS=1 RUNS=3)
import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { chromium } from 'playwright-core'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { fmt, median, withTempDir } from './common.js'
import { synthSession } from './session.js'

const MINUTES = Number(process.env.MINUTES ?? 30)
const STEPS_PER_S = Number(process.env.STEPS_PER_S ?? 5)
const FPS = Number(process.env.FPS ?? 1)
const RUNS = Number(process.env.RUNS ?? 3)
const child = join(import.meta.dirname, 'trace-export-child.mjs')
const require = createRequire(import.meta.url)
const VIEWER_DIR = join(dirname(require.resolve('playwright-core/package.json')), 'lib/vite/traceViewer')

interface Run {
  ms: number
  peakMb: number
  startMb: number
  heapMb: number
  externalMb: number
  bytes: number
}
const exportOnce = (dir: string, kind: 'bundle' | 'trace', since: number, until: number, out?: string): Run =>
  JSON.parse(
    execFileSync(
      process.execPath,
      [
        '--max-semi-space-size=2',
        '--import',
        'tsx',
        child,
        dir,
        kind,
        String(since),
        String(until),
        ...(out ? [out] : []),
      ],
      { encoding: 'utf8', maxBuffer: 1 << 20, env: { ...process.env, MALLOC_ARENA_MAX: '2' } },
    ),
  ) as Run

execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' }) // the child runs the compiled code
await withTempDir(async dir => {
  const s = await synthSession(dir, { minutes: MINUTES, stepsPerS: STEPS_PER_S, fps: FPS }, 'trace-export bench')
  const events = s.log.lastSeq
  const frameCount = s.frames.stats().frames
  await s.frames.close()
  await s.log.close()
  const traceFile = join(dir, 'session.trace.zip')
  const bundle: Run[] = []
  const trace: Run[] = []
  for (let i = 0; i < RUNS; i++) {
    bundle.push(exportOnce(dir, 'bundle', s.t0, s.now + 1))
    trace.push(exportOnce(dir, 'trace', s.t0, s.now + 1, i === RUNS - 1 ? traceFile : undefined))
    console.log(
      `  run ${i + 1}: bundle ${fmt(bundle[i]!.ms / 1000)} s ${fmt(bundle[i]!.peakMb, 0)} MB, ` +
        `trace ${fmt(trace[i]!.ms / 1000)} s ${fmt(trace[i]!.peakMb, 0)} MB ` +
        `(process before it ${fmt(trace[i]!.startMb, 0)} MB, heap ${fmt(trace[i]!.heapMb, 0)} MB, buffers ${fmt(trace[i]!.externalMb, 0)} MB)`,
    )
  }
  const b = median(bundle.map(r => r.ms))
  const tr = median(trace.map(r => r.ms))
  console.log(
    `trace-export: ${events} events, ${frameCount} frames; trace ${fmt(tr / 1000)} s vs bundle ${fmt(b / 1000)} s ` +
      `(${fmt(tr / b)}x, goal <= 1.2x); peak RSS trace ${fmt(median(trace.map(r => r.peakMb)), 0)} MB (goal <= 200 MB), ` +
      `bundle ${fmt(median(bundle.map(r => r.peakMb)), 0)} MB; zip ${fmt(trace.at(-1)!.bytes / 1024 / 1024, 1)} MiB trace, ` +
      `${fmt(bundle.at(-1)!.bytes / 1024 / 1024, 1)} MiB bundle; medians of ${RUNS}`,
  )

  // The viewer's first render of that trace, loaded from disk (served beside the viewer).
  const zip = await readFile(traceFile)
  const server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!)
    if (path === '/session.trace.zip') return res.writeHead(200, { 'content-type': 'application/zip' }).end(zip)
    const file = join(VIEWER_DIR, path === '/' ? 'index.html' : path)
    const type = file.endsWith('.js') ? 'text/javascript' : file.endsWith('.css') ? 'text/css' : 'text/html'
    readFile(file).then(
      body => res.writeHead(200, { 'content-type': type }).end(body),
      () => res.writeHead(404).end(),
    )
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_FLAGS.filter(f => !f.startsWith('--headless')),
  })
  const renders: number[] = []
  try {
    for (let i = 0; i < RUNS; i++) {
      const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } })
      const page = await context.newPage()
      const start = performance.now()
      await page.goto(`${origin}/index.html?trace=${encodeURIComponent(`${origin}/session.trace.zip`)}`)
      await page.waitForSelector('.film-strip-frame', { timeout: 120_000 })
      await page.waitForSelector('.action-title', { timeout: 120_000 })
      renders.push(performance.now() - start)
      await context.close()
    }
  } finally {
    await browser.close()
    server.close()
  }
  console.log(
    `trace-viewer first render: ${fmt(median(renders) / 1000)} s (goal <= 5 s), median of ${RUNS} ` +
      `(${renders.map(r => fmt(r / 1000)).join(', ')})`,
  )
})
