// Full disk: the daemon keeps a reserve file in the data dir. When free space runs out (at startup or
// while running) the reserve is released, so LevelDB can still open and reads, /healthz and /metrics
// keep working, and the daemon goes read-only (write routes answer 507) instead of exiting and being
// restarted in a loop. A background check resumes writing once space is back (reserve re-made).
import { open, statfs, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { silentLogger, type Logger } from '../log.js'

export interface DiskGuardOptions {
  dir: string
  /** Size of the reserve file (0 disables the reserve; the read-only mode still follows free space). */
  reserveBytes: number
  /** How often free space is checked while read-only or low (default 5 s). */
  checkIntervalMs?: number
  logger?: Logger
  /** Injectable for tests: free bytes available to this process in dir. */
  freeBytes?: (dir: string) => Promise<number>
}

export interface DiskState {
  readOnly: boolean
  /** Why writes are refused, for /healthz and the 507 body. */
  reason?: string
}

const RESERVE_NAME = '.disk-reserve'
const CHUNK = 64 * 1024

async function realFreeBytes(dir: string): Promise<number> {
  const s = await statfs(dir)
  return s.bavail * s.bsize
}

export const isNoSpaceError = (err: unknown): boolean =>
  /ENOSPC|no space left|disk full/i.test(
    `${(err as { code?: string })?.code ?? ''} ${(err as Error)?.message ?? ''} ${(err as { cause?: Error })?.cause?.message ?? ''}`,
  )

export class DiskGuard {
  private state: DiskState = { readOnly: false }
  private timer: NodeJS.Timeout | undefined
  private checking: Promise<void> | undefined
  private readonly reservePath: string
  private readonly logger: Logger
  private readonly freeBytes: (dir: string) => Promise<number>

  private constructor(private readonly opts: DiskGuardOptions) {
    this.reservePath = join(opts.dir, RESERVE_NAME)
    this.logger = opts.logger ?? silentLogger
    this.freeBytes = opts.freeBytes ?? realFreeBytes
  }

  /** Checks space once (releasing the reserve when the disk is full) and starts the background check. */
  static async start(opts: DiskGuardOptions): Promise<DiskGuard> {
    const g = new DiskGuard(opts)
    await g.check()
    g.timer = setInterval(() => {
      void g.check()
    }, opts.checkIntervalMs ?? 5000)
    g.timer.unref()
    return g
  }

  get status(): DiskState {
    return { ...this.state }
  }
  get readOnly(): boolean {
    return this.state.readOnly
  }

  /** A write somewhere failed: if for lack of space, go read-only now (the next check may resume). */
  noteWriteError(err: unknown): void {
    if (isNoSpaceError(err) && !this.state.readOnly)
      void this.enterReadOnly('the data disk is full (a write failed with ENOSPC)')
  }

  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => {
      this.checking = undefined
    })
    return this.checking
  }

  private async checkOnce(): Promise<void> {
    let free: number
    try {
      free = await this.freeBytes(this.opts.dir)
    } catch (err) {
      this.logger.warn({ err }, 'cannot read free disk space')
      return
    }
    const hasReserve = (await this.reserveSize()) >= this.opts.reserveBytes
    if (this.state.readOnly) {
      // Resume when the reserve can be re-made and as much again stays free.
      if (free < this.opts.reserveBytes * 2 + CHUNK) return
      try {
        await this.makeReserve()
      } catch (err) {
        if (isNoSpaceError(err)) return
        throw err
      }
      this.state = { readOnly: false }
      this.logger.warn({ freeBytes: free }, 'disk space is back: writes resumed')
      return
    }
    if (hasReserve && free > CHUNK) return
    if (!hasReserve) {
      try {
        await this.makeReserve()
        return
      } catch (err) {
        if (!isNoSpaceError(err)) throw err
      }
    }
    await this.enterReadOnly(`the data disk is full (${free} bytes free); read-only until space is freed`)
  }

  private async enterReadOnly(reason: string): Promise<void> {
    this.state = { readOnly: true, reason }
    // Freed room lets LevelDB open/recover and the daemon keep serving reads.
    await unlink(this.reservePath).catch(() => undefined)
    this.logger.error({ reason }, 'data disk full: read-only (writes get 507)')
  }

  private async reserveSize(): Promise<number> {
    try {
      const fh = await open(this.reservePath, 'r')
      try {
        return (await fh.stat()).size
      } finally {
        await fh.close()
      }
    } catch {
      return 0
    }
  }

  /** Real blocks (zeros written, not a sparse file), so the space is really held. */
  private async makeReserve(): Promise<void> {
    if (this.opts.reserveBytes <= 0) return
    const fh = await open(this.reservePath, 'w', 0o600)
    try {
      const zeros = Buffer.alloc(CHUNK)
      for (let written = 0; written < this.opts.reserveBytes; written += CHUNK) {
        await fh.write(zeros, 0, Math.min(CHUNK, this.opts.reserveBytes - written))
      }
      // No fsync: the blocks are allocated (or delayed-allocation reserved) by the writes themselves.
    } catch (err) {
      await fh.close().catch(() => undefined)
      await unlink(this.reservePath).catch(() => undefined)
      throw err
    }
    await fh.close()
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
  }
}
