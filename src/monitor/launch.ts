// Starts a local headless Chromium with a fresh profile and finds its DevTools endpoint.
// Used by the daemon's --launch mode and by the tests (one launcher, one set of flags).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, access } from 'node:fs/promises'
import { constants } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TimeoutError, withTimeout } from '../util/with-timeout.js'

/** Flags a sandboxed root machine with no outside network needs (see DEVELOPERS.md). */
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--no-first-run', '--no-default-browser-check', '--disable-sync', '--disable-quic', '--mute-audio',
  '--disable-dev-shm-usage', '--disable-features=Translate,MediaRouter,OptimizationHints',
]

export class ChromiumNotFoundError extends Error {
  constructor(path: string) {
    super(`Chromium not found at ${path}. Install it with: apt-get install -y chromium (or pass --chromium-path, or attach with --cdp-url)`)
    this.name = 'ChromiumNotFoundError'
  }
}

/** Chromium ended before it reported its DevTools endpoint (bad flag, port in use, crash at startup). */
export class ChromiumExitedError extends Error {
  constructor(readonly pid: number | undefined, readonly code: number | null, readonly signal: NodeJS.Signals | null, stderrTail: string) {
    super(`Chromium exited (code ${code}, signal ${signal}) before DevTools was ready: ${stderrTail}`)
    this.name = 'ChromiumExitedError'
  }
}

export interface LaunchOptions {
  chromiumPath?: string
  /** 0 (default) lets Chromium pick a free port. */
  port?: number
  /** Reuse a profile directory (restarts in tests); default: a fresh temp dir removed on close. */
  userDataDir?: string
  extraArgs?: string[]
  startUrl?: string
  timeoutMs?: number
}

export interface LaunchedBrowser {
  process: ChildProcess
  pid: number
  port: number
  /** Browser-level WebSocket URL (ws://127.0.0.1:port/devtools/browser/...). */
  wsUrl: string
  httpUrl: string
  userDataDir: string
  /** Resolves with the exit code/signal when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Terminates (SIGTERM, then SIGKILL after 3 s) and removes a temp profile. */
  close(): Promise<void>
}

export async function launchChromium(opts: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const bin = opts.chromiumPath ?? '/usr/bin/chromium'
  try { await access(bin, constants.X_OK) } catch { throw new ChromiumNotFoundError(bin) }
  const ownProfile = !opts.userDataDir
  const userDataDir = opts.userDataDir ?? await mkdtemp(join(tmpdir(), 'bt-chromium-'))
  const args = [
    ...CHROMIUM_FLAGS, `--user-data-dir=${userDataDir}`, `--remote-debugging-port=${opts.port ?? 0}`,
    '--remote-debugging-address=127.0.0.1', ...(opts.extraArgs ?? []), opts.startUrl ?? 'about:blank',
  ]
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: false })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const timeoutMs = opts.timeoutMs ?? 20000
  let buf = ''
  let cleanup = () => {}
  const announced = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      buf += d.toString()
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(buf)
      if (m) { cleanup(); resolve(m[1]!) }
      if (buf.length > 65536) buf = buf.slice(-8192)
    }
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => { cleanup(); reject(new ChromiumExitedError(child.pid, code, signal, buf.slice(-500))) }
    const onError = (err: Error) => { cleanup(); reject(err) }
    cleanup = () => { child.stderr!.off('data', onData); child.off('exit', onExit); child.off('error', onError) }
    child.stderr!.on('data', onData)
    child.once('exit', onExit)
    child.once('error', onError)
  })
  let wsUrl: string
  try {
    wsUrl = await withTimeout(announced, timeoutMs)
  } catch (err) {
    if (!(err instanceof TimeoutError)) throw err
    cleanup()
    child.kill('SIGKILL')
    throw new Error(`Chromium did not report a DevTools endpoint within ${timeoutMs} ms: ${buf.slice(-500)}`)
  }
  // Keep draining stderr so a chatty browser never blocks on a full pipe.
  child.stderr!.resume()
  const port = Number(new URL(wsUrl).port)
  let closing: Promise<void> | undefined
  return {
    process: child, pid: child.pid!, port, wsUrl, httpUrl: `http://127.0.0.1:${port}`, userDataDir, exited,
    close() {
      closing ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM')
          const t = setTimeout(() => child.kill('SIGKILL'), 3000)
          await exited
          clearTimeout(t)
        }
        if (ownProfile) await rm(userDataDir, { recursive: true, force: true }).catch(() => undefined)
      })()
      return closing
    },
  }
}
