// What the watcher benchmarks share (overhead.ts against a real Chromium, replay.ts against a recorded one):
// the heavy local site, a minimal flattened CDP driver, the bare observer and the daemon as child
// processes, and their CPU read from /proc (every thread).
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import WebSocket from 'ws'
import { heavyHandler } from '../test/helpers/heavy-page.js'
import { reservedPort } from '../test/helpers/ports.js'
import { TIMELINE_EVENT_TYPES } from '../src/monitor/capture-plan.js'

export const root = join(import.meta.dirname, '..')
const TOKEN = 'bt_overhead_bench_token'
const CLK_TCK = 100 // Linux USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s
export const ALL_BUT_SCREENSHOT = 'console,network,page,interaction,control,connection,system,captcha'

// ---------- the heavy page ----------
export async function startSite(): Promise<{ server: Server; url: (n: string) => string }> {
  const server = createServer(heavyHandler)
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return { server, url: n => `http://127.0.0.1:${port}/heavy.html?n=${n}` }
}

// ---------- a minimal flattened CDP client (the driver) ----------
export class Cdp {
  private id = 0
  private pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  private waiters: { method: string; sessionId?: string; resolve: (p: any) => void }[] = []
  private constructor(private ws: WebSocket) {
    ws.on('message', d => {
      const m = JSON.parse(String(d))
      if (m.id !== undefined) {
        const p = this.pending.get(m.id)
        this.pending.delete(m.id)
        if (m.error) p?.reject(new Error(`${m.error.message}`))
        else p?.resolve(m.result)
      } else {
        const i = this.waiters.findIndex(w => w.method === m.method && w.sessionId === m.sessionId)
        if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m.params)
      }
    })
  }
  static async connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 })
    await new Promise((r, j) => {
      ws.once('open', r)
      ws.once('error', j)
    })
    return new Cdp(ws)
  }
  send(method: string, params: object = {}, sessionId?: string): Promise<any> {
    const id = ++this.id
    this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }))
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }))
  }
  once(method: string, sessionId?: string): Promise<any> {
    return new Promise(resolve => this.waiters.push({ method, sessionId, resolve }))
  }
  close(): void {
    this.ws.close()
  }
}

/** One load in a fresh tab: the tab is created and attached first (watchers set it up meanwhile), then navigate -> load is timed. */
export async function loadOnce(cdp: Cdp, url: string): Promise<number> {
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' })
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true })
  // Answers only once every watcher has resumed the paused target.
  await cdp.send('Runtime.evaluate', { expression: '1' }, sessionId)
  await cdp.send('Page.enable', {}, sessionId)
  const loaded = cdp.once('Page.loadEventFired', sessionId)
  const t0 = performance.now()
  await cdp.send('Page.navigate', { url }, sessionId)
  await loaded
  const ms = performance.now() - t0
  await cdp.send('Target.closeTarget', { targetId })
  return ms
}

// ---------- watchers ----------
const BARE_OBSERVER = `
import WebSocket from 'ws'
const [url, domainList, mode] = process.argv.slice(-3)
const domains = domainList.split(',')
// The same-traffic observer also asks for the bodies the daemon asks for: its own MIME rule, compiled.
const { isTextMime } = mode === 'bodies' ? await import(process.cwd() + '/dist/collectors/network-body.js') : { isTextMime: () => false }
const textResponses = new Set()
const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 })
let id = 0
const send = (method, params = {}, sessionId) => ws.send(JSON.stringify({ id: ++id, method, params, ...(sessionId ? { sessionId } : {}) }))
ws.on('message', (d) => {
  const m = JSON.parse(String(d)) // every message is parsed, as any CDP client must
  if (m.method === 'Network.responseReceived' && isTextMime(m.params.response.mimeType))
    textResponses.add(m.sessionId + ' ' + m.params.requestId)
  if (m.method === 'Network.loadingFinished' && textResponses.delete(m.sessionId + ' ' + m.params.requestId))
    send('Network.getResponseBody', { requestId: m.params.requestId }, m.sessionId) // the answer is dropped
  if (m.method !== 'Target.attachedToTarget') return
  const s = m.params.sessionId, type = m.params.targetInfo.type
  send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, s)
  for (const dom of domains) {
    if (dom === 'Page' && type !== 'page' && type !== 'iframe') continue
    send(dom + '.enable', dom === 'PerformanceTimeline' ? { eventTypes: ${JSON.stringify(TIMELINE_EVENT_TYPES)} } : {}, s)
  }
  send('Runtime.runIfWaitingForDebugger', {}, s)
})
ws.once('open', () => {
  send('Target.setDiscoverTargets', { discover: true })
  send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true })
  process.send('ready')
})
`
export interface Watcher {
  pid: number
  stop(): Promise<void>
  storedEvents(): Promise<number>
  /** The daemon's API base URL and bearer token (daemon watchers only). */
  api?: { url: string; token: string }
}

export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK // utime + stime
}
/**
 * CPU ms of a process and every descendant, reaped children included: utime + stime + cutime +
 * cstime of each live process in the tree (a child that exited and was waited for is in its
 * parent's cutime/cstime; Chromium's zygote reaps its renderers). What Chromium costs the VM.
 */
export function treeCpuMs(rootPid: number): number {
  const parent = new Map<number, number>()
  const ticks = new Map<number, number>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue // gone meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    parent.set(Number(name), Number(f[1]))
    ticks.set(Number(name), Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]))
  }
  let total = 0
  for (const [pid, t] of ticks) {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parent.get(p))
      if (p === rootPid) {
        total += t
        break
      }
  }
  return (total * 1000) / CLK_TCK
}
/** Peak resident set of pid in MB (VmHWM, /proc/<pid>/status). */
export const peakRssMb = (pid: number): number =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
/** CPU ms per thread name (/proc/<pid>/task/<tid>/comm; same-named threads summed), user and system apart, for THREADS=1. */
export function cpuByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const name =
        tid === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim().replace(/\d+$/, '')
      out.set(`${name} usr`, (out.get(`${name} usr`) ?? 0) + (Number(f[11]) * 1000) / CLK_TCK)
      out.set(`${name} sys`, (out.get(`${name} sys`) ?? 0) + (Number(f[12]) * 1000) / CLK_TCK)
    } catch {
      /* thread ended */
    }
  }
  return out
}
/** CPU ms of every live thread of pid, at nanosecond resolution (/proc/<pid>/task/<tid>/schedstat); for idle rates. */
export function threadsCpuMs(pid: number): number {
  let ns = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      /* thread ended */
    }
  }
  return ns / 1e6
}
export function exitOf(child: ChildProcess): Promise<void> {
  return new Promise(r => {
    if (child.exitCode !== null || child.signalCode) r()
    else child.once('exit', () => r())
  })
}

/**
 * A bare observer: auto-attach, enable `domains`, nothing kept. `bodies`: also Network.getResponseBody
 * for every response the daemon would fetch the body of (its MIME rule, from dist/), answers dropped.
 */
export async function startBare(wsUrl: string, domains: string, bodies = false): Promise<Watcher> {
  const mode = bodies ? 'bodies' : 'plain'
  const child = spawn(process.execPath, ['--input-type=module', '-e', BARE_OBSERVER, wsUrl, domains, mode], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    cwd: root,
  })
  await new Promise<void>((r, j) => {
    child.once('message', () => r())
    child.once('exit', c => j(new Error(`observer exited ${c}`)))
  })
  return {
    pid: child.pid!,
    storedEvents: async () => 0,
    stop: async () => {
      child.kill('SIGTERM')
      await exitOf(child)
    },
  }
}

/** `#!/usr/bin/env -S node <flags>` of src/cli.ts -> the flags. */
export function shebangFlags(checkout: string): string[] {
  const first = readFileSync(join(checkout, 'src/cli.ts'), 'utf8').split('\n', 1)[0]!
  const m = /^#!\/usr\/bin\/env -S node(.*)$/.exec(first)
  if (!m) throw new Error(`unexpected shebang in ${checkout}/src/cli.ts: ${first}`)
  return m[1]!.trim().split(/\s+/).filter(Boolean)
}

/**
 * The compiled daemon of `checkout` as a child process, ready once its monitor is collecting. `nice`:
 * run it at that niceness from exec on, every thread (as systemd's `Nice=` does; below 0 needs root).
 */
export async function startDaemon(
  dataDir: string,
  cdpUrl: string | undefined,
  categories: string,
  checkout = root,
  extraNodeArgs = process.env.DAEMON_NODE_ARGS,
  nice?: number,
  /** More `serve` flags (e.g. --recording). */
  extraArgs: string[] = [],
): Promise<Watcher> {
  // Outside the ephemeral range (a port from listen(0), released, could be taken meanwhile); the
  // daemon logs at warn, so it could not tell a port it picked itself.
  const port = await reservedPort()
  const base = `http://127.0.0.1:${port}`
  const nodeArgs = extraNodeArgs?.split(' ').filter(Boolean) ?? []
  // The node flags of that checkout's `browser-telemetry` shebang (how the daemon is run) first, so a knob can override them.
  const args = [
    ...shebangFlags(checkout),
    ...nodeArgs,
    join(checkout, 'dist/src/cli.js'),
    'serve',
    '--listen',
    `127.0.0.1:${port}`,
    '--data-dir',
    dataDir,
    '--token',
    TOKEN,
    '--proxy-listen',
    'off',
    '--categories',
    categories,
    '--log-level',
    'warn',
    ...(cdpUrl ? ['--cdp-url', cdpUrl] : ['--no-browser']),
    ...extraArgs,
  ]
  const [command, argv] =
    nice === undefined ? [process.execPath, args] : ['nice', ['-n', String(nice), process.execPath, ...args]]
  const child = spawn(command, argv, {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, MALLOC_ARENA_MAX: '2' },
  })
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode}`)
    try {
      const h = (await (await fetch(`${base}/healthz`)).json()) as { monitor?: { state?: string } }
      if (!cdpUrl || h.monitor?.state === 'collecting') break
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error('daemon did not become ready in 30 s')
    await new Promise(r => setTimeout(r, 50))
  }
  return {
    pid: child.pid!,
    api: { url: base, token: TOKEN },
    storedEvents: async () => {
      const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
      let n = 0
      for (const line of text.split('\n'))
        if (line.startsWith('browser_telemetry_events_stored_total{'))
          n += Number(line.slice(line.lastIndexOf(' ') + 1))
      return n
    },
    stop: async () => {
      child.kill('SIGTERM')
      await exitOf(child)
    },
  }
}
