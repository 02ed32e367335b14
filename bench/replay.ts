// Benchmark: the daemon's own CPU per heavy-page load, without the browser's noise. First a
// real headless Chromium loads the heavy local page (watchers.ts) a few times in fresh tabs while a
// recorder attached like the daemon (auto-attach paused, the capture plan's domains for all categories
// but screenshot) keeps every CDP message it receives, with its arrival time. Then a stand-in browser
// (a WebSocket server in this process) plays those loads back, with the recorded timing, to one
// watcher at a time, interleaved round by round:
//   bare      the bare observer (overhead.ts's): auto-attach, enable the domains, parse every message
//   daemon    the compiled daemon (`node dist/src/cli.js serve`), all categories but screenshot
//   baseline  another built checkout's daemon (BASELINE_ROOT) or this one under other node flags
//             (BASELINE_NODE_ARGS)
// Commands are answered at once (a getResponseBody with a ~600-byte JSON body), and a paused target's
// messages are played only once the watcher resumed it, as Chromium does. With no browser competing
// for the 2 cores, the watcher's CPU per load (/proc, every thread, nanoseconds) is the daemon's own
// work: on a quiet machine rounds agree within a few ms (a same-build pair: 36.1 vs 35.0 ms); when
// the shared host is busy they spread by ±10 ms, for every block alike, so compare blocks of the same
// run and repeat. What it cannot show is the page-load time (overhead.ts measures that against the
// real browser).
// Prints per block: median CPU ms per load over the rounds, the ratio to the observer's, events stored
// per load and CPU µs per stored event.
// Knobs: RECORD_LOADS (distinct loads recorded, default 4), ROUNDS (default 5), LOADS (replayed loads per
// block per round, default 8), WARM_LOADS (unmeasured loads per watcher before the first round, default 30: with 10 the first rounds
// still ran a few ms dearer, the JIT settling), SKIP_BUILD=1,
// BASELINE_ROOT, BASELINE_NODE_ARGS, DAEMON_NODE_ARGS (as in overhead.ts), THREADS=1 (also the mean CPU per load by thread).
import { execFileSync } from 'node:child_process'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import WebSocket, { WebSocketServer } from 'ws'
import { launchChromium } from '../src/monitor/launch.js'
import { capturePlan, TIMELINE_EVENT_TYPES } from '../src/monitor/capture-plan.js'
import { CAPTURE_NEEDS } from '../collectors/index.js'
import { fmt, median, withTempDir } from './common.js'
import {
  ALL_BUT_SCREENSHOT,
  Cdp,
  cpuByThread,
  loadOnce,
  root,
  startBare,
  startDaemon,
  startSite,
  threadsCpuMs,
  type Watcher,
} from './watchers.js'

const RECORD_LOADS = Number(process.env.RECORD_LOADS ?? 4)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const LOADS = Number(process.env.LOADS ?? 8)
const WARM_LOADS = Number(process.env.WARM_LOADS ?? 30)
/** Quiet time after the last message of a block's loads, inside its CPU window: settle timers, the last group commit. */
const TAIL_MS = 1200

/** One recorded load: every message the recorder received, ms after the load began. */
type Recording = { t: number; data: string }[]

const PLAN_DOMAINS = capturePlan(ALL_BUT_SCREENSHOT.split(','), CAPTURE_NEEDS).byTarget('page').domains

// ---------- record ----------
async function record(): Promise<Recording[]> {
  const site = await startSite()
  const browser = await launchChromium()
  const loads: Recording[] = []
  try {
    const recorder = new WebSocket(browser.wsUrl, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 })
    await new Promise((r, j) => {
      recorder.once('open', r)
      recorder.once('error', j)
    })
    let id = 0
    const send = (method: string, params: object = {}, sessionId?: string) =>
      recorder.send(JSON.stringify({ id: --id, method, params, ...(sessionId ? { sessionId } : {}) }))
    let current: Recording | undefined
    let t0 = 0
    recorder.on('message', (d: Buffer) => {
      const data = d.toString()
      const m = JSON.parse(data) as {
        id?: number
        method?: string
        sessionId?: string
        params?: { sessionId: string; targetInfo: { type: string } }
      }
      if (m.id !== undefined) return // our own commands' answers: the stand-in answers the watcher's
      current?.push({ t: performance.now() - t0, data })
      if (m.method !== 'Target.attachedToTarget') return
      // Set up as the daemon's capture plan does, then resume the paused target.
      const s = m.params!.sessionId,
        type = m.params!.targetInfo.type
      send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, s)
      for (const dom of PLAN_DOMAINS) {
        if ((dom === 'Page' || dom === 'PerformanceTimeline') && type !== 'page' && type !== 'iframe') continue
        send(`${dom}.enable`, dom === 'PerformanceTimeline' ? { eventTypes: TIMELINE_EVENT_TYPES } : {}, s)
      }
      send('Runtime.runIfWaitingForDebugger', {}, s)
    })
    send('Target.setDiscoverTargets', { discover: true })
    send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true })
    const driver = await Cdp.connect(browser.wsUrl)
    for (let i = 0; i < 2; i++) await loadOnce(driver, site.url(`warm${i}`))
    for (let i = 0; i < RECORD_LOADS; i++) {
      current = []
      t0 = performance.now()
      await loadOnce(driver, site.url(`rec${i}`))
      await new Promise(r => setTimeout(r, 300)) // the closed tab's detach and late events
      loads.push(current)
      current = undefined
    }
    driver.close()
    recorder.close()
  } finally {
    await browser.close()
    site.server.close()
  }
  return loads
}

// ---------- the stand-in browser ----------
const BODY = JSON.stringify({
  path: '/data/0.json',
  items: Array.from({ length: 20 }, (_, i) => ({ i, name: `item ${i}` })),
})

/** One watcher's connection to the stand-in: what it resumed, which target each session is. */
class Peer {
  readonly resumed = new Set<string>()
  readonly resumeWaiters = new Map<string, () => void>()
  readonly targets = new Map<string, { targetId: string; url: string }>()
  constructor(readonly ws: WebSocket) {}
}

class StandIn {
  private arrivals: Peer[] = []
  private arrived: (() => void) | undefined
  readonly url: string

  private constructor(
    private readonly http: ReturnType<typeof createServer>,
    port: number,
  ) {
    this.url = `ws://127.0.0.1:${port}/devtools/browser/replay`
    const wss = new WebSocketServer({ server: http, perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 })
    wss.on('connection', ws => {
      const peer = new Peer(ws)
      ws.on('message', (d: Buffer) => this.answer(peer, JSON.parse(d.toString())))
      this.arrivals.push(peer)
      this.arrived?.()
    })
  }

  static async start(): Promise<StandIn> {
    const http = createServer((_req: IncomingMessage, res: ServerResponse) => {
      // The daemon asks /json/version for the browser's WebSocket URL first.
      res.setHeader('content-type', 'application/json')
      res.end(
        JSON.stringify({
          Browser: 'HeadlessChrome/replay',
          'Protocol-Version': '1.3',
          webSocketDebuggerUrl: standIn.url,
        }),
      )
    })
    await new Promise<void>(r => http.listen(0, '127.0.0.1', r))
    const standIn = new StandIn(http, (http.address() as AddressInfo).port)
    return standIn
  }

  /** The next watcher that connects. */
  async nextPeer(): Promise<Peer> {
    while (this.arrivals.length === 0)
      await new Promise<void>(r => {
        this.arrived = r
      })
    return this.arrivals.shift()!
  }

  private answer(
    peer: Peer,
    m: { id: number; method: string; params?: Record<string, unknown>; sessionId?: string },
  ): void {
    const target = m.sessionId ? peer.targets.get(m.sessionId) : undefined
    let result: unknown = {}
    switch (m.method) {
      case 'Target.getTargets':
        result = { targetInfos: [] }
        break
      case 'Page.getFrameTree':
        result = {
          frameTree: {
            frame: {
              id: target?.targetId ?? 'F',
              loaderId: 'L',
              url: target?.url ?? 'about:blank',
              domainAndRegistry: '',
              securityOrigin: 'http://127.0.0.1',
              mimeType: 'text/html',
              secureContextType: 'InsecureScheme',
              crossOriginIsolatedContextType: 'NotIsolated',
              gatedAPIFeatures: [],
            },
          },
        }
        break
      case 'Network.getResponseBody':
        result = { body: BODY, base64Encoded: false }
        break
      case 'Page.addScriptToEvaluateOnNewDocument':
        result = { identifier: '1' }
        break
      case 'Page.createIsolatedWorld':
        result = { executionContextId: 1000 }
        break
      case 'Runtime.evaluate':
        result = { result: { type: 'undefined' } }
        break
      case 'Browser.getVersion':
        result = {
          protocolVersion: '1.3',
          product: 'HeadlessChrome/replay',
          revision: '',
          userAgent: 'replay',
          jsVersion: '',
        }
        break
    }
    peer.ws.send(JSON.stringify({ id: m.id, result, ...(m.sessionId ? { sessionId: m.sessionId } : {}) }))
    if (m.method === 'Runtime.runIfWaitingForDebugger' && m.sessionId) {
      peer.resumed.add(m.sessionId)
      peer.resumeWaiters.get(m.sessionId)?.()
    }
  }

  /** Plays one load to a watcher with its recorded timing; a paused target's messages wait for its resume. */
  async play(peer: Peer, load: Recording): Promise<void> {
    let shift = 0
    const start = performance.now()
    for (let i = 0; i < load.length;) {
      const due = start + shift + load[i]!.t
      const wait = due - performance.now()
      if (wait > 1) await new Promise(r => setTimeout(r, wait))
      // Everything due by now goes out together, as one socket write would carry it.
      const now = performance.now()
      for (; i < load.length && start + shift + load[i]!.t <= now + 1; i++) {
        const { data } = load[i]!
        peer.ws.send(data)
        if (!data.startsWith('{"method":"Target.attachedToTarget"')) continue
        const p = (
          JSON.parse(data) as {
            params: { sessionId: string; waitingForDebugger: boolean; targetInfo: { targetId: string; url: string } }
          }
        ).params
        peer.targets.set(p.sessionId, { targetId: p.targetInfo.targetId, url: p.targetInfo.url })
        peer.resumed.delete(p.sessionId) // the same recording plays again later: a new pause each time
        if (!p.waitingForDebugger) continue
        const t = performance.now()
        await new Promise<void>(r => {
          const timer = setTimeout(r, 5000)
          peer.resumeWaiters.set(p.sessionId, () => {
            clearTimeout(timer)
            r()
          })
          if (peer.resumed.has(p.sessionId)) {
            clearTimeout(timer)
            r()
          }
        })
        peer.resumeWaiters.delete(p.sessionId)
        shift += performance.now() - t
        i++
        break // re-read the clock: the rest of the load plays after the resume
      }
    }
  }

  close(): void {
    for (const p of this.arrivals) p.ws.terminate()
    this.http.close()
  }
}

// ---------- the run ----------
if (!process.env.SKIP_BUILD) {
  try {
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
  } catch {
    console.log('(tsc reported errors; using what it emitted into dist/)')
  }
}

interface Block {
  name: string
  start: (standIn: StandIn, dataDir: string) => Promise<Watcher>
}
const BLOCKS: Block[] = [
  { name: `bare:${PLAN_DOMAINS.join('+')}`, start: s => startBare(s.url, PLAN_DOMAINS.join(',')) },
  { name: 'daemon:all-but-screenshot', start: (s, dir) => startDaemon(dir, s.url, ALL_BUT_SCREENSHOT) },
]
if (process.env.BASELINE_ROOT || process.env.BASELINE_NODE_ARGS) {
  BLOCKS.push({
    name: 'baseline:all-but-screenshot',
    start: (s, dir) =>
      startDaemon(dir, s.url, ALL_BUT_SCREENSHOT, process.env.BASELINE_ROOT ?? root, process.env.BASELINE_NODE_ARGS),
  })
}

const recordings = await record()
const perLoad = recordings.map(r => r.length)
console.log(
  `recorded ${recordings.length} loads: ${perLoad.join(', ')} messages, ` +
    `${fmt(recordings.flat().reduce((n, m) => n + m.data.length, 0) / recordings.length / 1024, 0)} KB per load`,
)

const cpu = new Map<string, number[]>(BLOCKS.map(b => [b.name, []]))
const events = new Map<string, number[]>(BLOCKS.map(b => [b.name, []]))
const THREADS = process.env.THREADS === '1'
const threads = new Map<string, Map<string, number>>(BLOCKS.map(b => [b.name, new Map()]))
await withTempDir(async tmp => {
  const standIn = await StandIn.start()
  let n = 0
  const next = () => recordings[n++ % recordings.length]!
  // Every watcher runs for the whole benchmark (a production daemon serves thousands of loads per
  // process): started and warmed up once, then measured round by round, one at a time.
  const running: { block: Block; watcher: Watcher; peer: Peer }[] = []
  for (const block of BLOCKS) {
    const watcher = await block.start(standIn, join(tmp, block.name.replace(/\W/g, '_')))
    const peer = await standIn.nextPeer()
    for (let w = 0; w < WARM_LOADS; w++) await standIn.play(peer, next())
    running.push({ block, watcher, peer })
  }
  await new Promise(r => setTimeout(r, TAIL_MS))
  for (let round = 1; round <= ROUNDS; round++) {
    const order = running.map((_, i) => running[(i + round - 1) % running.length]!)
    for (const { block, watcher, peer } of order) {
      const ev0 = await watcher.storedEvents()
      const c0 = threadsCpuMs(watcher.pid)
      const t0 = THREADS ? cpuByThread(watcher.pid) : undefined
      for (let l = 0; l < LOADS; l++) await standIn.play(peer, next())
      await new Promise(r => setTimeout(r, TAIL_MS))
      cpu.get(block.name)!.push((threadsCpuMs(watcher.pid) - c0) / LOADS)
      if (t0) {
        const sum = threads.get(block.name)!
        for (const [name, ms] of cpuByThread(watcher.pid))
          sum.set(name, (sum.get(name) ?? 0) + (ms - (t0.get(name) ?? 0)) / LOADS / ROUNDS)
      }
      events.get(block.name)!.push(((await watcher.storedEvents()) - ev0) / LOADS)
    }
    process.stdout.write(`round ${round}/${ROUNDS} done\n`)
  }
  for (const { watcher, peer } of running) {
    peer.ws.terminate()
    await watcher.stop()
  }
  standIn.close()
})

const bareName = BLOCKS[0]!.name
const bare = median(cpu.get(bareName)!)
console.log(
  `\n${'block'.padEnd(32)} ${'cpu ms/load'.padStart(11)} ${'/bare'.padStart(6)} ${'events/load'.padStart(11)} ${'µs/event'.padStart(9)}  per round`,
)
for (const b of BLOCKS) {
  const c = median(cpu.get(b.name)!)
  const ev = median(events.get(b.name)!)
  const daemon = b.name !== bareName
  console.log(
    `${b.name.padEnd(32)} ${fmt(c, 1).padStart(11)} ${(daemon ? fmt(c / bare, 2) : '').padStart(6)} ${(daemon ? fmt(ev, 1) : '').padStart(11)} ${(daemon && ev ? fmt((c * 1000) / ev, 0) : '').padStart(9)}  ${cpu
      .get(b.name)!
      .map(x => fmt(x, 1))
      .join(' ')}`,
  )
}
if (THREADS) {
  for (const b of BLOCKS)
    console.log(
      `${b.name} cpu ms/load by thread (mean): ${[...threads.get(b.name)!]
        .sort((x, y) => y[1] - x[1])
        .map(([n, ms]) => `${n} ${fmt(ms, 1)}`)
        .join(', ')}`,
    )
}
console.log(
  `(medians over ${ROUNDS} rounds of ${LOADS} replayed loads per block, each watcher warmed up by ${WARM_LOADS} unmeasured ones; cpu: the watcher ` +
    `process, every thread, including ${TAIL_MS} ms after the last load)`,
)
