// Follows the kernel log (/dev/kmsg) for OOM-kill reports and emits system_oom_kill.
//
// Reads are non-blocking and polled: a blocking read of /dev/kmsg would pin one libuv threadpool
// thread for the daemon's whole life. A poll reads synchronously (the fd is non-blocking: it answers
// at once, EAGAIN when there is nothing new): no threadpool hop and promise per poll, which made
// the idle daemon's polls a third of its CPU. What is already in the ring buffer at start is skipped (those
// kills happened before this daemon ran, or were reported by its previous run).
import { open, type FileHandle } from 'node:fs/promises'
import { constants, readSync } from 'node:fs'
import { silentLogger, systemClock, withDefaults, type Emit, type Logger, type Timers } from '../src/collector-kit.js'
import { OomReportAssembler, parseKmsgRecord } from './system-oom.js'

export interface KmsgStatus {
  kmsgReadable: boolean
  /** Why not (e.g. "EACCES: permission denied"), when not readable. */
  reason?: string
}

export interface OomWatcherOptions {
  /** Default /dev/kmsg. A regular file of kmsg records also works (followed from its end). */
  kmsgPath?: string
  emit: Emit
  logger?: Logger
  /**
   * Default 1 s: an OOM report waits at most that long, and an idle daemon wakes once a second for
   * it (each wakeup with its file read costs ~0.2 ms of CPU).
   */
  pollMs?: number
  /** Only kernel-facility records (default true: anything can write user-facility lines to /dev/kmsg). */
  kernelOnly?: boolean
  /** The poll timer's clock (injectable for tests). */
  timers?: Timers
}

/** Larger than any kmsg record (the kernel answers EINVAL to a read buffer smaller than the record). */
const READ_BUFFER = 64 * 1024
const SOURCE = { kind: 'local_process', event: 'kmsg' } as const

export class OomWatcher {
  private readonly opts: Required<OomWatcherOptions>
  private fh: FileHandle | undefined
  private timer: unknown
  private stopped = false
  private readonly assembler = new OomReportAssembler()
  private partial = ''
  private readonly buf = Buffer.allocUnsafe(READ_BUFFER)
  private state: KmsgStatus = { kmsgReadable: false, reason: 'not started' }
  private reading: Promise<void> | undefined
  /** OOM kills reported since start. */
  kills = 0

  constructor(opts: OomWatcherOptions) {
    // Not a spread: startSystemCollectors passes `pollMs: undefined` when unset, which a spread
    // would keep, and setTimeout(fn, undefined) polls every millisecond.
    this.opts = withDefaults<Required<OomWatcherOptions>>(
      {
        kmsgPath: '/dev/kmsg',
        pollMs: 1000,
        kernelOnly: true,
        logger: silentLogger,
        timers: systemClock,
        emit: opts.emit,
      },
      opts,
    )
  }

  /** For /healthz. */
  status(): KmsgStatus {
    return { ...this.state }
  }

  /** Opens the log and skips what is already in it. Never throws: an unreadable log is a status. */
  async start(): Promise<KmsgStatus> {
    try {
      this.fh = await open(this.opts.kmsgPath, constants.O_RDONLY | constants.O_NONBLOCK)
      await this.drain(false)
    } catch (err) {
      await this.fh?.close().catch(() => undefined)
      this.fh = undefined
      const reason = describe(err)
      this.state = { kmsgReadable: false, reason }
      // Said once: the daemon runs fine without OOM reports (e.g. unprivileged, or a container).
      this.opts.logger.warn(
        { path: this.opts.kmsgPath, reason },
        'kernel log not readable: system_oom_kill events are off',
      )
      return this.status()
    }
    this.state = { kmsgReadable: true }
    this.schedule()
    return this.status()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) this.opts.timers.clear(this.timer)
    await this.reading
    await this.fh?.close().catch(() => undefined)
    this.fh = undefined
  }

  /** Reads whatever is new now (tests call it instead of waiting for the poll). */
  poll(): Promise<void> {
    this.reading ??= this.drain(true).finally(() => {
      this.reading = undefined
    })
    return this.reading
  }

  private schedule(): void {
    if (this.stopped) return
    this.timer = this.opts.timers.set(
      () => {
        this.poll()
          .catch(err => this.opts.logger.warn({ err: describe(err) }, 'kernel log read failed'))
          .finally(() => this.schedule())
      },
      this.opts.pollMs,
      { unref: true },
    )
  }

  /** Reads until nothing more is available; `deliver` false discards (the backlog at start). */
  private async drain(deliver: boolean): Promise<void> {
    const fh = this.fh
    if (!fh) return
    for (;;) {
      let n: number
      try {
        n = readSync(fh.fd, this.buf, 0, this.buf.length, null)
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return
        // The ring buffer overwrote records we had not read yet; reading continues after them.
        if (code === 'EPIPE') {
          this.opts.logger.debug('kernel log records were overwritten before being read')
          continue
        }
        throw err
      }
      if (n === 0) return // regular file at its end
      if (!deliver) continue
      this.lines(this.buf.toString('utf8', 0, n))
    }
  }

  private lines(chunk: string): void {
    const text = this.partial + chunk
    const parts = text.split('\n')
    this.partial = parts.pop() ?? ''
    for (const line of parts) {
      if (line === '' || line.startsWith(' ')) continue // dictionary continuation lines
      const rec = parseKmsgRecord(line)
      if (!rec || (this.opts.kernelOnly && rec.facility !== 0)) continue
      for (const l of rec.lines) {
        const kill = this.assembler.push(l)
        if (kill) {
          this.kills++
          this.opts.emit({ type: 'system_oom_kill', data: kill, source: SOURCE })
        }
      }
    }
  }
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException
  return e.code ? `${e.code}: ${e.message.replace(/^\w+: /, '')}` : String(e?.message ?? err)
}
