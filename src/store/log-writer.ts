// The write side of the event log: seq assignment, group commit, the durable seq reservation and
// periodic fsync, commit and drop listeners, and retry with a bounded buffer while writes fail.
import type { ClassicLevel } from 'classic-level'
import type { Envelope, TelemetryEvent } from '../events/index.js'
import type { Logger } from '../log.js'
import { SYNC_WRITE } from '../util/level.js'
import {
  setEventKey,
  categoryKey,
  encodeRecord,
  envelopePrefix,
  EncodedRecord,
  type StoredRecord,
  CATEGORY_BY_CODE,
  MAX_WRITE_EVENTS,
} from './keys.js'
import { RESERVE_META, SEQ_META, SYNC_META, seqMeta, u64 } from './log-meta.js'

/** An appended event: its envelope, and true once durable (false if it had to be dropped). */
export interface Appended {
  envelope: Envelope
  committed: Promise<boolean>
}

export type CommitListener = (records: readonly StoredRecord[]) => void

/** What the writer needs of the log's options (all resolved: the facade defaults them once). */
export interface LogWriterOptions {
  commitDelayMs: number
  commitMaxEvents: number
  maxPendingEvents: number
  seqReserveBlock: number
  syncIntervalMs: number
}

/** Where the writer starts: recovered by the facade from the seq meta and the last record. */
export interface LogWriterStart {
  nextSeq: number
  lastTs: number
  committedSeq: number
  reservedSeq: number
}

export interface WriterHealth {
  writable: boolean
  writeFailures: number
  lastWriteError?: string
  /** Writes made with sync: true (seq reservations and the periodic sync). */
  syncedWrites: number
  droppedEvents: number
  pendingEvents: number
}

interface Batch {
  records: EncodedRecord[]
  /** Encoded bytes of records. */
  bytes: number
  resolve: (ok: boolean) => void
  promise: Promise<boolean>
}

function newBatch(): Batch {
  let resolve!: (ok: boolean) => void
  const promise = new Promise<boolean>(r => {
    resolve = r
  })
  return { records: [], bytes: 0, resolve, promise }
}

/**
 * Queued batches merged into one LevelDB write, at most this many events (< MAX_WRITE_EVENTS): a
 * backlog (a flood outran the disk, or a synced write stalled it) is caught up in a few writes, and
 * filling one write (a put per event on the main thread) stays a few ms long; four times as many
 * held the event loop for tens of ms per turn, back to back under a flood (bench/README.md).
 */
export const WRITE_MERGE_EVENTS = 4096
/** Seq span of one write (skipped seqs included): a category block's uint16 offsets must reach its last seq. */
const WRITE_MAX_SPAN = MAX_WRITE_EVENTS - 1

export class LogWriter {
  private nextSeq: number
  private lastTs: number
  private committedSeq: number
  /** Durable (synced) seq reservation: no seq at or below it is ever handed out again, power loss included. */
  private reservedSeq: number
  private lastSyncAt = 0
  private syncTimer: NodeJS.Timeout | undefined
  /** Highest seq consumed by skipSeq() (0: none); the seq meta never goes below it, so it is never reused. */
  private skippedSeq = 0
  private open = true
  private current: Batch = newBatch()
  private queue: Batch[] = []
  private writing = false
  /** Encoded bytes appended and not yet committed or dropped (the pipeline's pressure signal). */
  private pendingBytes_ = 0
  private flushTimer: NodeJS.Timeout | undefined
  private retryTimer: NodeJS.Timeout | undefined
  private retryDelayMs = 0
  private listeners = new Set<CommitListener>()
  private dropListeners = new Set<CommitListener>()
  private idleWaiters: (() => void)[] = []
  private health_ = {
    writable: true,
    writeFailures: 0,
    lastWriteError: undefined as string | undefined,
    droppedEvents: 0,
    syncedWrites: 0,
  }

  constructor(
    private readonly db: ClassicLevel<Buffer, Buffer>,
    private readonly opts: LogWriterOptions,
    start: LogWriterStart,
    private readonly logger: Logger,
  ) {
    this.nextSeq = start.nextSeq
    this.lastTs = start.lastTs
    this.committedSeq = start.committedSeq
    this.reservedSeq = start.reservedSeq
  }

  get isOpen(): boolean {
    return this.open
  }
  get lastStoredTs(): number {
    return this.lastTs
  }
  get lastSeq(): number {
    return this.committedSeq
  }
  /** The last seq handed out (appended or skipped), committed or not yet. */
  get lastAssignedSeq(): number {
    return this.nextSeq - 1
  }

  /** See EventLog.append. */
  append(event: TelemetryEvent, eventJson: string, eventBytes?: number): Appended {
    const seq = this.nextSeq++
    const envelope: Envelope = { seq, event }
    if (event.ts > this.lastTs) this.lastTs = event.ts
    if (!this.open) {
      this.dropped([{ seq, ts: event.ts, category: event.category, json: envelopePrefix(seq) + eventJson + '}' }])
      return { envelope, committed: Promise.resolve(false) }
    }
    // A write's seq span is bounded (category index offsets are uint16), skipped seqs included.
    if (this.current.records.length > 0 && seq - this.current.records[0]!.seq >= WRITE_MAX_SPAN) this.sealCurrent()
    const batch = this.current
    const value = encodeRecord(event.category, event.ts, seq, eventJson, eventBytes)
    batch.records.push(new EncodedRecord(seq, event.ts, event.category, value))
    batch.bytes += value.length
    this.pendingBytes_ += value.length
    if (batch.records.length >= this.opts.commitMaxEvents) {
      this.sealCurrent()
    } else if (batch.records.length === 1 && !this.flushTimer) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined
        this.sealCurrent()
      }, this.opts.commitDelayMs)
    }
    return { envelope, committed: batch.promise }
  }

  /** Consumes the next seq without storing anything (see EventLog.skipSeq). */
  skipSeq(): number {
    const seq = this.nextSeq++
    this.skippedSeq = seq
    return seq
  }

  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  onDrop(listener: CommitListener): () => void {
    this.dropListeners.add(listener)
    return () => {
      this.dropListeners.delete(listener)
    }
  }

  private dropped(records: readonly StoredRecord[]): void {
    this.health_.droppedEvents += records.length
    for (const l of this.dropListeners) {
      try {
        l(records)
      } catch (err) {
        this.logger.error({ err }, 'drop listener threw')
      }
    }
  }

  /** Resolves once everything appended so far is committed (or dropped). */
  async flush(): Promise<void> {
    if (this.current.records.length > 0) this.sealCurrent()
    if (!this.writing && this.queue.length === 0) return
    await new Promise<void>(r => this.idleWaiters.push(r))
  }

  health(): WriterHealth {
    let pending = this.current.records.length
    for (const b of this.queue) pending += b.records.length
    return { ...this.health_, pendingEvents: pending }
  }

  private sealCurrent(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer)
      this.flushTimer = undefined
    }
    if (this.current.records.length === 0) return
    this.queue.push(this.current)
    this.current = newBatch()
    this.enforcePendingCap()
    this.kick()
  }

  /** While writes fail, keep at most maxPendingEvents buffered; drop whole oldest batches (a seq gap). */
  private enforcePendingCap(): void {
    let pending = 0
    for (const b of this.queue) pending += b.records.length
    // queue[0] may be in flight; never drop it.
    while (pending > this.opts.maxPendingEvents && this.queue.length > 1) {
      const dropped = this.queue.splice(1, 1)[0]!
      pending -= dropped.records.length
      this.pendingBytes_ -= dropped.bytes
      this.dropped(dropped.records)
      dropped.resolve(false)
    }
  }

  private kick(): void {
    if (this.writing || this.retryTimer || this.queue.length === 0) return
    this.writing = true
    void this.writeLoop()
  }

  private async writeLoop(): Promise<void> {
    while (this.queue.length > 0) {
      // Group commit: everything queued so far goes out in one LevelDB write.
      const batches: Batch[] = []
      let count = 0
      for (const b of this.queue) {
        if (
          batches.length > 0 &&
          (count + b.records.length > WRITE_MERGE_EVENTS ||
            b.records[b.records.length - 1]!.seq - batches[0]!.records[0]!.seq >= WRITE_MAX_SPAN)
        )
          break
        batches.push(b)
        count += b.records.length
      }
      const records = batches.length === 1 ? batches[0]!.records : batches.flatMap(b => b.records)
      const last = records[records.length - 1]!
      let batch: ReturnType<typeof this.db.batch> | undefined
      let newReserved: number | undefined
      let sync = false
      try {
        // A chained batch hands each put to LevelDB's WriteBatch directly (no array of op objects).
        batch = this.db.batch()
        const first = records[0]!.seq
        // Per category code (the record's first byte): offsets from `first` of its events in this write.
        const offsets: number[][] = []
        // One key buffer rewritten per put: LevelDB's WriteBatch copies key and value when put() returns.
        const key = Buffer.allocUnsafe(9)
        for (const r of records) {
          batch.put(setEventKey(key, r.seq), r.value)
          ;(offsets[r.value[0]!] ??= []).push(r.seq - first)
        }
        for (let code = 0; code < offsets.length; code++) {
          const list = offsets[code]
          if (!list) continue
          const value = Buffer.allocUnsafe(list.length * 2)
          for (let i = 0; i < list.length; i++) value.writeUInt16BE(list[i]!, i * 2)
          batch.put(categoryKey(CATEGORY_BY_CODE[code]!, first), value)
        }
        batch.put(SEQ_META, seqMeta(Math.max(last.seq, this.skippedSeq), Math.max(this.lastTs, last.ts)))
        // Durable seq: the write that first commits a seq above the synced reservation carries a new
        // reservation and is synced, so the reservation is on disk before any reader sees those seqs.
        // Between reservations writes are synced at least every syncIntervalMs. Nothing else is synced.
        const now = performance.now()
        if (Math.max(last.seq, this.skippedSeq) > this.reservedSeq) {
          // skipped seqs were seen as gaps: never reused either
          newReserved = Math.max(last.seq, this.nextSeq - 1) + this.opts.seqReserveBlock
          batch.put(RESERVE_META, u64(newReserved))
        }
        sync = newReserved !== undefined || now - this.lastSyncAt >= this.opts.syncIntervalMs
        await (sync ? batch.write(SYNC_WRITE) : batch.write())
        if (sync) this.lastSyncAt = now
        else this.armIdleSync()
      } catch (err) {
        // write() closes the batch itself; a failure while filling it must not leak it.
        if (batch) void batch.close().catch(() => undefined)
        this.health_.writeFailures++
        this.health_.writable = false
        this.health_.lastWriteError = (err as Error).message
        this.retryDelayMs = Math.min(Math.max(this.retryDelayMs * 2, 50), 5000)
        this.logger.error(
          { err, retryInMs: this.retryDelayMs, pending: this.health().pendingEvents },
          'event log write failed; will retry',
        )
        this.writing = false
        // Not unref'd: undelivered events are a reason to keep the process alive.
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined
          this.kick()
        }, this.retryDelayMs)
        if (!this.open) this.failAllPending()
        return
      }
      if (!this.health_.writable) this.logger.warn('event log writes recovered')
      this.health_.writable = true
      this.retryDelayMs = 0
      this.queue.splice(0, batches.length)
      this.committedSeq = last.seq
      if (newReserved !== undefined) this.reservedSeq = newReserved
      if (sync) this.health_.syncedWrites++
      for (const b of batches) {
        this.pendingBytes_ -= b.bytes
        b.resolve(true)
      }
      for (const l of this.listeners) {
        try {
          l(records)
        } catch (err) {
          this.logger.error({ err }, 'commit listener threw')
        }
      }
    }
    this.writing = false
    const waiters = this.idleWaiters.splice(0)
    for (const w of waiters) w()
  }

  /** After an unsynced write, make sure an fsync follows within syncIntervalMs even if no write comes. */
  private armIdleSync(): void {
    if (this.syncTimer) return
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined
      if (!this.open || performance.now() - this.lastSyncAt < this.opts.syncIntervalMs) return
      const at = performance.now()
      this.db.put(SYNC_META, Buffer.alloc(0), SYNC_WRITE).then(
        () => {
          this.lastSyncAt = Math.max(this.lastSyncAt, at)
          this.health_.syncedWrites++
        },
        (err: Error) => this.logger.warn({ err }, 'event log sync failed'),
      )
    }, this.opts.syncIntervalMs)
    this.syncTimer.unref()
  }

  /** Bytes of encoded events appended and not yet committed (a plain field read: asked once per event). */
  get pendingBytes(): number {
    return this.pendingBytes_
  }

  private failAllPending(): void {
    for (const b of this.queue) {
      this.pendingBytes_ -= b.bytes
      this.dropped(b.records)
      b.resolve(false)
    }
    this.queue = []
    const waiters = this.idleWaiters.splice(0)
    for (const w of waiters) w()
  }

  /** Stops the idle sync: the first step of closing, before retention is awaited. */
  stopIdleSync(): void {
    if (this.syncTimer) {
      clearTimeout(this.syncTimer)
      this.syncTimer = undefined
    }
  }

  /**
   * Flushes, then refuses further appends (they are dropped and counted); a write still failing is
   * given up and its events dropped. Records seqs skipped after the last write in the seq meta.
   */
  async close(): Promise<void> {
    this.stopIdleSync()
    await this.flush()
    this.open = false
    if (this.retryTimer) {
      clearTimeout(this.retryTimer)
      this.retryTimer = undefined
      this.failAllPending()
    }
    if (this.skippedSeq > this.committedSeq) {
      // Seqs skipped after the last write: record them so the next run does not hand them out again.
      await this.db.put(SEQ_META, seqMeta(this.skippedSeq, this.lastTs)).catch(() => undefined)
    }
  }
}
