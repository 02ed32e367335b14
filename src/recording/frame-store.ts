// The screen recording's frame store: JPEG frames next to the event log, never in it. One file per
// frame under <dir>/frames/, an append-only journal of their metadata (<dir>/index.jsonl), and the
// index in memory (frame ids, ts and after_seq all non-decreasing, so pages are binary searches).
//
// Bounded: the JPEG bytes stored plus those waiting to be written never exceed maxBytes (oldest
// frames removed first: retention), nor frames maxFrames. A frame that cannot be kept (the writer is
// behind: backpressure; a write failed; larger than the whole bound) still consumes its frame id,
// so readers see a gap in the ids, as they see a seq gap for a dropped event; `gaps()` says why.
//
// Crash safety: a frame is written to a temp file, renamed to its final name, and only then its
// journal line is appended; it is listed (and served) only after that. Retention removes the frame
// from the index before its file. At open the journal is read back and every entry checked against
// its file (present, the recorded size; after an unclean stop the newest entries also by hash):
// an entry without a whole JPEG is dropped, a file without an entry deleted, temp files swept. So no
// index entry ever points at a missing or torn JPEG, whatever point a crash interrupted.
import { mkdir, open, readdir, readFile, rename, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { silentLogger, type Logger } from '../log.js'
import { writeFileAtomic } from '../util/atomic-file.js'
import {
  frameFile,
  hashOf,
  JOURNAL,
  lowerBound,
  metaOf,
  readJournal,
  type Entry,
  type FrameMeta,
} from './frame-journal.js'

export type { FrameMeta } from './frame-journal.js'

export type FrameInput = Omit<FrameMeta, 'frame_id' | 'bytes'> & { jpeg: Buffer }

export type FrameDropReason = 'backpressure' | 'write_error' | 'too_large'
export type GapReason = FrameDropReason | 'retention' | 'unclean_stop'

/** A run of frame ids that readers will not find, and why. */
export interface FrameGap {
  /** First and last missing frame id. */
  from_frame_id: number
  to_frame_id: number
  reason: GapReason
  /** When it happened (the last frame of the run; Unix µs). */
  ts: number
}

export type AddResult = { frame_id: number; dropped?: undefined } | { frame_id: number; dropped: FrameDropReason }

export interface FrameStoreStats {
  frames: number
  bytes: number
  max_bytes: number
  pending_frames: number
  pending_bytes: number
  /** Oldest and newest frame ids held (0 when empty). */
  first_frame_id: number
  last_frame_id: number
  stored_total: number
  dropped: Record<FrameDropReason, number>
  removed_by_retention: number
}

/** The file operations the store makes; tests slow them down or make them fail. */
export interface FrameStoreFs {
  writeFile: (path: string, data: Uint8Array) => Promise<void>
  rename: typeof rename
  unlink: typeof unlink
}
const realFs: FrameStoreFs = { writeFile: (p, d) => writeFile(p, d, { mode: 0o600 }), rename, unlink }

export interface FrameStoreOptions {
  /** The store's directory (the daemon: <data-dir>/recording). */
  dir: string
  /** JPEG bytes kept at most, including those being written. */
  maxBytes: number
  /** Frames kept at most (bounds the in-memory index; default 100,000). */
  maxFrames?: number
  /** Frames waiting for the writer at most; more are dropped (backpressure, a gap). Default 16. */
  maxPendingFrames?: number
  /** Bytes waiting for the writer at most (default 8 MiB). */
  maxPendingBytes?: number
  logger?: Logger
  fs?: FrameStoreFs
}

/** Gaps remembered for gaps() (the oldest are forgotten). */
const GAPS_KEPT = 256
/** After an unclean stop, the newest entries whose files are also checked by hash. */
const VERIFY_TAIL = 64
const CLEAN = 'clean'
const TEMP_PREFIX = '.tmp-'

interface Pending {
  entry: Entry
  jpeg: Buffer
}

export class FrameStore {
  readonly dir: string
  private readonly framesDir: string
  private readonly opts: Required<Omit<FrameStoreOptions, 'logger' | 'fs'>>
  private readonly logger: Logger
  private readonly fs: FrameStoreFs
  /** Committed frames, oldest first (frame_id, ts, after_seq non-decreasing). */
  private index: Entry[] = []
  /** Index of the oldest live entry in `index` (evicted ones before it are spliced out in chunks). */
  private head = 0
  private committedBytes = 0
  private readonly pending: Pending[] = []
  private pendingBytes = 0
  private nextId: number
  private lastTs = 0
  private lastAfterSeq = 0
  private journal: FileHandle | undefined
  /** Journal lines of frames no longer held (compacted away when they outnumber the live ones). */
  private deadLines = 0
  private writing: Promise<void> | undefined
  private closed = false
  private readonly recentGaps: FrameGap[] = []
  private readonly unlinks = new Set<Promise<unknown>>()
  private readonly counts = { stored: 0, retention: 0, dropped: { backpressure: 0, write_error: 0, too_large: 0 } }

  private constructor(opts: FrameStoreOptions, nextId: number) {
    this.dir = opts.dir
    this.framesDir = join(opts.dir, 'frames')
    this.opts = {
      dir: opts.dir,
      maxBytes: opts.maxBytes,
      maxFrames: opts.maxFrames ?? 100_000,
      maxPendingFrames: opts.maxPendingFrames ?? 16,
      maxPendingBytes: opts.maxPendingBytes ?? 8 * 1024 * 1024,
    }
    this.logger = opts.logger ?? silentLogger
    this.fs = opts.fs ?? realFs
    this.nextId = nextId
  }

  /** Opens (creating) the store and recovers it: see the file header. */
  static async open(opts: FrameStoreOptions): Promise<FrameStore> {
    if (!(opts.maxBytes > 0)) throw new Error('FrameStore: maxBytes must be positive')
    const framesDir = join(opts.dir, 'frames')
    await mkdir(framesDir, { recursive: true, mode: 0o700 })
    const logger = opts.logger ?? silentLogger
    const clean = await readFile(join(opts.dir, CLEAN), 'utf8').then(
      t => Number(t.trim()) || 0,
      () => undefined,
    )
    await unlink(join(opts.dir, CLEAN)).catch(() => undefined)
    const { entries, next: journalNext } = await readJournal(join(opts.dir, JOURNAL))
    const files = new Map<number, number>()
    let maxFileId = 0
    for (const name of await readdir(framesDir)) {
      const m = /^(\d{12})\.jpg$/.exec(name)
      if (!m) {
        // Temp files of an interrupted write, and anything else that is not ours to keep.
        await unlink(join(framesDir, name)).catch(() => undefined)
        continue
      }
      const id = Number(m[1])
      maxFileId = Math.max(maxFileId, id)
      files.set(id, (await stat(join(framesDir, name)).catch(() => undefined))?.size ?? -1)
    }
    const kept: Entry[] = []
    const verifyFrom = clean === undefined ? Math.max(0, entries.length - VERIFY_TAIL) : entries.length
    let dropped = 0
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      let ok = files.get(e.frame_id) === e.bytes && (kept.length === 0 || e.frame_id > kept.at(-1)!.frame_id)
      if (ok && i >= verifyFrom) {
        const data = await readFile(frameFile(framesDir, e.frame_id)).catch(() => undefined)
        ok = data !== undefined && hashOf(data) === e.hash
      }
      if (ok) {
        kept.push(e)
        files.delete(e.frame_id)
      } else dropped++
    }
    // Files no entry vouches for: written but not journaled when the process stopped, or torn.
    for (const id of files.keys()) await unlink(frameFile(framesDir, id)).catch(() => undefined)
    if (dropped > 0 || files.size > 0)
      logger.warn({ dropped, orphans: files.size }, 'recording: frames without a whole JPEG or an index entry removed')
    const highest = Math.max(journalNext - 1, kept.at(-1)?.frame_id ?? 0, maxFileId, (clean ?? 1) - 1)
    // After an unclean stop, frames received but not yet written were lost: their ids are skipped.
    const store = new FrameStore(opts, highest + 1 + (clean === undefined && highest > 0 ? 1 : 0))
    if (clean === undefined && highest > 0)
      store.noteGap({
        from_frame_id: highest + 1,
        to_frame_id: highest + 1,
        reason: 'unclean_stop',
        ts: Date.now() * 1000,
      })
    store.index = kept
    for (const e of kept) store.committedBytes += e.bytes
    store.lastTs = kept.at(-1)?.ts ?? 0
    store.lastAfterSeq = kept.at(-1)?.after_seq ?? 0
    store.enforceBounds(0, 0)
    await store.rewriteJournal()
    return store
  }

  /**
   * Takes one frame (never blocks, never throws): gives it the next frame id and queues it for the
   * writer, or drops it (the id is consumed: a gap) when it cannot be kept.
   */
  add(input: FrameInput): AddResult {
    const frame_id = this.nextId++
    const bytes = input.jpeg.length
    // Non-decreasing in frame_id order, so time windows are binary searches (a frame held back by
    // the rate cap may be stored after a newer one of another page).
    const ts = Math.max(Math.floor(input.ts), this.lastTs)
    if (this.closed) return this.drop(frame_id, ts, 'write_error')
    if (bytes > this.opts.maxBytes) return this.drop(frame_id, ts, 'too_large')
    if (this.pending.length >= this.opts.maxPendingFrames || this.pendingBytes + bytes > this.opts.maxPendingBytes)
      return this.drop(frame_id, ts, 'backpressure')
    if (!this.enforceBounds(bytes, 1)) return this.drop(frame_id, ts, 'backpressure')
    this.lastTs = ts
    this.lastAfterSeq = Math.max(input.after_seq, this.lastAfterSeq)
    const entry: Entry = {
      frame_id,
      ts,
      target_id: input.target_id,
      after_seq: this.lastAfterSeq,
      width: input.width,
      height: input.height,
      bytes,
      hash: hashOf(input.jpeg),
    }
    if (input.viewport_width !== undefined) entry.viewport_width = input.viewport_width
    if (input.viewport_height !== undefined) entry.viewport_height = input.viewport_height
    this.pending.push({ entry, jpeg: input.jpeg })
    this.pendingBytes += bytes
    this.writing ??= this.writeLoop().finally(() => {
      this.writing = undefined
    })
    return { frame_id }
  }

  /**
   * A page of frames, oldest first: from the frame id `cursor` (when given; sinceUs is then
   * ignored), else from the first frame with ts >= sinceUs; frames with ts >= untilUs excluded.
   */
  list(q: { cursor?: number; sinceUs?: number; untilUs?: number; limit: number }): {
    items: FrameMeta[]
    hasMore: boolean
    nextCursor: number
  } {
    const idx = this.index
    let i =
      q.cursor !== undefined
        ? lowerBound(idx, this.head, e => e.frame_id < q.cursor!)
        : lowerBound(idx, this.head, e => e.ts < (q.sinceUs ?? -Infinity))
    const items: FrameMeta[] = []
    const inWindow = (e: Entry) => q.untilUs === undefined || e.ts < q.untilUs
    for (; i < idx.length && items.length < q.limit && inWindow(idx[i]!); i++) items.push(metaOf(idx[i]!))
    const next = idx[i]
    const hasMore = next !== undefined && inWindow(next)
    return { items, hasMore, nextCursor: hasMore ? next.frame_id : 0 }
  }

  /** The metadata of one held frame. */
  get(frameId: number): FrameMeta | undefined {
    const e = this.find(frameId)
    return e && metaOf(e)
  }

  /** The JPEG of one frame, or undefined when unknown (or removed by retention meanwhile). */
  async read(frameId: number): Promise<Buffer | undefined> {
    if (!this.find(frameId)) return undefined
    try {
      return await readFile(frameFile(this.framesDir, frameId))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }

  /** Recent gaps in the frame ids, oldest first (at most 256 remembered). */
  gaps(): FrameGap[] {
    return this.recentGaps.map(g => ({ ...g }))
  }

  stats(): FrameStoreStats {
    const live = this.index.length - this.head
    return {
      frames: live,
      bytes: this.committedBytes,
      max_bytes: this.opts.maxBytes,
      pending_frames: this.pending.length,
      pending_bytes: this.pendingBytes,
      first_frame_id: live > 0 ? this.index[this.head]!.frame_id : 0,
      last_frame_id: live > 0 ? this.index.at(-1)!.frame_id : 0,
      stored_total: this.counts.stored,
      dropped: { ...this.counts.dropped },
      removed_by_retention: this.counts.retention,
    }
  }

  /** Resolves once every frame queued so far is written (or dropped). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing
    await Promise.all([...this.unlinks])
  }

  /** Writes what is queued, then closes the journal and marks the stop clean. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.flush()
    await this.journal?.close()
    this.journal = undefined
    await writeFileAtomic(join(this.dir, CLEAN), String(this.nextId))
  }

  private find(frameId: number): Entry | undefined {
    const i = lowerBound(this.index, this.head, e => e.frame_id < frameId)
    const e = this.index[i]
    return e?.frame_id === frameId ? e : undefined
  }

  private drop(frame_id: number, ts: number, reason: FrameDropReason): AddResult {
    this.counts.dropped[reason]++
    this.noteGap({ from_frame_id: frame_id, to_frame_id: frame_id, reason, ts })
    return { frame_id, dropped: reason }
  }

  /** Records a gap, merged into the previous one when it continues it for the same reason. */
  private noteGap(g: FrameGap): void {
    const last = this.recentGaps.at(-1)
    if (last && last.reason === g.reason && g.from_frame_id <= last.to_frame_id + 1) {
      last.to_frame_id = Math.max(last.to_frame_id, g.to_frame_id)
      last.ts = g.ts
      return
    }
    this.recentGaps.push(g)
    if (this.recentGaps.length > GAPS_KEPT) this.recentGaps.shift()
  }

  /**
   * Removes the oldest frames until `bytes` more (and `frames` more) fit the bounds with what is
   * stored and queued. False when they cannot fit even with nothing stored (the queue holds the rest).
   */
  private enforceBounds(bytes: number, frames: number): boolean {
    const { maxBytes, maxFrames } = this.opts
    const over = () =>
      this.committedBytes + this.pendingBytes + bytes > maxBytes ||
      this.index.length - this.head + this.pending.length + frames > maxFrames
    let removed: Entry | undefined
    let first: Entry | undefined
    while (over() && this.head < this.index.length) {
      removed = this.index[this.head]!
      first ??= removed
      this.index[this.head++] = undefined as unknown as Entry
      this.committedBytes -= removed.bytes
      this.counts.retention++
      this.deadLines++
      const p = this.fs.unlink(frameFile(this.framesDir, removed.frame_id)).catch(err => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
          this.logger.warn({ err, frameId: removed!.frame_id }, 'recording: could not remove a frame file')
      })
      this.unlinks.add(p)
      void p.finally(() => this.unlinks.delete(p))
    }
    if (first && removed) {
      this.noteGap({
        from_frame_id: first.frame_id,
        to_frame_id: removed.frame_id,
        reason: 'retention',
        ts: removed.ts,
      })
    }
    // Splice evicted slots out now and then, so the array does not grow for ever.
    if (this.head > 1024 && this.head * 2 > this.index.length) {
      this.index = this.index.slice(this.head)
      this.head = 0
    }
    return !over()
  }

  private async writeLoop(): Promise<void> {
    while (this.pending.length > 0) {
      const p = this.pending[0]!
      const { entry } = p
      const path = frameFile(this.framesDir, entry.frame_id)
      const tmp = join(this.framesDir, `${TEMP_PREFIX}${entry.frame_id}`)
      try {
        await this.fs.writeFile(tmp, p.jpeg)
        await this.fs.rename(tmp, path)
        await this.appendJournal(entry)
        this.index.push(entry)
        this.committedBytes += entry.bytes
        this.counts.stored++
      } catch (err) {
        this.counts.dropped.write_error++
        this.noteGap({
          from_frame_id: entry.frame_id,
          to_frame_id: entry.frame_id,
          reason: 'write_error',
          ts: entry.ts,
        })
        this.logger.warn({ err, frameId: entry.frame_id }, 'recording: frame could not be written (a gap)')
        await this.fs.unlink(tmp).catch(() => undefined)
        await this.fs.unlink(path).catch(() => undefined)
      } finally {
        this.pending.shift()
        this.pendingBytes -= entry.bytes
      }
      if (this.deadLines > 1024 && this.deadLines > this.index.length - this.head) await this.rewriteJournal()
    }
  }

  private async appendJournal(e: Entry): Promise<void> {
    this.journal ??= await open(join(this.dir, JOURNAL), 'a', 0o600)
    await this.journal.write(JSON.stringify(e) + '\n')
  }

  /** Rewrites the journal with the live entries only (temp file, fsync, rename), headed by the next id. */
  private async rewriteJournal(): Promise<void> {
    await this.journal?.close()
    this.journal = undefined
    let text = JSON.stringify({ next: this.nextId }) + '\n'
    for (let i = this.head; i < this.index.length; i++) text += JSON.stringify(this.index[i]) + '\n'
    try {
      await writeFileAtomic(join(this.dir, JOURNAL), text)
      this.deadLines = 0
    } catch (err) {
      this.logger.warn({ err }, 'recording: could not compact the frame journal')
    }
  }
}
