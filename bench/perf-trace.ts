// Benchmark: what a performance trace costs the telemetry, and how large it gets.
//
// The heavy bench page (watchers.ts) loaded again and again in fresh tabs for DURATION_MS under the
// compiled daemon (all categories but screenshot), in two blocks interleaved round by round: without
// a trace, and with a trace of the browser (default categories) running over the whole block. Per
// block: events stored per load (the trace's block / the plain block: goal ≥ 0.95), median
// navigate->load time, the trace file's size (goal ≤ 50 MB) and the daemon's peak RSS (VmHWM) over
// the run (the trace is copied to disk in 1 MiB reads, never held whole).
//
// Knobs: ROUNDS (default 3), DURATION_MS (per block, default 5000), SKIP_BUILD=1 (run dist/ as it is).
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { launchChromium } from '../src/monitor/launch.js'
import { fmt, median, withTempDir } from './common.js'
import { ALL_BUT_SCREENSHOT, Cdp, loadOnce, peakRssMb, root, startDaemon, startSite, type Watcher } from './watchers.js'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const DURATION_MS = Number(process.env.DURATION_MS ?? 5000)

if (!process.env.SKIP_BUILD) {
  try {
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
  } catch {
    console.log('(tsc reported errors; using what it emitted into dist/)')
  }
}

const api = (w: Watcher, path: string, init: RequestInit = {}) =>
  fetch(`${w.api!.url}/browsers/bench/telemetry/perf-traces${path}`, {
    ...init,
    headers: { authorization: `Bearer ${w.api!.token}`, 'content-type': 'application/json' },
  })

await withTempDir(async tmp => {
  const site = await startSite()
  const browser = await launchChromium()
  const driver = await Cdp.connect(browser.wsUrl)
  let nonce = 0
  for (let i = 0; i < 3; i++) await loadOnce(driver, site.url(`warm${nonce++}`))
  const w = await startDaemon(join(tmp, 'd'), browser.wsUrl, ALL_BUT_SCREENSHOT, undefined, undefined, undefined, [
    '--browser-id',
    'bench',
  ])
  await loadOnce(driver, site.url(`settle${nonce++}`))
  const blocks = ['plain', 'tracing'] as const
  const s = new Map(blocks.map(b => [b, { events: 0, loads: 0, loadMs: [] as number[] }]))
  const traceBytes: number[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    for (const b of round % 2 ? blocks : [...blocks].reverse()) {
      let id = ''
      if (b === 'tracing') {
        const res = await api(w, '', { method: 'POST', body: JSON.stringify({ duration_ms: DURATION_MS }) })
        id = ((await res.json()) as { trace_id: string }).trace_id
      }
      const e0 = await w.storedEvents()
      const until = Date.now() + DURATION_MS
      const x = s.get(b)!
      while (Date.now() < until) {
        x.loadMs.push(await loadOnce(driver, site.url(`${nonce++}`)))
        x.loads++
      }
      if (id) {
        for (;;) {
          const res = await api(w, `/${id}`)
          await res.body?.cancel()
          if (res.status === 200) {
            traceBytes.push(Number(res.headers.get('content-length')))
            break
          }
          if (res.status !== 202) throw new Error(`trace ${id}: ${res.status}`)
          await new Promise(r => setTimeout(r, 200))
        }
      } else await new Promise(r => setTimeout(r, 1000)) // the same settling time as the trace's copy
      x.events += (await w.storedEvents()) - e0
    }
    process.stdout.write(`round ${round}/${ROUNDS} done\n`)
  }
  const plain = s.get('plain')!
  const tracing = s.get('tracing')!
  const perLoad = (x: typeof plain) => x.events / x.loads
  console.log(`\n${'block'.padEnd(8)} ${'loads'.padStart(6)} ${'events/load'.padStart(12)} ${'load ms'.padStart(8)}`)
  for (const b of blocks) {
    const x = s.get(b)!
    console.log(
      `${b.padEnd(8)} ${String(x.loads).padStart(6)} ${fmt(perLoad(x), 1).padStart(12)} ${fmt(median(x.loadMs), 1).padStart(8)}`,
    )
  }
  console.log(`\nevents per load, tracing / plain: ${fmt(perLoad(tracing) / perLoad(plain), 3)} (goal >= 0.95)`)
  console.log(
    `trace file: median ${fmt(median(traceBytes) / 1024 / 1024, 1)} MiB, largest ${fmt(Math.max(...traceBytes) / 1024 / 1024, 1)} MiB (goal <= 50 MB)`,
  )
  console.log(`daemon peak RSS over the run: ${fmt(peakRssMb(w.pid), 0)} MB`)
  await w.stop()
  site.server.close()
  driver.close()
  await browser.close()
})
