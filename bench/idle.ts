// Benchmark: is an idle daemon idle? A headless Chromium with one blank tab, the compiled daemon
// attached to it (--cdp-url, as deployed: the shebang's node flags), then its CPU time (every
// thread, from /proc/<pid>/task/*/schedstat, nanoseconds) in consecutive 5-second windows from the
// moment it listens. The goal: at most 2 ms of CPU per second in every window after the first.
// Knobs: WINDOWS (default 12), DAEMON_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" or
// "--trace-gc" to see what wakes up), DAEMON_ARGS (serve flags), ECHO=1 (the daemon's output, with the bench's clock), RUNS (default 1).
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { launchChromium } from '../src/monitor/launch.js'
import { fmt, median } from './common.js'
import { root, shebangFlags } from './watchers.js'

const WINDOWS = Number(process.env.WINDOWS ?? 12)
const RUNS = Number(process.env.RUNS ?? 1)
const WINDOW_MS = 5000

/** CPU nanoseconds of every thread of pid (schedstat's first field: time on a CPU). */
function cpuNs(pid: number): number {
  let sum = 0
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      /* the thread ended meanwhile */
    }
  }
  return sum
}

async function run(): Promise<number[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bt-idle-'))
  const browser = await launchChromium({ startUrl: 'about:blank' })
  const extra = (process.env.DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean)
  const child = spawn(
    process.execPath,
    [
      ...shebangFlags(root),
      ...extra,
      join(root, 'dist/src/cli.js'),
      'serve',
      '--cdp-url',
      browser.wsUrl,
      '--data-dir',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      '--proxy-listen',
      'off',
      '--token',
      'idle',
      ...(process.env.DAEMON_ARGS ?? '').split(' ').filter(Boolean),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, MALLOC_ARENA_MAX: '2' } },
  )
  try {
    await new Promise<void>((resolve, reject) => {
      let buf = ''
      child.stdout!.on('data', (d: Buffer) => {
        if (process.env.ECHO) process.stdout.write(`[${(performance.now() / 1000).toFixed(1)}] ${String(d)}`)
        buf += d
        if (buf.includes('browser-telemetry listening')) resolve()
      })
      child.once('exit', code => reject(new Error(`daemon exited ${code}`)))
    })
    const windows: number[] = []
    let last = cpuNs(child.pid!)
    let at = performance.now()
    if (process.env.ECHO) console.log(`[${(at / 1000).toFixed(1)}] listening`)
    for (let w = 0; w < WINDOWS; w++) {
      await new Promise(r => setTimeout(r, WINDOW_MS))
      const now = performance.now()
      const ns = cpuNs(child.pid!)
      windows.push((ns - last) / 1e6 / ((now - at) / 1000)) // ms of CPU per second
      last = ns
      at = now
    }
    return windows
  } finally {
    const exited = new Promise(r => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
    await browser.close()
    await rm(dataDir, { recursive: true, force: true })
  }
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
console.log(`idle daemon: CPU ms per second in ${WINDOW_MS / 1000} s windows from the moment it listens`)
const after: number[] = []
for (let r = 0; r < RUNS; r++) {
  const before = load()
  const w = await run()
  after.push(...w.slice(1))
  console.log(
    `run ${r + 1} (load ${before}): ${w.map(x => fmt(x, 1)).join(', ')}; after the first window: max ${fmt(Math.max(...w.slice(1)), 1)}, median ${fmt(median(w.slice(1)), 1)} (goal: every window <= 2)`,
  )
}
if (RUNS > 1)
  console.log(`all runs, after the first window: max ${fmt(Math.max(...after), 1)}, median ${fmt(median(after), 1)}`)
