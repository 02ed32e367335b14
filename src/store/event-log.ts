// The durable event log: one LevelDB, one facade. The parts live beside it, one idea each: the
// writer (group commit, durable seq), the reader (pages, category merge), retention, the log's own
// metadata and recovery, and named values for other modules. Knows nothing of CDP or HTTP.
import { ClassicLevel } from 'classic-level'
import type { TelemetryEvent } from '../events/index.js'
import { silentLogger } from '../log.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import type { Logger } from '../log.js'
import { LogWriter, WRITE_MERGE_EVENTS, type Appended, type CommitListener, type WriterHealth } from './log-writer.js'
import { LogReader } from './log-reader.js'
import type { ReadQuery, ReadResult } from './page.js'
import { Retention } from './retention.js'
import { markClean, recover } from './log-meta.js'
import { ModuleMeta } from './module-meta.js'

export type { StoredRecord } from './keys.js'
export { RECORD_HEADER_BYTES } from './keys.js'
export type { CommitListener } from './log-writer.js'
export {
  DEFAULT_READ_MAX_BYTES,
  PageCut,
  pageLimit,
  seekPosition,
  storedBytes,
  type PositionProbe,
  type ReadQuery,
  type ReadResult,
} from './page.js'

export interface EventLogOptions {
  path: string
  logger?: Logger
  /** Retention by total bytes of stored events (default 512 MiB). */
  maxBytes?: number
  /** Retention by age (default 7 days). */
  maxAgeMs?: number
  /** How often retention runs in the background (default 60 s; 0 disables the timer). */
  retentionIntervalMs?: number
  /**
   * Group commit: flush after this long (default 25 ms) ... Each LevelDB write costs CPU whatever its
   * size (a worker-thread handoff and a wakeup each way), so fewer, larger writes cost less (figures:
   * bench/README.md, store ingest).
   */
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

export interface LogHealth extends WriterHealth {
  firstSeq: number
  lastSeq: number
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

export class EventLog {
  readonly path: string
  /** True when the previous process using this data dir stopped without closing the log. */
  readonly previousStopWasUnclean: boolean
  private firstSeqCache: number
  private readonly writer: LogWriter
  private readonly reader: LogReader
  private readonly retention: Retention
  private readonly moduleMeta: ModuleMeta

  private constructor(
    private readonly db: ClassicLevel<Buffer, Buffer>,
    opts: EventLogOptions,
    state: Awaited<ReturnType<typeof recover>>,
  ) {
    this.path = opts.path
    const logger = opts.logger ?? silentLogger
    this.firstSeqCache = state.firstSeq
    this.previousStopWasUnclean = state.unclean
    this.writer = new LogWriter(
      db,
      {
        commitDelayMs: opts.commitDelayMs ?? 25,
        // A batch never exceeds one write (index block offsets are uint16).
        commitMaxEvents: Math.min(Math.max(1, opts.commitMaxEvents ?? 256), WRITE_MERGE_EVENTS),
        maxPendingEvents: opts.maxPendingEvents ?? 100_000,
        seqReserveBlock: Math.max(1, opts.seqReserveBlock ?? 4096),
        syncIntervalMs: opts.syncIntervalMs ?? 1000,
      },
      state,
      logger,
    )
    this.reader = new LogReader(db, this)
    this.retention = new Retention(
      db,
      {
        firstSeq: () => this.firstSeqCache,
        lastSeq: () => this.writer.lastSeq,
        isOpen: () => this.writer.isOpen,
        seekTs: tsUs => this.reader.seekTs(tsUs),
        advanceFirstSeq: seq => {
          this.firstSeqCache = seq
        },
      },
      {
        maxBytes: opts.maxBytes ?? DEFAULT_SETTINGS.retentionBytes,
        maxAgeMs: opts.maxAgeMs ?? DEFAULT_SETTINGS.retentionAgeMs,
        retentionIntervalMs: opts.retentionIntervalMs ?? 60_000,
      },
      logger,
    )
    this.moduleMeta = new ModuleMeta(db, () => this.writer.isOpen)
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
    const log = new EventLog(db, opts, await recover(db))
    log.retention.start()
    return log
  }

  /** Bytes of encoded events appended and not yet committed (the pipeline's pressure signal). */
  get pendingBytes(): number {
    return this.writer.pendingBytes
  }

  /** Highest ts ever stored: the pipeline keeps ts non-decreasing from here across restarts. */
  get lastStoredTs(): number {
    return this.writer.lastStoredTs
  }
  get lastSeq(): number {
    return this.writer.lastSeq
  }
  /**
   * The last seq handed out (appended or skipped): every event the pipeline took before now has a
   * seq at or below it (it is committed within the group-commit delay, or is a gap). What a
   * recording frame's after_seq is taken from, so a frame that arrives after an event is never
   * placed before it.
   */
  get lastAssignedSeq(): number {
    return this.writer.lastAssignedSeq
  }
  get firstSeq(): number {
    return this.firstSeqCache
  }

  /**
   * Assigns the next seq, buffers the envelope for the next group commit and returns it with a
   * promise that resolves true once durable (false if it had to be dropped). Never throws.
   */
  append(event: TelemetryEvent, eventJson: string, eventBytes?: number): Appended {
    return this.writer.append(event, eventJson, eventBytes)
  }

  /**
   * Consumes the next seq without storing anything: readers see the gap, as for any dropped event
   * (the pipeline's shed and capped drops). Survives restarts: the seq meta records it.
   */
  skipSeq(): number {
    return this.writer.skipSeq()
  }

  /** Called with each committed batch, in seq order, after it is durable and readable. */
  onCommit(listener: CommitListener): () => void {
    return this.writer.onCommit(listener)
  }

  /** Called with records that will never be stored (buffer overflow while writes fail, append after close). */
  onDrop(listener: CommitListener): () => void {
    return this.writer.onDrop(listener)
  }

  /** Resolves once everything appended so far is committed (or dropped). */
  flush(): Promise<void> {
    return this.writer.flush()
  }

  health(): LogHealth {
    return { ...this.writer.health(), firstSeq: this.firstSeqCache, lastSeq: this.writer.lastSeq }
  }

  /** First seq whose ts >= tsUs (or lastSeq + 1 when none): binary search over positions, O(log n) seeks. */
  seekTs(tsUs: number): Promise<number> {
    return this.reader.seekTs(tsUs)
  }

  read(q: ReadQuery): Promise<ReadResult> {
    return this.reader.read(q)
  }

  /** Runs one retention pass now (also runs on a background timer). Returns events deleted. */
  runRetention(nowUs?: number): Promise<number> {
    return this.retention.run(nowUs)
  }

  /** Bytes of stored events as LevelDB estimates them (on-disk tables; the memtable is not counted). */
  storedBytes(): Promise<number> {
    return this.retention.storedBytes()
  }

  /**
   * Small named values other modules keep next to the log's own metadata (e.g. the fleet shipper's
   * acknowledged seq); they can never overwrite the log's own.
   */
  readMeta(name: string): Promise<Buffer | undefined> {
    return this.moduleMeta.read(name)
  }

  /** Writes one named value durably (sync), outside the event batches. Throws once the log is closed. */
  writeMeta(name: string, value: Buffer): Promise<void> {
    return this.moduleMeta.write(name, value)
  }

  /** Flushes, writes the clean-shutdown marker and closes. Appends after this are dropped. */
  async close(): Promise<void> {
    if (!this.writer.isOpen) return
    this.writer.stopIdleSync()
    await this.retention.stop()
    await this.writer.close()
    await markClean(this.db)
    await this.db.close()
  }
}
