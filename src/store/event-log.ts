// The durable event log: LevelDB with group commit, cursor and time-window reads, retention.
// Knows nothing of CDP or HTTP. The pipeline is its only writer; readers only see committed data.
import { ClassicLevel } from 'classic-level'
import type { Category, Envelope, TelemetryEvent } from '../events/index.js'
import { silentLogger, type Logger } from '../log.js'
import {
  eventKey,
  setEventKey,
  seqOfEventKey,
  categoryKey,
  seqOfCategoryKey,
  metaKey,
  categoryRange,
  encodeRecord,
  decodeRecord,
  envelopePrefix,
  EncodedRecord,
  tsOfRecord,
  writeSeq,
  EVENT_RANGE_START,
  EVENT_RANGE_END,
  type StoredRecord,
  CATEGORY_BY_CODE,
  MAX_WRITE_EVENTS,
} from './keys.js'

export type { StoredRecord } from './keys.js'

export interface EventLogOptions {
  path: string
  logger?: Logger
  /** Retention by total bytes of stored events (default 512 MiB). */
  maxBytes?: number
  /** Retention by age (default 7 days). */
  maxAgeMs?: number
  /** How often retention runs in the background (default 60 s; 0 disables the timer). */
  retentionIntervalMs?: number
  /** Group commit: flush after this long (default 10 ms) ... */
  commitDelayMs?: number
  /** ... or once this many events are buffered (default 256). */
  commitMaxEvents?: number
  /** Events buffered while writes fail before the oldest are dropped (default 100,000). */
  maxPendingEvents?: number
  /**
   * Creates the LevelDB at `path` (default: a ClassicLevel with buffer keys and values). Only tests
   * pass it, to wrap writes with faults; the log never hands its database to anyone.
   */
  level?: (path: string) => ClassicLevel<Buffer, Buffer>
  /**
   * Durable seq: a write whose seqs pass the synced reservation reserves this many more, in a
   * `sync: true` write (default 4096). Larger means fewer fsyncs and a wider gap after power loss.
   */
  seqReserveBlock?: number
  /** A write is also synced when the last synced write is older than this (default 1 s): bounds what power loss can take. */
  syncIntervalMs?: number
}

export interface ReadQuery {
  order: 'asc' | 'desc'
  limit: number
  /** asc: first position to read; desc: exclusive upper position. Opaque to clients. */
  cursor?: number
  /** asc only; ignored when cursor is set. Unix microseconds, inclusive. */
  sinceUs?: number
  /** Unix microseconds, exclusive. Bounds the page in both directions, cursor or not. */
  untilUs?: number
  /** Only these categories (undefined = all). */
  categories?: ReadonlySet<Category>
  /**
   * Stop adding records once their stored bytes would pass this (default DEFAULT_READ_MAX_BYTES; a page
   * always holds at least one): hundreds of envelopes of up to 1 MiB each must never be materialised at
   * once by a reader (events API, SSE replay, shipper). hasMore/nextCursor continue after the cut.
   */
  maxBytes?: number
}

/** Bytes of stored records one read() materialises at most (plus one batch of values in flight). */
export const DEFAULT_READ_MAX_BYTES = 8 * 1024 * 1024

export interface ReadResult {
  records: StoredRecord[]
  hasMore: boolean
  /** Where the next page starts; 0 when there is nothing more. */
  nextCursor: number
}

export interface LogHealth {
  writable: boolean
  writeFailures: number
  lastWriteError?: string
  /** Writes made with sync: true (seq reservations and the periodic sync). */
  syncedWrites: number
  droppedEvents: number
  pendingEvents: number
  firstSeq: number
  lastSeq: number
}

export type CommitListener = (records: readonly StoredRecord[]) => void

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

export class DataDirLockedError extends Error {
  constructor(path: string) {
    super(
      `data directory ${path} is in use by another running browser-telemetry process (LevelDB lock held); ` +
        'stop that process or choose another --data-dir',
    )
    this.name = 'DataDirLockedError'
  }
}

const SEQ_META = metaKey('seq')
/**
 * Queued batches merged into one LevelDB write, at most this many events (< MAX_WRITE_EVENTS): a
 * backlog (a flood outran the disk, or a synced write stalled it) is caught up in a few writes, and
 * filling one write (a put per event on the main thread, ~1.5 us each) stays a few ms long. At
 * 16,384 it took 8-29 ms in one turn of the event loop, which a flood kept doing back to back.
 */
const WRITE_MERGE_EVENTS = 4096
/** Seq span of one write (skipped seqs included): a category block's uint16 offsets must reach its last seq. */
const WRITE_MAX_SPAN = MAX_WRITE_EVENTS - 1
const CLEAN_META = metaKey('clean')
/** Highest seq that may have been handed out, written with sync: true before any seq above it is committed. */
const RESERVE_META = metaKey('rsv')
/** Written (empty, synced) when the log goes idle after unsynced writes: the fsync is the point. */
const SYNC_META = metaKey('sync')

function u64(n: number): Buffer {
  const b = Buffer.allocUnsafe(8)
  writeSeq(b, n, 0)
  return b
}
/** The seq meta: the highest seq consumed (8 bytes BE) and the highest ts stored (float64 BE); open() reads it back. */
function seqMeta(seq: number, ts: number): Buffer {
  const b = Buffer.allocUnsafe(16)
  writeSeq(b, seq, 0)
  b.writeDoubleBE(ts, 8)
  return b
}
/** Namespace of readMeta/writeMeta names inside the 'm' prefix. */
const MODULE_META_PREFIX = 'x:'

export class EventLog {
  readonly path: string
  private readonly db: ClassicLevel<Buffer, Buffer>
  /** True when the previous process using this data dir stopped without closing the log. */
  readonly previousStopWasUnclean: boolean
  private readonly log: Logger
  private readonly opts: Required<Omit<EventLogOptions, 'logger' | 'path' | 'level'>>
  private nextSeq: number
  private lastTs: number
  private committedSeq: number
  /** Durable (synced) seq reservation: no seq at or below it is ever handed out again, power loss included. */
  private reservedSeq: number
  private lastSyncAt = 0
  private syncTimer: NodeJS.Timeout | undefined
  /** Highest seq consumed by skipSeq() (0: none); the seq meta never goes below it, so it is never reused. */
  private skippedSeq = 0
  private firstSeqCache: number
  private open = true
  private current: Batch = newBatch()
  private queue: Batch[] = []
  private writing = false
  /** Encoded bytes appended and not yet committed or dropped (the pipeline's pressure signal). */
  private pendingBytes_ = 0
  private flushTimer: NodeJS.Timeout | undefined
  private retryTimer: NodeJS.Timeout | undefined
  private retryDelayMs = 0
  private retentionTimer: NodeJS.Timeout | undefined
  private retentionRunning: Promise<unknown> | undefined
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

  private constructor(
    db: ClassicLevel<Buffer, Buffer>,
    opts: EventLogOptions,
    state: {
      nextSeq: number
      lastTs: number
      committedSeq: number
      reservedSeq: number
      firstSeq: number
      unclean: boolean
    },
  ) {
    this.db = db
    this.path = opts.path
    this.log = opts.logger ?? silentLogger
    this.opts = {
      maxBytes: opts.maxBytes ?? 512 * 1024 * 1024,
      maxAgeMs: opts.maxAgeMs ?? 7 * 24 * 3600 * 1000,
      retentionIntervalMs: opts.retentionIntervalMs ?? 60_000,
      commitDelayMs: opts.commitDelayMs ?? 10,
      // A batch never exceeds one write (index block offsets are uint16).
      commitMaxEvents: Math.min(Math.max(1, opts.commitMaxEvents ?? 256), WRITE_MERGE_EVENTS),
      maxPendingEvents: opts.maxPendingEvents ?? 100_000,
      seqReserveBlock: Math.max(1, opts.seqReserveBlock ?? 4096),
      syncIntervalMs: opts.syncIntervalMs ?? 1000,
    }
    this.nextSeq = state.nextSeq
    this.lastTs = state.lastTs
    this.committedSeq = state.committedSeq
    this.reservedSeq = state.reservedSeq
    this.firstSeqCache = state.firstSeq
    this.previousStopWasUnclean = state.unclean
  }

  static async open(opts: EventLogOptions): Promise<EventLog> {
    const db = opts.level
      ? opts.level(opts.path)
      : new ClassicLevel<Buffer, Buffer>(opts.path, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    try {
      await db.open()
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? ''
      if (/lock/i.test(cause) || (err as { code?: string }).code === 'LEVEL_LOCKED')
        throw new DataDirLockedError(opts.path)
      throw err
    }
    // Last committed position: the seq meta (written in every batch) survives retention emptying the log.
    let committedSeq = 0
    let lastTs = 0
    const meta = await db.get(SEQ_META)
    if (meta) {
      committedSeq = Number(meta.readBigUInt64BE(0))
      lastTs = meta.readDoubleBE(8)
    }
    const [lastEntry] = await db
      .iterator({ gte: EVENT_RANGE_START, lt: EVENT_RANGE_END, reverse: true, limit: 1 })
      .all()
    if (lastEntry) {
      committedSeq = Math.max(committedSeq, seqOfEventKey(lastEntry[0]))
      lastTs = Math.max(lastTs, tsOfRecord(lastEntry[1]))
    }
    const [firstKey] = await db.keys({ gte: EVENT_RANGE_START, lt: EVENT_RANGE_END, limit: 1 }).all()
    const firstSeq = firstKey ? seqOfEventKey(firstKey) : committedSeq + 1
    const reserved = await db.get(RESERVE_META)
    const reservedSeq = reserved ? Number(reserved.readBigUInt64BE(0)) : 0
    const hadData = committedSeq > 0 || reservedSeq > 0
    const clean = (await db.get(CLEAN_META)) !== undefined
    // An unclean stop may have lost buffered events: skip at least one seq so clients see a gap.
    // After power loss the last unsynced writes may be gone while readers already saw their seqs;
    // the synced reservation is above all of them, so starting past it never reuses one.
    const unclean = hadData && !clean
    const nextSeq = unclean ? Math.max(committedSeq + 2, reservedSeq + 1) : committedSeq + 1
    // Remove the marker before accepting writes: from here on a crash must read as unclean.
    await db.del(CLEAN_META, { sync: true } as never)
    const log = new EventLog(db, opts, { nextSeq, lastTs, committedSeq, reservedSeq, firstSeq, unclean })
    if (log.opts.retentionIntervalMs > 0) {
      log.retentionTimer = setInterval(() => {
        void log.runRetention()
      }, log.opts.retentionIntervalMs)
      log.retentionTimer.unref()
      void log.runRetention()
    }
    return log
  }

  /** Bytes of encoded events appended and not yet committed (a plain field read: asked once per event). */
  get pendingBytes(): number {
    return this.pendingBytes_
  }

  /** Highest ts ever stored: the pipeline keeps ts non-decreasing from here across restarts. */
  get lastStoredTs(): number {
    return this.lastTs
  }
  get lastSeq(): number {
    return this.committedSeq
  }
  get firstSeq(): number {
    return this.firstSeqCache
  }

  /**
   * Assigns the next seq, buffers the envelope for the next group commit and returns it with a
   * promise that resolves true once durable (false if it had to be dropped). Never throws.
   */
  append(
    event: TelemetryEvent,
    eventJson: string,
    eventBytes?: number,
  ): { envelope: Envelope; committed: Promise<boolean> } {
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

  /**
   * Consumes the next seq without storing anything: readers see the gap, as for any dropped event
   * (the pipeline's shed and capped drops). Survives restarts: the seq meta records it.
   */
  skipSeq(): number {
    const seq = this.nextSeq++
    this.skippedSeq = seq
    return seq
  }

  /** Called with each committed batch, in seq order, after it is durable and readable. */
  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  /** Called with records that will never be stored (buffer overflow while writes fail, append after close). */
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
        this.log.error({ err: (err as Error).message }, 'drop listener threw')
      }
    }
  }

  /** Resolves once everything appended so far is committed (or dropped). */
  async flush(): Promise<void> {
    if (this.current.records.length > 0) this.sealCurrent()
    if (!this.writing && this.queue.length === 0) return
    await new Promise<void>(r => this.idleWaiters.push(r))
  }

  health(): LogHealth {
    let pending = this.current.records.length
    for (const b of this.queue) pending += b.records.length
    return { ...this.health_, pendingEvents: pending, firstSeq: this.firstSeqCache, lastSeq: this.committedSeq }
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
        await (sync ? batch.write({ sync: true } as never) : batch.write())
        if (sync) this.lastSyncAt = now
        else this.armIdleSync()
      } catch (err) {
        // write() closes the batch itself; a failure while filling it must not leak it.
        if (batch) void batch.close().catch(() => undefined)
        this.health_.writeFailures++
        this.health_.writable = false
        this.health_.lastWriteError = (err as Error).message
        this.retryDelayMs = Math.min(Math.max(this.retryDelayMs * 2, 50), 5000)
        this.log.error(
          { err: (err as Error).message, retryInMs: this.retryDelayMs, pending: this.health().pendingEvents },
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
      if (!this.health_.writable) this.log.warn('event log writes recovered')
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
          this.log.error({ err: (err as Error).message }, 'commit listener threw')
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
      this.db.put(SYNC_META, Buffer.alloc(0), { sync: true } as never).then(
        () => {
          this.lastSyncAt = Math.max(this.lastSyncAt, at)
          this.health_.syncedWrites++
        },
        (err: Error) => this.log.warn({ err: err.message }, 'event log sync failed'),
      )
    }, this.opts.syncIntervalMs)
    this.syncTimer.unref()
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

  // ---------------------------------------------------------------- reads

  /** First seq whose ts >= tsUs (or lastSeq + 1 when none): binary search over positions, O(log n) seeks. */
  async seekTs(tsUs: number): Promise<number> {
    const it = this.db.iterator({ gte: EVENT_RANGE_START, lt: EVENT_RANGE_END })
    try {
      let lo = this.firstSeqCache
      let hi = this.committedSeq + 1
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2)
        it.seek(eventKey(mid))
        const entry = await it.next()
        if (!entry) {
          hi = mid
          continue
        }
        const seq = seqOfEventKey(entry[0])
        if (seq >= hi) {
          hi = mid
          continue
        }
        if (tsOfRecord(entry[1]) >= tsUs) hi = mid
        else lo = seq + 1
      }
      // lo is a position; report the first existing record at or after it.
      it.seek(eventKey(lo))
      const entry = await it.next()
      return entry ? seqOfEventKey(entry[0]) : this.committedSeq + 1
    } finally {
      await it.close()
    }
  }

  async read(q: ReadQuery): Promise<ReadResult> {
    const limit = Math.max(1, Math.floor(q.limit))
    let lo = 0
    let hi = Number.MAX_SAFE_INTEGER // exclusive
    if (q.untilUs !== undefined) hi = await this.seekTs(q.untilUs)
    if (q.order === 'asc') {
      if (q.cursor !== undefined) lo = q.cursor
      else if (q.sinceUs !== undefined) lo = await this.seekTs(q.sinceUs)
    } else if (q.cursor !== undefined) {
      hi = Math.min(hi, q.cursor)
    }
    lo = Math.max(lo, this.firstSeqCache) // a cursor below retention continues at the oldest retained
    if (lo >= hi) return { records: [], hasMore: false, nextCursor: 0 }
    const reverse = q.order === 'desc'
    const cats = q.categories && q.categories.size < CATEGORY_BY_CODE.length ? q.categories : undefined
    const maxBytes = q.maxBytes ?? DEFAULT_READ_MAX_BYTES
    const records: StoredRecord[] = []
    let bytes = 0
    let hasMore = false
    /** Adds one value unless the page is full (by count or bytes); false = stop, more exists. */
    const take = (seq: number, v: Uint8Array): boolean => {
      if (records.length >= limit || (records.length > 0 && bytes + v.length > maxBytes)) {
        hasMore = true
        return false
      }
      records.push(decodeRecord(seq, v))
      bytes += v.length
      return true
    }
    // Values are fetched in small batches so a byte-bounded page never holds more than a batch beyond its bound.
    const BATCH = 16
    if (!cats) {
      const it = this.db.iterator({ gte: eventKey(lo), lt: eventKey(hi), reverse, limit: limit + 1 })
      try {
        fill: for (;;) {
          const entries = await it.nextv(BATCH)
          if (entries.length === 0) break
          for (const [k, v] of entries) if (!take(seqOfEventKey(k), v)) break fill
        }
      } finally {
        await it.close()
      }
    } else {
      // Merge the per-category index blocks: cost is O(limit x categories) however sparse the match.
      const seqs: number[] = []
      for (const c of cats) seqs.push(...(await this.categorySeqs(c, lo, hi, reverse, limit + 1)))
      seqs.sort(reverse ? (a, b) => b - a : (a, b) => a - b)
      fill: for (let i = 0; i < seqs.length; i += BATCH) {
        const wanted = seqs.slice(i, i + BATCH)
        const values = await this.db.getMany(wanted.map(eventKey))
        for (let j = 0; j < wanted.length; j++) {
          const v = values[j]
          if (!v) continue // a value removed by retention in between is skipped
          if (!take(wanted[j]!, v)) break fill
        }
      }
    }
    const last = records[records.length - 1]
    const nextCursor = hasMore && last ? (reverse ? last.seq : last.seq + 1) : 0
    return { records, hasMore: hasMore && nextCursor > 0, nextCursor }
  }

  /** Up to `want` seqs of one category in [lo, hi), in read order, from the per-write index blocks. */
  private async categorySeqs(
    category: Category,
    lo: number,
    hi: number,
    reverse: boolean,
    want: number,
  ): Promise<number[]> {
    const out: number[] = []
    // A block is keyed by the first seq of its write and spans fewer than MAX_WRITE_EVENTS positions.
    const it = this.db.iterator({
      gte: categoryKey(category, Math.max(0, lo - MAX_WRITE_EVENTS)),
      lt: categoryKey(category, hi),
      reverse,
    })
    try {
      for (;;) {
        const entries = await it.nextv(16)
        if (entries.length === 0) return out
        for (const [k, v] of entries) {
          const base = seqOfCategoryKey(k)
          const n = v.byteLength / 2
          const buf = Buffer.from(v.buffer, v.byteOffset, v.byteLength)
          for (let i = 0; i < n; i++) {
            const seq = base + buf.readUInt16BE((reverse ? n - 1 - i : i) * 2)
            if (seq >= lo && seq < hi) out.push(seq)
          }
          if (out.length >= want) return out.slice(0, want)
        }
      }
    } finally {
      await it.close()
    }
  }

  // ---------------------------------------------------------------- retention

  /** Runs one retention pass now (also runs on a background timer). Returns events deleted. */
  async runRetention(nowUs = Date.now() * 1000): Promise<number> {
    if (this.retentionRunning) await this.retentionRunning
    const p = this.retentionPass(nowUs)
    this.retentionRunning = p
    try {
      return await p
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'retention pass failed')
      return 0
    } finally {
      this.retentionRunning = undefined
    }
  }

  private async retentionPass(nowUs: number): Promise<number> {
    if (!this.open) return 0
    let cutoff = this.firstSeqCache
    const ageCutoff = await this.seekTs(nowUs - this.opts.maxAgeMs * 1000)
    if (ageCutoff > cutoff) cutoff = ageCutoff
    const size = await this.storedBytes()
    if (size > this.opts.maxBytes) {
      // Drop the oldest share that brings us to 90% of the cap (positions are a good proxy for bytes).
      const span = this.committedSeq + 1 - this.firstSeqCache
      const share = (size - this.opts.maxBytes * 0.9) / size
      cutoff = Math.max(cutoff, this.firstSeqCache + Math.ceil(span * share))
    }
    if (cutoff <= this.firstSeqCache) return 0
    return this.deleteBefore(cutoff)
  }

  /** Bytes of stored events as LevelDB estimates them (on-disk tables; the memtable is not counted). */
  async storedBytes(): Promise<number> {
    return this.db.approximateSize(EVENT_RANGE_START as never, EVENT_RANGE_END as never)
  }

  private async deleteBefore(cutoff: number): Promise<number> {
    const before = this.firstSeqCache
    this.firstSeqCache = cutoff // readers skip ahead at once; a cursor below it resumes at the oldest retained
    await this.db.clear({ gte: EVENT_RANGE_START, lt: eventKey(cutoff) })
    for (const c of CATEGORY_BY_CODE) {
      const r = categoryRange(c)
      // A block starting just below the cutoff may still hold live seqs: keep those.
      await this.db.clear({ gte: r.start, lt: categoryKey(c, Math.max(0, cutoff - MAX_WRITE_EVENTS)) })
    }
    await this.db.compactRange(EVENT_RANGE_START as never, eventKey(cutoff) as never).catch(() => undefined)
    this.log.info({ before, cutoff }, 'retention removed old events')
    return cutoff - before
  }

  /**
   * Small named values other modules keep next to the log's own metadata (e.g. the fleet shipper's
   * acknowledged seq). Kept under 'm' 'x:' + name, so they can never overwrite 'seq' or 'clean'.
   */
  async readMeta(name: string): Promise<Buffer | undefined> {
    return this.db.get(metaKey(MODULE_META_PREFIX + name))
  }

  /** Writes one named value durably (sync), outside the event batches. Throws once the log is closed. */
  async writeMeta(name: string, value: Buffer): Promise<void> {
    if (!this.open) throw new Error('event log is closed')
    await this.db.put(metaKey(MODULE_META_PREFIX + name), value, { sync: true } as never)
  }

  /**
   * Moves the records an older version kept in a sublevel of this database (extension metadata
   * lived in '!extensions!') out: `into` stores them elsewhere, then they are deleted here. Safe to
   * repeat after a crash in between (`into` sees the same records again).
   */
  async moveOutLegacySublevel<V>(name: string, into: (entries: [string, V][]) => Promise<void>): Promise<number> {
    const sub = this.db.sublevel<string, V>(name, { keyEncoding: 'utf8', valueEncoding: 'json' })
    const entries = await sub.iterator().all()
    if (entries.length === 0) return 0
    await into(entries)
    await sub.clear()
    return entries.length
  }

  /** Flushes, writes the clean-shutdown marker and closes. Appends after this are dropped. */
  async close(): Promise<void> {
    if (!this.open) return
    if (this.retentionTimer) clearInterval(this.retentionTimer)
    if (this.syncTimer) {
      clearTimeout(this.syncTimer)
      this.syncTimer = undefined
    }
    if (this.retentionRunning) await this.retentionRunning.catch(() => undefined)
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
    await this.db.put(CLEAN_META, Buffer.from('1'), { sync: true } as never)
    await this.db.close()
  }
}
