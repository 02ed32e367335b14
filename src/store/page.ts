// The one page rule of every telemetry read, the log's and the fleet stream's alike: a page holds
// up to `limit` records and `maxBytes` of stored bytes (at least one record), says whether more
// exists and where the next page starts; a time or seq position is found by binary search with one
// probe per step. Readers differ only in how they fetch records, never in how a page is cut.
import type { Category } from '../events/index.js'
import { RECORD_HEADER_BYTES, type StoredRecord } from './keys.js'

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

/** Bytes of stored records one read materialises at most (plus one batch of values in flight). */
export const DEFAULT_READ_MAX_BYTES = 8 * 1024 * 1024

export interface ReadResult {
  records: StoredRecord[]
  hasMore: boolean
  /** Where the next page starts; 0 when there is nothing more. */
  nextCursor: number
}

/** A record's size as the log stores it (header + envelope): both readers count pages in these bytes. */
export function storedBytes(record: { readonly envelopeBytes?: Uint8Array; readonly json: string }): number {
  return RECORD_HEADER_BYTES + (record.envelopeBytes?.byteLength ?? Buffer.byteLength(record.json))
}

/** A query's page size: a whole number, at least 1. */
export function pageLimit(q: Pick<ReadQuery, 'limit'>): number {
  return Math.max(1, Math.floor(q.limit))
}

/** Records read in page order go in until the page is full by count or bytes; then more exists. */
export class PageCut<R extends StoredRecord = StoredRecord> {
  readonly records: R[] = []
  private bytes = 0
  private more = false

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
    private readonly reverse: boolean,
  ) {}

  /** Whether a record of `bytes` stored bytes still fits; false marks that more exists (stop reading). */
  fits(bytes: number): boolean {
    if (this.records.length >= this.limit || (this.records.length > 0 && this.bytes + bytes > this.maxBytes)) {
      this.more = true
      return false
    }
    return true
  }

  /** Adds one record that fits(). */
  add(record: R, bytes: number): void {
    this.records.push(record)
    this.bytes += bytes
  }

  /** fits() then add(): false = the page is full and more exists. */
  take(record: R, bytes: number = storedBytes(record)): boolean {
    if (!this.fits(bytes)) return false
    this.add(record, bytes)
    return true
  }

  /** The page: asc continues after its last record, desc before it; 0 when nothing more exists. */
  result(): ReadResult {
    const last = this.records[this.records.length - 1]
    const nextCursor = this.more && last ? (this.reverse ? last.seq : last.seq + 1) : 0
    return { records: this.records, hasMore: this.more && nextCursor > 0, nextCursor }
  }
}

/** The first record at or after a position: where it sits and its key (seq or ts). */
export type PositionProbe = (position: number) => Promise<{ position: number; key: number } | undefined>

/**
 * The first position in [lo, hi) from which every record's key is >= target (hi when none is):
 * binary search with one probe per step, O(log n) probes. Keys never decrease with position (seq
 * and ts both hold that), which is what makes a time window a seek.
 */
export async function seekPosition(lo: number, hi: number, target: number, probe: PositionProbe): Promise<number> {
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2)
    const found = await probe(mid)
    if (!found || found.position >= hi) {
      hi = mid
      continue
    }
    if (found.key >= target) hi = mid
    else lo = found.position + 1
  }
  return lo
}
