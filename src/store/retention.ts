// Retention by age and bytes: a background pass (and one at open) deletes the oldest events by range
// and compacts what it deleted.
import type { ClassicLevel } from 'classic-level'
import type { Logger } from '../log.js'
import {
  eventKey,
  categoryKey,
  categoryRange,
  EVENT_RANGE_START,
  EVENT_RANGE_END,
  CATEGORY_BY_CODE,
  MAX_WRITE_EVENTS,
} from './keys.js'

export interface RetentionOptions {
  /** Retention by total bytes of stored events. */
  maxBytes: number
  /** Retention by age. */
  maxAgeMs: number
  /** How often retention runs in the background (0 disables the timer). */
  retentionIntervalMs: number
}

/** What retention needs of the log: its range, where ts falls in it, and moving its oldest seq. */
export interface RetainedLog {
  firstSeq(): number
  lastSeq(): number
  isOpen(): boolean
  seekTs(tsUs: number): Promise<number>
  /** Readers skip ahead at once; a cursor below it resumes at the oldest retained. */
  advanceFirstSeq(seq: number): void
}

export class Retention {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<unknown> | undefined

  constructor(
    private readonly db: ClassicLevel<Buffer, Buffer>,
    private readonly log: RetainedLog,
    private readonly opts: RetentionOptions,
    private readonly logger: Logger,
  ) {}

  /** Starts the unref'd timer and runs one pass now (nothing when the interval is 0). */
  start(): void {
    if (this.opts.retentionIntervalMs <= 0) return
    this.timer = setInterval(() => {
      void this.run()
    }, this.opts.retentionIntervalMs)
    this.timer.unref()
    void this.run()
  }

  /** Stops the timer and waits for a pass under way. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    if (this.running) await this.running.catch(() => undefined)
  }

  /** Runs one retention pass now. Returns events deleted. */
  async run(nowUs = Date.now() * 1000): Promise<number> {
    if (this.running) await this.running
    const p = this.pass(nowUs)
    this.running = p
    try {
      return await p
    } catch (err) {
      this.logger.error({ err }, 'retention pass failed')
      return 0
    } finally {
      this.running = undefined
    }
  }

  private async pass(nowUs: number): Promise<number> {
    if (!this.log.isOpen()) return 0
    let cutoff = this.log.firstSeq()
    const ageCutoff = await this.log.seekTs(nowUs - this.opts.maxAgeMs * 1000)
    if (ageCutoff > cutoff) cutoff = ageCutoff
    const size = await this.storedBytes()
    if (size > this.opts.maxBytes) {
      // Drop the oldest share that brings us to 90% of the cap (positions are a good proxy for bytes).
      const span = this.log.lastSeq() + 1 - this.log.firstSeq()
      const share = (size - this.opts.maxBytes * 0.9) / size
      cutoff = Math.max(cutoff, this.log.firstSeq() + Math.ceil(span * share))
    }
    if (cutoff <= this.log.firstSeq()) return 0
    return this.deleteBefore(cutoff)
  }

  /** Bytes of stored events as LevelDB estimates them (on-disk tables; the memtable is not counted). */
  async storedBytes(): Promise<number> {
    return this.db.approximateSize(EVENT_RANGE_START, EVENT_RANGE_END)
  }

  private async deleteBefore(cutoff: number): Promise<number> {
    const before = this.log.firstSeq()
    this.log.advanceFirstSeq(cutoff)
    await this.db.clear({ gte: EVENT_RANGE_START, lt: eventKey(cutoff) })
    for (const c of CATEGORY_BY_CODE) {
      const r = categoryRange(c)
      // A block starting just below the cutoff may still hold live seqs: keep those.
      await this.db.clear({ gte: r.start, lt: categoryKey(c, Math.max(0, cutoff - MAX_WRITE_EVENTS)) })
    }
    await this.db.compactRange(EVENT_RANGE_START, eventKey(cutoff)).catch(() => undefined)
    this.logger.info({ before, cutoff }, 'retention removed old events')
    return cutoff - before
  }
}
