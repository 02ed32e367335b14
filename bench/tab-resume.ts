// Benchmark: does a new tab wait on the daemon? A real headless Chromium, a page with a
// target=_blank link (noopener: the new tab answers nothing until resumed) and a window.open call;
// each click opens a tab whose page reports its `load` to the bench's HTTP server. Measured per
// click: click -> the new tab's load (ms), and the new tab's pause: Target.targetCreated (seen by
// the bench's own, non-pausing CDP client) -> the tab's document request reaching the server (the
// tab is paused until an attached client resumes it). Two observers, interleaved round by round:
// a bare CDP observer (auto-attach paused, Page/Runtime/Network enabled and resumed without waiting,
// as Playwright does) and the compiled daemon (--cdp-url, its runtime flags). Prints medians and
// p99s, and the daemon/observer ratio of the click -> load median (goal <= 1.05) and the daemon's
// pause p99 (goal <= 50 ms).
// Knobs: ROUNDS (default 5), CLICKS (per round and observer, default 10), FLOOD=1 (another tab logs
// 2,000 console lines every 10 ms meanwhile: does a new tab wait behind a flood's backlog?).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import CDP from 'chrome-remote-interface'
import { launchChromium } from '../src/monitor/launch.js'
import { fmt, median } from './common.js'
import { root, shebangFlags } from './watchers.js'

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const CLICKS = Number(process.env.CLICKS ?? 10)

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

// The bench's server: when each tab's document was requested and when it reported its load.
const requested = new Map<string, number>()
const loaded = new Map<string, number>()
const server = createServer((req, res) => {
  const url = new URL(req.url!, 'http://x')
  const id = url.searchParams.get('id') ?? ''
  res.setHeader('content-type', 'text/html')
  if (url.pathname === '/opener') {
    res.end(`<!doctype html><a id="blank" target="_blank">new tab</a>`)
  } else if (url.pathname === '/new') {
    requested.set(id, performance.now())
    res.end(
      `<!doctype html><title>new</title><p>new</p><script>addEventListener('load', () => fetch('/loaded?id=${id}'))</script>`,
    )
  } else if (url.pathname === '/flood') {
    res.end(
      `<!doctype html><script>let i = 0; setInterval(() => { for (let k = 0; k < 2000; k++) console.log('flood', i++) }, 10)</script>`,
    )
  } else if (url.pathname === '/loaded') {
    loaded.set(id, performance.now())
    res.end('ok')
  } else {
    res.statusCode = 404
    res.end()
  }
})
await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const browser = await launchChromium({ startUrl: 'about:blank' })
// The bench's own client: discovers targets (never pauses them), drives the opener, closes tabs.
const own = await CDP({ target: browser.wsUrl })
await own.Target.setDiscoverTargets({ discover: true })
const created = new Map<string, number>() // targetId -> performance.now() at targetCreated
own.Target.on('targetCreated', ({ targetInfo }) => {
  if (targetInfo.type === 'page') created.set(targetInfo.targetId, performance.now())
})
const { targetId: openerId } = await own.Target.createTarget({ url: `${origin}/opener` })
const opener = await CDP({ target: `ws://127.0.0.1:${browser.port}/devtools/page/${openerId}` })
// In a window of its own: a background tab's timers would be throttled.
if (process.env.FLOOD) await own.Target.createTarget({ url: `${origin}/flood`, newWindow: true })
await new Promise(r => setTimeout(r, 500))

interface Sample {
  kind: 'blank' | 'window.open'
  loadMs: number
  pauseMs: number
}

let seq = 0
async function click(kind: Sample['kind']): Promise<Sample> {
  const id = `${++seq}`
  const before = new Set(created.keys())
  const expression =
    kind === 'blank'
      ? `{ const a = document.getElementById('blank'); a.href = '/new?id=${id}'; a.click() }`
      : `window.open('/new?id=${id}'); 1`
  const t0 = performance.now()
  await opener.Runtime.evaluate({ expression, userGesture: true })
  for (let i = 0; !loaded.has(id); i++) {
    if (i > 3000) throw new Error(`tab ${id} did not load within 30 s`)
    await new Promise(r => setTimeout(r, 10))
  }
  const targetId = [...created.keys()].find(k => !before.has(k))
  const sample = {
    kind,
    loadMs: loaded.get(id)! - t0,
    pauseMs: targetId ? requested.get(id)! - created.get(targetId)! : NaN,
  }
  if (targetId) await own.Target.closeTarget({ targetId }).catch(() => undefined)
  return sample
}

/** A bare observer: pauses new targets like the daemon, enables what it reads, resumes at once. */
async function bareObserver(): Promise<() => Promise<void>> {
  const c = await CDP({ target: browser.wsUrl })
  const params = { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }
  c.on('Target.attachedToTarget', ({ sessionId, targetInfo }) => {
    const s = (m: string, p: object = {}) => c.send(m as never, p as never, sessionId).catch(() => undefined)
    if (targetInfo.type === 'page') {
      void s('Page.enable')
      void s('Runtime.enable')
      void s('Network.enable')
      void s('Target.setAutoAttach', params)
    }
    void s('Runtime.runIfWaitingForDebugger')
  })
  await c.Target.setAutoAttach(params)
  return () => c.close()
}

async function daemon(): Promise<() => Promise<void>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bt-tab-resume-'))
  const child = spawn(
    process.execPath,
    [
      ...shebangFlags(root),
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
      'bench',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, MALLOC_ARENA_MAX: '2' } },
  )
  await new Promise<void>((resolve, reject) => {
    let buf = ''
    child.stdout!.on('data', (d: Buffer) => {
      buf += d
      if (buf.includes('browser-telemetry listening')) resolve()
    })
    child.once('exit', code => reject(new Error(`daemon exited ${code}`)))
  })
  return async () => {
    const exited = new Promise(r => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
    await rm(dataDir, { recursive: true, force: true })
  }
}

const results: Record<'observer' | 'daemon', Sample[]> = { observer: [], daemon: [] }
console.log(
  `tab resume: click -> new tab load and the new tab's pause, ${ROUNDS} rounds x ${CLICKS} clicks per observer (load ${load()})`,
)
for (let r = 0; r < ROUNDS; r++) {
  for (const who of ['observer', 'daemon'] as const) {
    const stop = who === 'observer' ? await bareObserver() : await daemon()
    await new Promise(res => setTimeout(res, 300))
    for (let i = 0; i < CLICKS; i++) results[who].push(await click(i % 2 === 0 ? 'blank' : 'window.open'))
    await stop()
  }
}
for (const who of ['observer', 'daemon'] as const) {
  for (const kind of ['blank', 'window.open'] as const) {
    const xs = results[who].filter(s => s.kind === kind)
    console.log(
      `${who.padEnd(8)} ${kind.padEnd(11)} click -> load median ${fmt(median(xs.map(s => s.loadMs)), 0)} ms, p99 ${fmt(p99(xs.map(s => s.loadMs)), 0)} ms; pause median ${fmt(median(xs.map(s => s.pauseMs)), 1)} ms, p99 ${fmt(p99(xs.map(s => s.pauseMs)), 1)} ms`,
    )
  }
}
const ratio = median(results.daemon.map(s => s.loadMs)) / median(results.observer.map(s => s.loadMs))
console.log(
  `daemon / observer click -> load (median): ${fmt(ratio, 3)} (goal <= 1.05); daemon pause p99 ${fmt(p99(results.daemon.map(s => s.pauseMs)), 1)} ms (goal <= 50), observer's ${fmt(p99(results.observer.map(s => s.pauseMs)), 1)} ms; load at the end ${load()}`,
)
await opener.close()
await own.close()
await browser.close()
server.close()
