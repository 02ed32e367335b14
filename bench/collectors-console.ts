// Benchmark: a page calls console.log 50,000 times. Events captured end to end by the daemon
// path (Monitor + console collector + Pipeline + EventLog in a child process running the compiled
// daemon code with its runtime settings; committed, then read back from the log) vs events received by
// a bare chrome-remote-interface client attached to the same page in the same run. Prints % captured,
// the rate ratio daemon/bare (goal >= 0.9) and the daemon process's peak RSS (goal <= 150 MB), with the
// same child's RSS after attaching and before any burst as its baseline. The pipeline has the daemon's
// default load shedding, which must keep the whole burst.
// Knobs: N (events per burst), RUNS, DAEMON_NODE_FLAGS (extra node flags of the daemon child, e.g.
// "--max-old-space-size=96" to trade a little rate for a lower RSS).
import CDP from 'chrome-remote-interface'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { launchChromium } from '../src/monitor/launch.js'
import { median, fmt, withTempDir } from './common.js'

const N = Number(process.env.N ?? 50_000)
const RUNS = Number(process.env.RUNS ?? 5)
const root = join(import.meta.dirname, '..')
const dist = (p: string) => JSON.stringify(pathToFileURL(join(root, 'dist', p)).href)

// The daemon side. Counts its committed events (EventLog.onCommit) and reads them back on request.
const DAEMON = `
import { EventLog } from ${dist('src/store/event-log.js')}
import { Pipeline } from ${dist('src/pipeline/pipeline.js')}
import { Monitor } from ${dist('src/monitor/index.js')}
import { createConsoleCollector } from ${dist('collectors/console.js')}
const [wsUrl, dir, n] = process.argv.slice(-3)
const N = Number(n)
const log = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
const pipeline = new Pipeline({ log }) // the default load shedding: it must keep the whole burst
const monitor = new Monitor({
  cdpUrl: wsUrl,
  emit: pipeline.emit,
  collectors: [createConsoleCollector()],
  emitUnbuilt: pipeline.emit,
})
await monitor.start()
let peak = process.memoryUsage().rss
let peakMem = process.memoryUsage()
setInterval(() => { const m = process.memoryUsage(); if (m.rss > peak) { peak = m.rss; peakMem = m } }, 25).unref()
let marker = '', count = 0, doneAt = 0
log.onCommit((records) => {
  for (const r of records) if (r.category === 'console' && r.json.includes(marker)) count++
  if (count >= N && !doneAt) { doneAt = Date.now(); process.send({ kind: 'done', at: doneAt, count, peakMb: Math.max(peak, process.memoryUsage().rss) / 1048576, heapMb: peakMem.heapUsed / 1048576 }) }
})
process.on('message', async (m) => {
  if (m.kind === 'run') { marker = m.marker; count = 0; doneAt = 0; peakMem = process.memoryUsage(); peak = peakMem.rss; process.send({ kind: 'armed' }) }
  else if (m.kind === 'read') {
    await log.flush()
    let readable = 0, cursor
    for (;;) {
      const page = await log.read({ order: 'asc', limit: 5000, cursor, categories: new Set(['console']) })
      for (const r of page.records) if (r.json.includes(marker)) readable++
      if (!page.hasMore) break
      cursor = page.nextCursor
    }
    process.send({ kind: 'read', readable, committed: count, readPeakMb: peak / 1048576, shed: pipeline.stats.shed, overBudget: pipeline.stats.overBudget })
  } else if (m.kind === 'stop') { await monitor.stop(); await log.close(); process.exit(0) }
})
process.send({ kind: 'ready', rssMb: process.memoryUsage().rss / 1048576, stats: pipeline.stats })
`

// The child's messages; each kind carries some of these figures.
interface ChildMessage {
  kind: string
  at: number
  count: number
  peakMb: number
  heapMb: number
  rssMb: number
  readable: number
  committed: number
  readPeakMb: number
  shed: number
  overBudget: number
}

function next(child: ChildProcess, kind: string, timeoutMs = 180_000): Promise<ChildMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', on)
      reject(new Error(`daemon child: no '${kind}' in ${timeoutMs} ms`))
    }, timeoutMs)
    const on = (m: ChildMessage) => {
      if (m.kind === kind) {
        clearTimeout(timer)
        child.off('message', on)
        resolve(m)
      }
    }
    child.on('message', on)
  })
}

try {
  execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
} catch {
  console.log('(tsc reported errors elsewhere in the tree; using what it emitted into dist/)')
}

await withTempDir(async dir => {
  const browser = await launchChromium()
  // The daemon's runtime settings (as in the systemd unit): small young generation, few malloc arenas.
  const extraFlags = (process.env.DAEMON_NODE_FLAGS ?? '').split(' ').filter(Boolean)
  // A fresh daemon child per run: RSS is a high-water mark, and reading 50,000 events back (the
  // completeness check after each run) would otherwise raise the next run's starting point.
  const startDaemon = async (run: number) => {
    const child = spawn(
      process.execPath,
      [
        '--max-semi-space-size=2',
        ...extraFlags,
        '--input-type=module',
        '-e',
        DAEMON,
        browser.wsUrl,
        join(dir, `log-${run}`),
        String(N),
      ],
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, MALLOC_ARENA_MAX: '2' },
      },
    )
    return { child, ready: await next(child, 'ready', 30_000) }
  }
  const idleRss: number[] = []
  const pageTarget = (await CDP.List({ port: browser.port })).find((x: { type: string }) => x.type === 'page')!
  const bare = await CDP({ port: browser.port, target: pageTarget.id })
  await bare.Runtime.enable()

  const captured: number[] = [],
    ratios: number[] = [],
    bareRates: number[] = [],
    daemonRates: number[] = [],
    peaks: number[] = []
  for (let run = 1; run <= RUNS; run++) {
    const { child, ready } = await startDaemon(run)
    idleRss.push(ready.rssMb)
    const text = `bench-${run}`
    child.send({ kind: 'run', marker: `"text":"${text}"` })
    await next(child, 'armed')
    let bareCount = 0,
      bareDone = 0
    const onBare = (p: { args: { value?: unknown }[] }) => {
      if (p.args[0]?.value === text && ++bareCount === N) bareDone = Date.now()
    }
    const offBare = bare.Runtime.consoleAPICalled(onBare)
    const daemonDone = next(child, 'done')
    const t0 = Date.now()
    await bare.Runtime.evaluate({ expression: `for (let i = 0; i < ${N}; i++) console.log('${text}', i, {i})` })
    const done = await daemonDone
    while (bareCount < N) await new Promise(r => setTimeout(r, 10))
    offBare()
    child.send({ kind: 'read' })
    const read = await next(child, 'read')
    const bareMs = bareDone - t0,
      daemonMs = done.at - t0
    captured.push((read.readable / bareCount) * 100)
    bareRates.push(bareCount / (bareMs / 1000))
    daemonRates.push(read.committed / (daemonMs / 1000))
    ratios.push(bareMs / daemonMs)
    peaks.push(done.peakMb)
    console.log(
      `run ${run}: bare ${bareCount} in ${bareMs} ms, daemon committed ${read.committed} in ${daemonMs} ms, readable ${read.readable}, shed ${read.shed}, over a cap ${read.overBudget}; daemon peak RSS while capturing ${fmt(done.peakMb, 1)} MB (JS heap in use then ${fmt(done.heapMb, 0)} MB), while reading the log back ${fmt(read.readPeakMb, 1)} MB`,
    )
    child.send({ kind: 'stop' })
    await new Promise(r => child.once('exit', r))
  }
  console.log(
    `captured end to end (readable / bare): median ${fmt(median(captured), 2)}% (min ${fmt(Math.min(...captured), 2)}%)`,
  )
  console.log(
    `rate: bare ${fmt(median(bareRates), 0)} ev/s, daemon ${fmt(median(daemonRates), 0)} ev/s; ratio daemon/bare median ${fmt(median(ratios), 3)} (goal ` +
      `>= 0.9)`,
  )
  console.log(
    `daemon process RSS while capturing: peak median ${fmt(median(peaks), 1)} MB, max ${fmt(Math.max(...peaks), 1)} MB (goal <= 150 MB); attached and ` +
      `idle ${fmt(median(idleRss), 1)} MB`,
  )
  await bare.close()
  await browser.close()
})
