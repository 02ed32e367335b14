// Starts a local headless Chromium with a fresh profile and finds its DevTools endpoint.
// Used by the daemon's --launch mode and by the tests (one launcher, one set of flags).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, mkdir, rm, access, chown, chmod, readdir, readFile } from 'node:fs/promises'
import { constants } from 'node:fs'
import { getPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { TimeoutError, withTimeout } from '../util/with-timeout.js'
import type { ChromiumUser } from './chromium-user.js'

/**
 * Flags a machine with no outside network needs (see DEVELOPERS.md). `--no-sandbox` is not among
 * them: launchChromium adds it only where the sandbox cannot run (see LaunchOptions.sandbox).
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-sync',
  '--disable-quic',
  '--mute-audio',
  '--disable-dev-shm-usage',
  '--disable-features=Translate,MediaRouter,OptimizationHints',
]

export class ChromiumNotFoundError extends Error {
  constructor(path: string) {
    super(
      `Chromium not found at ${path}. Install it with: apt-get install -y chromium (or pass --chromium-path, or attach with --cdp-url)`,
    )
    this.name = 'ChromiumNotFoundError'
  }
}

/** Chromium ended before it reported its DevTools endpoint (bad flag, port in use, crash at startup). */
export class ChromiumExitedError extends Error {
  constructor(
    readonly pid: number | undefined,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly stderrTail: string,
  ) {
    super(`Chromium exited (code ${code}, signal ${signal}) before DevTools was ready: ${stderrTail.slice(-500)}`)
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
  /**
   * Run Chromium as this user (the caller must be root). The profile (and a private HOME) are
   * created for it, mode 0700. Whoever it runs as, its environment is `chromiumEnv`'s.
   */
  user?: ChromiumUser
  /**
   * 'auto' (default): sandboxed unless Chromium would run as root (it refuses to); when the sandbox
   * cannot start (no user namespaces, no setuid helper), launched once more with --no-sandbox and
   * the reason is reported in `sandbox.fallbackReason`. 'off': always --no-sandbox.
   */
  sandbox?: 'auto' | 'off'
}

export interface LaunchedBrowser {
  process: ChildProcess
  pid: number
  port: number
  /** Browser-level WebSocket URL (ws://127.0.0.1:port/devtools/browser/...). */
  wsUrl: string
  httpUrl: string
  userDataDir: string
  /** Whether Chromium runs sandboxed, and why not when the sandbox was tried and failed. */
  sandbox: { enabled: boolean; fallbackReason?: string }
  /** Resolves with the exit code/signal when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Terminates (SIGTERM, then SIGKILL after 3 s) and removes the per-launch temp dir (profile, HOME). */
  close(): Promise<void>
}

/** util-linux's setpriv sets PR_SET_PDEATHSIG before it execs the browser (same pid): the kernel kills the
 *  browser when the daemon dies, even by SIGKILL or the OOM killer, instead of leaving an orphan that holds
 *  the port and the profile. It also clears the inheritable and ambient capabilities, so the browser
 *  does not get what the unit grants the daemon (CAP_SYSLOG for /dev/kmsg). Without setpriv the browser
 *  is still stopped on every orderly exit. */
const SETPRIV = '/usr/bin/setpriv'
export async function childPrefix(setpriv = SETPRIV): Promise<string[]> {
  try {
    await access(setpriv, constants.X_OK)
    return [setpriv, '--pdeathsig', 'KILL', '--inh-caps=-all', '--ambient-caps=-all', '--']
  } catch {
    return []
  }
}

const KEPT_ENV = /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ)$/

/**
 * The whole environment Chromium starts with, whoever it runs as: a page or a CDP client can read it
 * (file:///proc/self/environ), so nothing of the daemon's settings or credentials is in it.
 */
export function chromiumEnv(
  from: NodeJS.ProcessEnv,
  home: string,
  user?: Pick<ChromiumUser, 'name'>,
): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(from)) if (v !== undefined && KEPT_ENV.test(k)) env[k] = v
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
  })
  if (user) Object.assign(env, { USER: user.name, LOGNAME: user.name })
  return env
}

/** Chromium's own words when it cannot sandbox (no usable sandbox, namespaces refused). */
const SANDBOX_FAILURE = /no usable sandbox|sandbox|new namespace|CLONE_NEWUSER/i

/** The line of Chromium's stderr that says why the sandbox could not start. */
export function sandboxFailureReason(stderrTail: string): string | undefined {
  const line = stderrTail.split('\n').find(l => SANDBOX_FAILURE.test(l))
  return line === undefined
    ? undefined
    : line
        .replace(/^\[[^\]]*\]\s*/, '')
        .trim()
        .slice(0, 300)
}

/** Whether to try the sandbox: never when Chromium itself would run as root (it refuses to). */
export function trySandbox(
  opts: Pick<LaunchOptions, 'user' | 'sandbox' | 'extraArgs'>,
  daemonUid = process.getuid?.(),
): boolean {
  if (opts.sandbox === 'off' || opts.extraArgs?.includes('--no-sandbox')) return false
  return (opts.user?.uid ?? daemonUid) !== 0
}

/** A directory only `user` may use (0700, owned by it); created when missing. */
async function ownedBy(dir: string, user: ChromiumUser | undefined): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  if (user) {
    await chown(dir, user.uid, user.gid)
    await chmod(dir, 0o700)
  }
  return dir
}

export async function launchChromium(opts: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const bin = opts.chromiumPath ?? '/usr/bin/chromium'
  try {
    await access(bin, constants.X_OK)
  } catch {
    throw new ChromiumNotFoundError(bin)
  }
  const { user } = opts
  // One temp dir per launch, outside the daemon's data dir: the profile (unless given) and the
  // browser's own HOME (fontconfig and crash reports write there). Removed on close.
  const base = await ownedBy(await mkdtemp(join(tmpdir(), 'bt-chromium-')), user)
  const userDataDir = opts.userDataDir
    ? await ownedBy(opts.userDataDir, user)
    : await ownedBy(join(base, 'profile'), user)
  const env = chromiumEnv(process.env, await ownedBy(join(base, 'home'), user), user)
  const removeOnClose = [base]
  try {
    if (!trySandbox(opts)) return await startChromium(bin, opts, userDataDir, env, false, removeOnClose)
    try {
      return await startChromium(bin, opts, userDataDir, env, true, removeOnClose)
    } catch (err) {
      const reason = err instanceof ChromiumExitedError ? sandboxFailureReason(err.stderrTail) : undefined
      if (reason === undefined) throw err
      return await startChromium(bin, opts, userDataDir, env, false, removeOnClose, reason)
    }
  } catch (err) {
    for (const dir of removeOnClose) await rm(dir, { recursive: true, force: true }).catch(() => undefined)
    throw err
  }
}

async function startChromium(
  bin: string,
  opts: LaunchOptions,
  userDataDir: string,
  env: Record<string, string>,
  sandboxed: boolean,
  removeOnClose: string[],
  fallbackReason?: string,
): Promise<LaunchedBrowser> {
  const args = [
    ...CHROMIUM_FLAGS,
    ...(sandboxed || opts.extraArgs?.includes('--no-sandbox') ? [] : ['--no-sandbox']),
    `--user-data-dir=${userDataDir}`,
    `--remote-debugging-port=${opts.port ?? 0}`,
    '--remote-debugging-address=127.0.0.1',
    ...(opts.extraArgs ?? []),
    opts.startUrl ?? 'about:blank',
  ]
  const { user } = opts
  // With uid/gid set, libuv also drops the supplementary groups (setgroups(0)) before exec.
  // Its own HOME is also its working directory: the daemon's may be one it cannot enter.
  // The daemon may run above normal priority (the systemd unit's Nice=-5: a flooding page can keep
  // it busy); the browser it starts runs at normal priority again.
  const back = Math.max(0, -getPriority())
  const prefix = [...(back > 0 ? ['nice', '-n', String(back)] : []), ...(await childPrefix())]
  const [command, ...commandArgs] = [...prefix, bin, ...args]
  const child = spawn(command!, commandArgs, {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: false,
    env,
    cwd: env.HOME,
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(resolve => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const timeoutMs = opts.timeoutMs ?? 20000
  let buf = ''
  let cleanup = () => {}
  const announced = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      buf += d.toString()
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(buf)
      if (m) {
        cleanup()
        resolve(m[1]!)
      }
      if (buf.length > 65536) buf = buf.slice(-8192)
    }
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      cleanup()
      reject(new ChromiumExitedError(child.pid, code, signal, buf.slice(-4096)))
    }
    const onError = (err: Error) => {
      cleanup()
      reject(err)
    }
    cleanup = () => {
      child.stderr!.off('data', onData)
      child.off('exit', onExit)
      child.off('error', onError)
    }
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
    process: child,
    pid: child.pid!,
    port,
    wsUrl,
    httpUrl: `http://127.0.0.1:${port}`,
    userDataDir,
    exited,
    sandbox: fallbackReason === undefined ? { enabled: sandboxed } : { enabled: false, fallbackReason },
    close() {
      closing ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM')
          const t = setTimeout(() => child.kill('SIGKILL'), 3000)
          await exited
          clearTimeout(t)
        }
        // The browser's helpers (crashpad handler, zygotes, utilities) can outlive its main process and
        // still write into the profile: removing it under them leaves it behind.
        await helpersEnded(userDataDir)
        for (const dir of removeOnClose)
          await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }).catch(() => undefined)
      })()
      return closing
    },
  }
}

/** Pids of live processes whose command line names dir or a path under it (a zombie's is empty). Every
 *  helper of a browser names its profile: --user-data-dir, or the crashpad handler's --database under it. */
async function processesNaming(dir: string): Promise<number[]> {
  const names = await readdir('/proc').catch(() => [] as string[])
  const found: number[] = []
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(`${dir}\0`) || cmdline.includes(`${dir}/`)) found.push(Number(name))
  }
  return found
}

/** Waits for the helpers naming dir to end on their own (they follow the main process), SIGKILL after graceMs. */
async function helpersEnded(dir: string, graceMs = 3000): Promise<void> {
  const deadline = Date.now() + graceMs
  for (let pids = await processesNaming(dir); pids.length > 0; pids = await processesNaming(dir)) {
    if (Date.now() > deadline) {
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // already gone
        }
      }
      if (Date.now() > deadline + graceMs) return
    }
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}
