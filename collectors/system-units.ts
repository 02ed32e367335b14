// service_crashed for systemd units named by --watch-unit, by polling `systemctl show`.
// The rules (parseSystemctlShow, stepUnit) are pure; UnitWatcher is the thin polling shell.
//
// What counts, per unit:
// - a death: the main process went away while the unit was meant to run: the unit entered
//   'auto-restart' or 'failed', or NRestarts grew between two polls (a crash and restart we did not
//   see in between). phase 'running' when the unit had reached 'active' before dying, else 'startup'.
// - gave_up: the unit is 'failed' (systemd stopped restarting it: Restart=no, start-limit-hit, ...),
//   reported once per failure, with no pid.
// A clean `systemctl stop` (inactive, Result=success) is not a crash.
import { execFile } from 'node:child_process'
import { silentLogger, type Emit, type EventData, type Logger } from '../src/collector-kit.js'

export const UNIT_PROPERTIES = [
  'LoadState',
  'ActiveState',
  'SubState',
  'MainPID',
  'ExecMainPID',
  'Result',
  'NRestarts',
  'ExecMainStatus',
] as const

export interface UnitStatus {
  unit: string
  loadState: string
  activeState: string
  subState: string
  mainPid: number
  execMainPid: number
  result: string
  /** Absent on systemd < 235. */
  nRestarts?: number
  execMainStatus?: number
}

export type ServiceCrash = EventData<'service_crashed'> & { result?: string; exitStatus?: number }

/** `systemctl show -p ... u1 u2` prints one block of Key=Value lines per unit, blank-line separated, in argument order. */
export function parseSystemctlShow(text: string, units: readonly string[]): UnitStatus[] {
  const blocks = text
    .replace(/\r/g, '')
    .split(/\n\s*\n/)
    .map(b => b.trim())
    .filter(b => b !== '')
  return units.map((unit, i) => {
    const kv = new Map<string, string>()
    for (const line of (blocks[i] ?? '').split('\n')) {
      const eq = line.indexOf('=')
      if (eq > 0) kv.set(line.slice(0, eq), line.slice(eq + 1))
    }
    const int = (k: string) => {
      const v = kv.get(k)
      return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined
    }
    const s: UnitStatus = {
      unit,
      loadState: kv.get('LoadState') ?? 'unknown',
      activeState: kv.get('ActiveState') ?? 'unknown',
      subState: kv.get('SubState') ?? 'unknown',
      mainPid: int('MainPID') ?? 0,
      execMainPid: int('ExecMainPID') ?? 0,
      result: kv.get('Result') ?? 'unknown',
    }
    const n = int('NRestarts')
    if (n !== undefined) s.nRestarts = n
    const st = int('ExecMainStatus')
    if (st !== undefined) s.execMainStatus = st
    return s
  })
}

/** What the watcher remembers of one unit between polls. */
export interface UnitTrack {
  status: UnitStatus
  /** The current run reached 'active' (so a death now is phase 'running'). */
  reachedActive: boolean
  /** The last main pid seen while the unit ran. */
  lastPid?: number
  /** The current down spell (auto-restart/failed) was already reported. */
  downReported: boolean
  /** Deaths reported from an auto-restart state that NRestarts has not counted yet. */
  uncountedRestarts: number
  gaveUpReported: boolean
}

const isDown = (s: UnitStatus) => s.activeState === 'failed' || s.subState === 'auto-restart'
/** Never report more than this many deaths for one poll (a unit in a tight crash loop between polls). */
const MAX_DEATHS_PER_POLL = 10

/** One observation of a unit -> the new track and the crashes it reveals. The first observation is a baseline. */
export function stepUnit(prev: UnitTrack | undefined, cur: UnitStatus): { track: UnitTrack; crashes: ServiceCrash[] } {
  if (!prev) {
    return {
      track: {
        status: cur,
        reachedActive: cur.activeState === 'active',
        lastPid: cur.mainPid || undefined,
        // A restart pending at the baseline is for a death before we watched: NRestarts will count it.
        downReported: isDown(cur),
        uncountedRestarts: cur.subState === 'auto-restart' ? 1 : 0,
        gaveUpReported: cur.activeState === 'failed',
      },
      crashes: [],
    }
  }
  const crashes: ServiceCrash[] = []
  const phase = prev.reachedActive ? 'running' : 'startup'
  const extra = cur.result !== 'unknown' ? { result: cur.result } : {}
  const withStatus = cur.execMainStatus !== undefined ? { exitStatus: cur.execMainStatus } : {}
  let uncounted = prev.uncountedRestarts
  // Restarts systemd counted since the last poll, minus the ones already reported from auto-restart.
  let restarts = 0
  if (cur.nRestarts !== undefined && prev.status.nRestarts !== undefined && cur.nRestarts > prev.status.nRestarts) {
    const delta = cur.nRestarts - prev.status.nRestarts
    restarts = Math.max(0, delta - uncounted)
    uncounted = Math.max(0, uncounted - delta)
  }
  let pidUsed = false
  const deadPid = (): number | undefined => {
    if (pidUsed) return undefined
    pidUsed = true
    const pid = prev.lastPid ?? (cur.execMainPid || undefined)
    return pid !== undefined && pid !== cur.mainPid ? pid : undefined
  }
  const crash = (p: 'startup' | 'running'): void => {
    const pid = deadPid()
    crashes.push({ service_name: cur.unit, phase: p, ...(pid !== undefined ? { pid } : {}), ...extra, ...withStatus })
  }

  const newlyDown = isDown(cur) && !prev.downReported
  if (newlyDown) {
    if (restarts > 0)
      restarts-- // this down spell is one of the restarts systemd counted
    else if (cur.subState === 'auto-restart') uncounted++ // systemd counts it when the restart starts
  }
  const deaths = Math.min(MAX_DEATHS_PER_POLL, restarts + (newlyDown ? 1 : 0))
  for (let i = 0; i < deaths; i++) crash(phase)

  let gaveUpReported = prev.gaveUpReported
  if (cur.activeState === 'failed' && !gaveUpReported) {
    crashes.push({ service_name: cur.unit, phase: 'gave_up', ...extra, ...withStatus })
    gaveUpReported = true
  } else if (cur.activeState !== 'failed') {
    gaveUpReported = false
  }

  let reachedActive: boolean
  if (cur.activeState === 'active') reachedActive = true
  else if (cur.activeState === 'reloading' || cur.activeState === 'deactivating')
    reachedActive = deaths > 0 ? false : prev.reachedActive
  else reachedActive = false

  return {
    track: {
      status: cur,
      reachedActive,
      lastPid: cur.mainPid || (isDown(cur) ? undefined : prev.lastPid),
      downReported: isDown(cur),
      uncountedRestarts: uncounted,
      gaveUpReported,
    },
    crashes,
  }
}

export type SystemctlRunner = (args: string[]) => Promise<string>

/** Runs /usr/bin/env systemctl with a timeout; rejects with stderr on failure. */
export const runSystemctl: SystemctlRunner = args =>
  new Promise((resolve, reject) => {
    execFile('systemctl', args, { timeout: 10_000, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error((stderr || err.message).trim()))
      else resolve(stdout)
    })
  })

export interface UnitWatcherOptions {
  units: readonly string[]
  emit: Emit
  logger?: Logger
  /** Default 2 s. */
  intervalMs?: number
  /** Injectable for tests. */
  run?: SystemctlRunner
}

export class UnitWatcher {
  private readonly tracks = new Map<string, UnitTrack>()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private failing = false
  private notFound = new Set<string>()
  private polling: Promise<void> | undefined
  private readonly run: SystemctlRunner
  private readonly logger: Logger

  constructor(private readonly opts: UnitWatcherOptions) {
    this.run = opts.run ?? runSystemctl
    this.logger = opts.logger ?? silentLogger
  }

  /** Takes the baseline (no events) and starts polling. */
  async start(): Promise<void> {
    if (this.opts.units.length === 0) return
    await this.poll()
    this.schedule()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.polling
  }

  /** One poll of every unit (tests drive it directly). */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => {
      this.polling = undefined
    })
    return this.polling
  }

  private schedule(): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      void this.poll().then(() => this.schedule()) // pollOnce() catches its own failures
    }, this.opts.intervalMs ?? 2000)
    this.timer.unref()
  }

  private async pollOnce(): Promise<void> {
    const units = this.opts.units
    let text: string
    try {
      text = await this.run(['show', '-p', UNIT_PROPERTIES.join(','), '--', ...units])
    } catch (err) {
      // Said once per outage (systemd absent, D-Bus down); polling goes on.
      if (!this.failing) this.logger.warn({ err, units }, 'cannot query systemd for --watch-unit units')
      this.failing = true
      return
    }
    if (this.failing) this.logger.info('systemd answers again for --watch-unit units')
    this.failing = false
    for (const status of parseSystemctlShow(text, units)) {
      if (status.loadState === 'not-found') {
        if (!this.notFound.has(status.unit))
          this.logger.warn({ unit: status.unit }, '--watch-unit: no such systemd unit')
        this.notFound.add(status.unit)
      } else {
        this.notFound.delete(status.unit)
      }
      const { track, crashes } = stepUnit(this.tracks.get(status.unit), status)
      this.tracks.set(status.unit, track)
      for (const c of crashes) {
        const metadata: Record<string, string> = {}
        if (c.result !== undefined) metadata.result = c.result
        if (c.exitStatus !== undefined) metadata.exit_status = String(c.exitStatus)
        this.logger.warn({ unit: c.service_name, phase: c.phase, pid: c.pid, result: c.result }, 'watched unit crashed')
        const data: EventData<'service_crashed'> = { service_name: c.service_name, phase: c.phase }
        if (c.pid !== undefined) data.pid = c.pid
        this.opts.emit({
          type: 'service_crashed',
          data,
          source: { kind: 'local_process', event: 'systemd', ...(Object.keys(metadata).length ? { metadata } : {}) },
        })
      }
    }
  }
}
