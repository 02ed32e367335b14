// Benchmark: what watching costs the browser. A heavy local page (20 stylesheets, 40 scripts,
// 30 images, 30 fetched JSON files, 300 console lines, layout shifts, a 30 ms long task) is loaded again and
// again, each time in a fresh tab, by an outside CDP client (this process). Blocks of loads run under one
// watcher each, interleaved round by round so machine drift hits every block alike:
//   none                  no watcher
//   bare:<domains>        a bare observer in its own process: auto-attach to every target (paused until set
//                         up, like the daemon), enable the given domains, do nothing with the events
//   daemon:<categories>   the compiled daemon (`node dist/src/cli.js serve`) attached with --categories
// Each single-category daemon block is compared with the observer enabling exactly the domains the
// capture plan (src/monitor/capture-plan.ts) gives a page for that category; all-but-screenshot with the
// issue's Runtime+Network+Page observer (the plan adds PerformanceTimeline to those, for page).
// Per block it prints the median navigate->load time, the ratio to `none` and to the matching bare observer
// (same CDP domains), the watcher's CPU ms per load (/proc/<pid>/stat, every thread), events stored per
// load (/metrics), CPU µs per stored event, the peak RSS (VmHWM), and what the daemon adds on top of its observer (its CPU minus the
// observer's, per load and per stored event: receiving Chromium's messages costs both), Chromium's CPU per load (every
// browser process, reaped children included) and the whole VM's (Chromium + watcher), each against the bare observer's.
// Then the idle cost: CPU ms per second of a daemon attached to a browser with one idle tab, and of one with no browser.
// Knobs: ROUNDS (default 4), LOADS (loads per block per round, default 4), BLOCKS (comma-separated names;
// a daemon block brings its observer; single-domain observers bare:Page, bare:Runtime, bare:Network,
// bare:PerformanceTimeline run only when named), IDLE_WARM_MS / IDLE_MS (idle measurement, default 15 s each;
// IDLE_MS=0 skips it), THREADS=1 (also print each watcher's CPU per load by thread name), SKIP_BUILD=1 (run
// dist/ as it is), BASELINE_ROOT (another built checkout whose daemon runs as one more interleaved block,
// baseline:all-but-screenshot), BASELINE_NODE_ARGS (node flags of that block; alone: this checkout under them),
// BASELINE_NICE (that block's daemon at this niceness, e.g. -5 as the systemd unit runs it), DAEMON_NODE_ARGS (extra
// node flags for the daemon, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), DAEMON_NICE (the daemon blocks' niceness).
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { launchChromium, type LaunchedBrowser } from '../src/monitor/launch.js'
import { capturePlan } from '../src/monitor/capture-plan.js'
import { CAPTURE_NEEDS } from '../collectors/index.js'
import { fmt, median, withTempDir } from './common.js'
import {
  ALL_BUT_SCREENSHOT,
  Cdp,
  cpuByThread,
  cpuMs,
  treeCpuMs,
  loadOnce,
  peakRssMb,
  root,
  startBare,
  startDaemon,
  startSite,
  threadsCpuMs,
  type Watcher,
} from './watchers.js'

const ROUNDS = Number(process.env.ROUNDS ?? 4)
const LOADS = Number(process.env.LOADS ?? 4)

interface Block {
  name: string
  kind: 'none' | 'bare' | 'same' | 'daemon'
  arg: string
  bare?: string
  /** The same-traffic observer: the bare one plus the response bodies the daemon fetches. */
  same?: string
  root?: string
  nodeArgs?: string
  nice?: number
}
/** The bare observer block enabling what the capture plan gives a page target for these categories. */
const planObserver = (categories: string): Block => {
  const domains = capturePlan(categories.split(','), CAPTURE_NEEDS).byTarget('page').domains
  return { name: `bare:${domains.join('+')}`, kind: 'bare', arg: domains.join(',') }
}
const daemonBlocks: Block[] = [
  {
    name: 'daemon:all-but-screenshot',
    kind: 'daemon',
    arg: ALL_BUT_SCREENSHOT,
    bare: 'bare:Page+Runtime+Network',
    same: 'same:Page+Runtime+Network',
  },
  ...['network', 'page', 'console', 'interaction'].map((c): Block => ({
    name: `daemon:${c}`,
    kind: 'daemon',
    arg: c,
    bare: planObserver(c).name,
  })),
]
const bareBlocks = new Map<string, Block>([
  ['bare:Page+Runtime+Network', { name: 'bare:Page+Runtime+Network', kind: 'bare', arg: 'Page,Runtime,Network' }],
  ['same:Page+Runtime+Network', { name: 'same:Page+Runtime+Network', kind: 'same', arg: 'Page,Runtime,Network' }],
])
for (const c of ['network', 'page', 'console', 'interaction']) {
  const b = planObserver(c)
  bareBlocks.set(b.name, b)
}
const ALL_BLOCKS: Block[] = [{ name: 'none', kind: 'none', arg: '' }, ...bareBlocks.values(), ...daemonBlocks]
/** What each domain alone costs (bench/README.md, single CDP domains): run only when named in BLOCKS. */
const DOMAIN_BLOCKS: Block[] = ['Page', 'Runtime', 'Network', 'PerformanceTimeline'].map(d => ({
  name: `bare:${d}`,
  kind: 'bare',
  arg: d,
}))
const wanted = process.env.BLOCKS?.split(',')
// A daemon block brings its matching observer along.
const BLOCKS = wanted
  ? [...ALL_BLOCKS, ...DOMAIN_BLOCKS.filter(b => !bareBlocks.has(b.name))].filter(
      b =>
        b.name === 'none' ||
        wanted.includes(b.name) ||
        daemonBlocks.some(d => wanted.includes(d.name) && (d.bare === b.name || d.same === b.name)),
    )
  : ALL_BLOCKS
// BASELINE_ROOT=<another checkout, built>: its daemon runs as one more block (all but screenshot), interleaved with ours.
// BASELINE_NODE_ARGS: node flags of that block only (with no BASELINE_ROOT, this checkout's daemon runs under them).
// BASELINE_NICE: the niceness of that block's daemon (alone: this checkout at that niceness, e.g. -5 as the systemd unit runs it).
const niceOf = (v: string | undefined) => (v === undefined || v === '' ? undefined : Number(v))
if (process.env.BASELINE_ROOT || process.env.BASELINE_NODE_ARGS || process.env.BASELINE_NICE) {
  BLOCKS.push({
    name: 'baseline:all-but-screenshot',
    kind: 'daemon',
    arg: ALL_BUT_SCREENSHOT,
    bare: 'bare:Page+Runtime+Network',
    root: process.env.BASELINE_ROOT ?? root,
    nodeArgs: process.env.BASELINE_NODE_ARGS,
    nice: niceOf(process.env.BASELINE_NICE),
  })
}

// ---------- the run ----------
if (!process.env.SKIP_BUILD) {
  try {
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
  } catch {
    console.log('(tsc reported errors; using what it emitted into dist/)')
  }
}

interface Sample {
  loadMs: number[]
  cpuMs: number
  /** Chromium's CPU over the block's loads: every process of the browser, reaped children included. */
  browserCpuMs: number
  loads: number
  events: number
  threads: Map<string, number>
  /** The highest peak RSS of the block's watcher processes, MB. */
  peakRssMb: number
}
const samples = new Map<string, Sample>(
  BLOCKS.map(b => [
    b.name,
    { loadMs: [], cpuMs: 0, browserCpuMs: 0, loads: 0, events: 0, threads: new Map(), peakRssMb: 0 },
  ]),
)
const THREADS = process.env.THREADS === '1'
const WARM_LOADS = Math.max(1, Number(process.env.WARM_LOADS ?? 1))

await withTempDir(async tmp => {
  const site = await startSite()
  const browser: LaunchedBrowser = await launchChromium()
  const driver = await Cdp.connect(browser.wsUrl)
  let nonce = 0
  for (let i = 0; i < 3; i++) await loadOnce(driver, site.url(`warm${nonce++}`)) // warm the browser up
  for (let round = 1; round <= ROUNDS; round++) {
    // Rotate the block order each round so no block always follows the same one.
    const order = BLOCKS.map((_, i) => BLOCKS[(i + round - 1) % BLOCKS.length]!)
    for (const block of order) {
      let watcher: Watcher | undefined
      if (block.kind === 'bare' || block.kind === 'same')
        watcher = await startBare(browser.wsUrl, block.arg, block.kind === 'same')
      if (block.kind === 'daemon')
        watcher = await startDaemon(
          join(tmp, `d${round}-${block.name.replace(/\W/g, '_')}`),
          browser.wsUrl,
          block.arg,
          block.root,
          block.nodeArgs ?? process.env.DAEMON_NODE_ARGS,
          block.nice ?? niceOf(process.env.DAEMON_NICE),
        )
      // Unmeasured loads: attach-time work is not page-load work; WARM_LOADS > 1 also lets a fresh
      // daemon's JIT settle (a production daemon serves thousands of loads per process).
      for (let w = 0; w < WARM_LOADS; w++) await loadOnce(driver, site.url(`settle${nonce++}`))
      // The stored-event counts (/metrics: some ms of the daemon's CPU each) are read outside the CPU window.
      const ev0 = watcher ? await watcher.storedEvents() : 0
      const cpu0 = watcher ? cpuMs(watcher.pid) : 0
      const browser0 = treeCpuMs(browser.pid)
      const threads0 = watcher && THREADS ? cpuByThread(watcher.pid) : undefined
      const s = samples.get(block.name)!
      for (let l = 0; l < LOADS; l++) s.loadMs.push(await loadOnce(driver, site.url(`${nonce++}`)))
      // Every block waits the same before counting: late events land, and so does Chromium's work for them.
      await new Promise(r => setTimeout(r, 1200))
      s.browserCpuMs += treeCpuMs(browser.pid) - browser0
      if (watcher) {
        s.cpuMs += cpuMs(watcher.pid) - cpu0
        if (threads0)
          for (const [name, ms] of cpuByThread(watcher.pid))
            s.threads.set(name, (s.threads.get(name) ?? 0) + ms - (threads0.get(name) ?? 0))
        s.events += (await watcher.storedEvents()) - ev0
        s.peakRssMb = Math.max(s.peakRssMb, peakRssMb(watcher.pid))
        await watcher.stop()
      }
      s.loads += LOADS
    }
    process.stdout.write(`round ${round}/${ROUNDS} done\n`)
  }

  const none = median(samples.get('none')!.loadMs)
  console.log(
    `\n${'block'.padEnd(32)} ${'load ms'.padStart(8)} ${'/none'.padStart(6)} ${'/bare'.padStart(6)} ${'cpu ms/load'.padStart(11)} ${'/bare'.padStart(6)} ` +
      `${'events/load'.padStart(11)} ${'µs/event'.padStart(9)} ${'added ms/load'.padStart(13)} ${'added µs/event'.padStart(14)} ${'peak MB'.padStart(8)} ` +
      `${'chromium ms/load'.padStart(16)} ${'/bare'.padStart(6)} ${'VM ms/load'.padStart(10)} ${'/bare'.padStart(6)}`,
  )
  for (const b of BLOCKS) {
    const s = samples.get(b.name)!
    const load = median(s.loadMs)
    const cpuPerLoad = s.loads ? s.cpuMs / s.loads : 0
    const bare = b.bare ? samples.get(b.bare) : undefined
    const bareLoad = bare ? median(bare.loadMs) : undefined
    const bareCpu = bare && bare.loads ? bare.cpuMs / bare.loads : undefined
    const evPerLoad = s.loads ? s.events / s.loads : 0
    // What the daemon adds on top of an observer receiving the same CDP traffic (Chromium charges the observer too).
    const added = b.kind === 'daemon' && bareCpu !== undefined ? cpuPerLoad - bareCpu : undefined
    // What the VM pays: Chromium's CPU, and Chromium's plus the watcher's.
    const browserPerLoad = s.loads ? s.browserCpuMs / s.loads : 0
    const bareBrowser = bare && bare.loads ? bare.browserCpuMs / bare.loads : undefined
    const vmPerLoad = browserPerLoad + cpuPerLoad
    const bareVm = bareBrowser !== undefined && bareCpu !== undefined ? bareBrowser + bareCpu : undefined
    console.log(
      `${b.name.padEnd(32)} ${fmt(load, 1).padStart(8)} ${fmt(load / none, 2).padStart(6)} ${(bareLoad ? fmt(load / bareLoad, 2) : '').padStart(6)} ` +
        `${(b.kind === 'none' ? '' : fmt(cpuPerLoad, 1)).padStart(11)} ${(bareCpu ? fmt(cpuPerLoad / bareCpu, 2) : '').padStart(6)} ` +
        `${(b.kind === 'daemon' ? fmt(evPerLoad, 1) : '').padStart(11)} ` +
        `${(b.kind === 'daemon' && s.events ? fmt((s.cpuMs * 1000) / s.events, 0) : '').padStart(9)} ` +
        `${(added !== undefined ? fmt(added, 1) : '').padStart(13)} ` +
        `${(added !== undefined && evPerLoad ? fmt((added * 1000) / evPerLoad, 0) : '').padStart(14)} ` +
        `${(b.kind === 'none' ? '' : fmt(s.peakRssMb, 1)).padStart(8)} ` +
        `${fmt(browserPerLoad, 1).padStart(16)} ${(bareBrowser ? fmt(browserPerLoad / bareBrowser, 3) : '').padStart(6)} ` +
        `${fmt(vmPerLoad, 1).padStart(10)} ${(bareVm ? fmt(vmPerLoad / bareVm, 3) : '').padStart(6)}`,
    )
  }
  // The daemon against the observer that asks Chromium for the same bodies: what is the daemon's own work.
  for (const b of BLOCKS) {
    const same = b.same ? samples.get(b.same) : undefined
    const s = samples.get(b.name)!
    if (!same?.loads || !s.loads) continue
    console.log(
      `${b.name} vs same-traffic observer: cpu/load ${fmt(s.cpuMs / s.loads, 1)} vs ${fmt(same.cpuMs / same.loads, 1)} ms ` +
        `(${fmt(s.cpuMs / s.loads / (same.cpuMs / same.loads), 2)}x), chromium cpu/load ${fmt(s.browserCpuMs / s.loads, 1)} vs ` +
        `${fmt(same.browserCpuMs / same.loads, 1)} ms (${fmt(s.browserCpuMs / s.loads / (same.browserCpuMs / same.loads), 3)}x)`,
    )
  }
  // This checkout's daemon against the baseline's (BASELINE_ROOT), the same categories, interleaved.
  const ours = samples.get('daemon:all-but-screenshot')
  const theirs = samples.get('baseline:all-but-screenshot')
  if (ours?.loads && theirs?.loads)
    console.log(
      `daemon vs baseline (all but screenshot): load ${fmt(median(ours.loadMs) / median(theirs.loadMs), 3)}x, ` +
        `cpu/load ${fmt(ours.cpuMs / ours.loads / (theirs.cpuMs / theirs.loads), 3)}x, ` +
        `chromium cpu/load ${fmt(ours.browserCpuMs / ours.loads, 1)} vs ${fmt(theirs.browserCpuMs / theirs.loads, 1)} ms ` +
        `(${fmt(ours.browserCpuMs / ours.loads / (theirs.browserCpuMs / theirs.loads), 3)}x), ` +
        `events/load ${fmt(ours.events / ours.loads, 1)} vs ${fmt(theirs.events / theirs.loads, 1)}`,
    )
  if (THREADS) {
    for (const b of BLOCKS) {
      const s = samples.get(b.name)!
      if (s.threads.size)
        console.log(
          `${b.name} cpu ms/load by thread: ${[...s.threads]
            .sort((x, y) => y[1] - x[1])
            .map(([n, ms]) => `${n} ${fmt(ms / s.loads, 1)}`)
            .join(', ')}`,
        )
    }
  }
  console.log(
    `(load: median navigate->load ms over ${ROUNDS} rounds x ${LOADS} loads; cpu: the watcher process, every thread; µs/event: watcher CPU / events ` +
      `stored; added: daemon CPU minus its bare observer's, per load and per stored event; peak MB: the highest VmHWM of ` +
      `the block's watcher processes, each after its warm-up and ${LOADS} loads; chromium: every browser process, reaped ` +
      `children included, over the loads and the same 1.2 s after them in every block; VM: chromium + watcher)`,
  )

  // Idle: the daemon attached to a browser whose only tab is idle, and one with no browser, sampled
  // every second over IDLE_MS after IDLE_WARM_MS. The median second is the steady state; the mean
  // also counts V8's one-off major GCs some 15-30 s after startup (~50-100 ms each).
  const IDLE_WARM_MS = Number(process.env.IDLE_WARM_MS ?? 5_000),
    IDLE_MS = Number(process.env.IDLE_MS ?? 30_000)
  for (const [label, cdpUrl] of IDLE_MS <= 0
    ? []
    : ([
        ['attached to an idle browser', browser.wsUrl],
        ['with no browser', undefined],
      ] as const)) {
    const d = await startDaemon(join(tmp, `idle-${cdpUrl ? 'b' : 'n'}`), cdpUrl, ALL_BUT_SCREENSHOT)
    await new Promise(r => setTimeout(r, IDLE_WARM_MS))
    const rates: number[] = []
    const c0 = threadsCpuMs(d.pid),
      t0 = performance.now()
    let c = c0,
      t = t0
    while (performance.now() - t0 < IDLE_MS) {
      await new Promise(r => setTimeout(r, 1000))
      const c1 = threadsCpuMs(d.pid),
        t1 = performance.now()
      rates.push((c1 - c) / ((t1 - t) / 1000))
      c = c1
      t = t1
    }
    const mean = (c - c0) / ((t - t0) / 1000)
    console.log(
      `idle daemon ${label}: median ${fmt(median(rates), 2)} ms CPU per second (goal <= 2), mean ${fmt(mean, 2)} over ${rates.length} s`,
    )
    await d.stop()
  }
  driver.close()
  await browser.close()
  site.server.close()
})
