// CDP proxy overhead: 10,000 Runtime.evaluate round trips through the proxy vs straight to the
// browser, in the same run, against one headless Chromium. The proxy runs in its own process (as in
// the daemon: the client is another program), so client and proxy do not share an event loop.
// Two modes: sequential (one command in flight: latency-bound) and pipelined (100 in flight:
// throughput-bound). Prints the median of 7 runs per side and the ratio proxy/direct; also checks
// that every proxied connection's cdp_disconnect.message_count is exactly 20,000. The proxy records
// every command as the daemon does (a cdp_command through the real pipeline into a LevelDB log in
// a temp dir; COMMANDS=off drops them at the category gate instead) and the proxy process's CPU per
// relayed command is printed. STEPS=open keeps three nested agent steps open over the whole run
// (every recorded command carries the innermost one), to compare with a run without.
//
//   npx tsx bench/proxy-roundtrip.ts            COMMANDS=off npx tsx bench/proxy-roundtrip.ts
//   STEPS=open npx tsx bench/proxy-roundtrip.ts
//   PROXY_CPU_PROF=/tmp/prof npx tsx bench/proxy-roundtrip.ts   (a CPU profile of the proxy process)
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { WebSocket } from 'ws'
import { launchChromium } from '../src/monitor/launch.js'
import { CdpProxy } from '../src/proxy/cdp-proxy.js'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Pipeline, type EventInput } from '../src/pipeline/pipeline.js'
import { EventLog } from '../src/store/event-log.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { StepRegistry } from '../src/agent/step-registry.js'

const ROUND_TRIPS = 10_000
const RUNS = 7
const WINDOW = 100

const COMMANDS = process.env.COMMANDS !== 'off'
const STEPS_OPEN = process.env.STEPS === 'open'

type FromChild =
  | { port: number }
  | { disconnect: { message_count: number; reason: string } }
  | { cpuUs: number; commands: number; dropped: number }

if (process.argv[2] === '--serve') {
  // Child: the proxy, its events through a real pipeline into a log, cdp_disconnect also to the parent.
  const browserWsUrl = process.argv[3]!
  const dir = await mkdtemp(join(tmpdir(), 'bt-bench-proxy-'))
  const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0 })
  const pipeline = new Pipeline({
    log,
    categories: COMMANDS ? CONFIGURABLE_CATEGORIES : CONFIGURABLE_CATEGORIES.filter(c => c !== 'control'),
  })
  let commands = 0
  let dropped = 0
  const steps = STEPS_OPEN ? new StepRegistry({ emit: pipeline.emit }) : undefined
  let parentStepId: string | undefined
  for (const name of ['session', 'task', 'action']) parentStepId = steps?.start('http', { name, parentStepId }).stepId
  const proxy = new CdpProxy({
    steps,
    listen: { host: '127.0.0.1', port: 0 },
    upstream: () => browserWsUrl,
    emit: (e: EventInput) => {
      if (e.type === 'cdp_disconnect') process.send!({ disconnect: e.data } satisfies FromChild)
      const r = pipeline.emit(e)
      if (e.type === 'cdp_command') {
        if (r.accepted !== undefined) commands++
        else dropped++
      }
      return r
    },
  })
  const { port } = await proxy.start()
  process.send!({ port } satisfies FromChild)
  process.on('message', (m: string) => {
    if (m === 'cpu') {
      const u = process.cpuUsage()
      process.send!({ cpuUs: u.user + u.system, commands, dropped } satisfies FromChild)
      return
    }
    void proxy
      .close()
      .then(() => log.close())
      .then(() => rm(dir, { recursive: true, force: true }))
      .then(() => process.exit(0))
  })
} else {
  await main()
}

async function main(): Promise<void> {
  const browser = await launchChromium()
  let child: ChildProcess | undefined
  try {
    const list = (await (await fetch(`${browser.httpUrl}/json/list`)).json()) as {
      type: string
      id: string
      webSocketDebuggerUrl: string
    }[]
    const page = list.find(x => x.type === 'page')!
    // PROXY_CPU_PROF=<dir>: a CPU profile of the proxy process there (where its time goes).
    const prof = process.env.PROXY_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROXY_CPU_PROF}`] : []
    child = fork(fileURLToPath(import.meta.url), ['--serve', browser.wsUrl], {
      execArgv: [...process.execArgv, ...prof],
    })
    const disconnects: { message_count: number; reason: string }[] = []
    let cpuWaiter: ((m: { cpuUs: number; commands: number; dropped: number }) => void) | undefined
    const port = await new Promise<number>(resolve => {
      child!.on('message', (m: FromChild) => {
        if ('port' in m) resolve(m.port)
        else if ('cpuUs' in m) cpuWaiter?.(m)
        else disconnects.push(m.disconnect)
      })
    })
    const childCpu = () =>
      new Promise<{ cpuUs: number; commands: number; dropped: number }>(resolve => {
        cpuWaiter = resolve
        child!.send('cpu')
      })
    const direct = page.webSocketDebuggerUrl
    const proxied = `ws://127.0.0.1:${port}/devtools/page/${page.id}`

    // Warm-up (JIT, Chromium's first evaluations) on both paths.
    await timed(direct, 1, 2000)
    await timed(proxied, 1, 2000)
    await waitUntil(() => disconnects.length === 1)
    disconnects.length = 0

    console.log(
      `CDP proxy round trips: ${ROUND_TRIPS} Runtime.evaluate per run, median of ${RUNS} runs, Chromium ${((await (await fetch(`${browser.httpUrl}/json/version`)).json()) as { Browser: string }).Browser}`,
    )
    let allOk = true
    for (const [mode, window] of [
      ['sequential', 1],
      ['pipelined', WINDOW],
    ] as const) {
      const d: number[] = []
      const p: number[] = []
      const cpuPerCommand: number[] = []
      for (let i = 0; i < RUNS; i++) {
        // Alternate so drift (thermal, other load) hits both sides alike.
        d.push(await timed(direct, window, ROUND_TRIPS))
        const before = await childCpu()
        p.push(await timed(proxied, window, ROUND_TRIPS))
        const after = await childCpu()
        cpuPerCommand.push((after.cpuUs - before.cpuUs) / ROUND_TRIPS)
      }
      const md = median(d)
      const mp = median(p)
      const recorded = await childCpu()
      console.log(
        `${mode.padEnd(10)} proxy CPU per relayed command ${median(cpuPerCommand).toFixed(1)} µs (median of ${RUNS} runs); ` +
          `cdp_command events stored so far ${recorded.commands}, dropped ${recorded.dropped}` +
          `${COMMANDS ? '' : ' (COMMANDS=off: control category off)'}`,
      )
      const ratio = md / mp // throughput ratio = time direct / time proxied
      console.log(
        `${mode.padEnd(10)} (window ${String(window).padStart(3)}): direct ${fmt(md)} (${rate(md)}/s)  proxy ${fmt(mp)} (${rate(mp)}/s)  proxy/direct ` +
          `throughput ${ratio.toFixed(3)}  ${ratio >= 0.8 ? 'OK (>= 0.8)' : 'BELOW GOAL 0.8'}`,
      )
      if (ratio < 0.8) allOk = false
    }
    await waitUntil(() => disconnects.length === 2 * RUNS)
    const counts = disconnects.map(x => x.message_count)
    const exact = counts.every(c => c === 2 * ROUND_TRIPS) && disconnects.every(x => x.reason === 'client_close')
    console.log(
      `message_count per proxied connection: ${[...new Set(counts)].join(', ')} (expected exactly ${2 * ROUND_TRIPS}, reason client_close): ` +
        `${exact ? 'OK' : 'MISMATCH'}`,
    )
    if (!exact) allOk = false
    process.exitCode = allOk ? 0 : 1
  } finally {
    child?.send('close')
    await browser.close()
  }
}

/** Opens a connection, runs n Runtime.evaluate with `window` in flight, closes; resolves with ms taken. */
async function timed(url: string, window: number, n: number): Promise<number> {
  const ws = new WebSocket(url, { perMessageDeflate: false })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  const payload = (id: number) =>
    `{"id":${id},"method":"Runtime.evaluate","params":{"expression":"1+1","returnByValue":true}}`
  const start = performance.now()
  await new Promise<void>((resolve, reject) => {
    let sent = 0
    let received = 0
    ws.on('message', (data: Buffer) => {
      // Cheap id check without parsing the whole answer on the hot path.
      if (data.indexOf('"id":') < 0) return
      received++
      if (received === n) resolve()
      else if (sent < n) ws.send(payload(++sent))
    })
    ws.once('close', () => {
      if (received < n) reject(new Error(`closed after ${received} answers`))
    })
    for (; sent < Math.min(window, n);) ws.send(payload(++sent))
  })
  const ms = performance.now() - start
  ws.close()
  await new Promise(r => ws.once('close', r))
  return ms
}

// (function declarations: main() runs from the top-level await above, before any const here exists)
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}
function fmt(ms: number): string {
  return `${ms.toFixed(0)} ms`
}
function rate(ms: number): string {
  return Math.round(ROUND_TRIPS / (ms / 1000)).toLocaleString('en-US')
}

async function waitUntil(pred: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!pred()) {
    if (Date.now() > end) throw new Error('timed out waiting for the proxy to report its connections')
    await new Promise(r => setTimeout(r, 10))
  }
}
