// The read side of the event log: cursor and time-window pages, and the merge of the per-category
// index blocks. Reads only what a LevelDB write has made durable.
import type { ClassicLevel } from 'classic-level'
import type { Category } from '../events/index.js'
import {
  eventKey,
  seqOfEventKey,
  categoryKey,
  seqOfCategoryKey,
  decodeRecord,
  tsOfRecord,
  EVENT_RANGE_START,
  EVENT_RANGE_END,
  CATEGORY_BY_CODE,
  MAX_WRITE_EVENTS,
} from './keys.js'
import { DEFAULT_READ_MAX_BYTES, PageCut, pageLimit, seekPosition, type ReadQuery, type ReadResult } from './page.js'

/** The retained range: oldest retained seq and last committed seq (both move while reads run). */
export interface LogPositions {
  readonly firstSeq: number
  readonly lastSeq: number
}

/** Values are fetched in small batches so a byte-bounded page never holds more than a batch beyond its bound. */
const BATCH = 16
/**
 * A scan in seq order asks LevelDB for the rest of the page at once and lets it stop at this many
 * bytes (at least one entry): a page of small events costs a few round trips to LevelDB's thread
 * instead of one per 16, and still never holds more than this beyond its byte bound.
 */
const SCAN_CHUNK_BYTES = 256 * 1024

export class LogReader {
  constructor(
    private readonly db: ClassicLevel<Buffer, Buffer>,
    private readonly positions: LogPositions,
  ) {}

  /** First seq whose ts >= tsUs (or lastSeq + 1 when none): the page module's seek over positions. */
  async seekTs(tsUs: number): Promise<number> {
    const it = this.db.iterator({ gte: EVENT_RANGE_START, lt: EVENT_RANGE_END })
    try {
      const lo = await seekPosition(this.positions.firstSeq, this.positions.lastSeq + 1, tsUs, async mid => {
        it.seek(eventKey(mid))
        const entry = await it.next()
        return entry && { position: seqOfEventKey(entry[0]), key: tsOfRecord(entry[1]) }
      })
      // lo is a position; report the first existing record at or after it.
      it.seek(eventKey(lo))
      const entry = await it.next()
      return entry ? seqOfEventKey(entry[0]) : this.positions.lastSeq + 1
    } finally {
      await it.close()
    }
  }

  async read(q: ReadQuery): Promise<ReadResult> {
    const limit = pageLimit(q)
    let lo = 0
    let hi = Number.MAX_SAFE_INTEGER // exclusive
    if (q.untilUs !== undefined) hi = await this.seekTs(q.untilUs)
    if (q.order === 'asc') {
      if (q.cursor !== undefined) lo = q.cursor
      else if (q.sinceUs !== undefined) lo = await this.seekTs(q.sinceUs)
    } else if (q.cursor !== undefined) {
      hi = Math.min(hi, q.cursor)
    }
    lo = Math.max(lo, this.positions.firstSeq) // a cursor below retention continues at the oldest retained
    if (lo >= hi) return { records: [], hasMore: false, nextCursor: 0 }
    const reverse = q.order === 'desc'
    const cats = q.categories && q.categories.size < CATEGORY_BY_CODE.length ? q.categories : undefined
    const page = new PageCut(limit, q.maxBytes ?? DEFAULT_READ_MAX_BYTES, reverse)
    /** Adds one stored value unless the page is full; false = stop, more exists. */
    const take = (seq: number, v: Uint8Array): boolean => {
      if (!page.fits(v.length)) return false
      page.add(decodeRecord(seq, v), v.length)
      return true
    }
    if (!cats) {
      const it = this.db.iterator({
        gte: eventKey(lo),
        lt: eventKey(hi),
        reverse,
        limit: limit + 1,
        highWaterMarkBytes: SCAN_CHUNK_BYTES,
      })
      try {
        fill: for (;;) {
          const entries = await it.nextv(limit + 1 - page.records.length)
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
    return page.result()
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
        const entries = await it.nextv(BATCH)
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
}
