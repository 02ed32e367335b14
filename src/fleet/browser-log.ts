// One browser's telemetry read back from the fleet stream with the event log's read semantics
// (`fleet serve`): the same ReadQuery in, the same ReadResult out, cursors being telemetry seqs,
// pages cut and positions sought by the store's page module.
//
// A browser's messages sit in the stream in telemetry-seq order and event ts never decreases with
// seq, so a position is found by binary search over stream sequences: each probe is one
// STREAM.MSG.GET with next_by_subj (the browser's first message at or after a stream sequence),
// about log2(stream messages) requests per seek. Pages are then read forward from that position
// with a pull consumer per filter (one filter subject per category asked for, merged by seq like
// the log's category index), so a page costs O(limit x categories) messages, not a scan. A page's
// consumers are kept where it ended for the page that continues there (no seek, no new consumer).
import { CATEGORIES, type Category } from '../events/index.js'
import {
  DEFAULT_READ_MAX_BYTES,
  PageCut,
  pageLimit,
  seekPosition,
  storedBytes,
  type ReadQuery,
  type ReadResult,
  type StoredRecord,
} from '../store/event-log.js'
import { HEADER_SEQ, encodeSubjectToken } from '../nats/subject.js'
import { asUnavailable, type FleetStream, type StreamBounds, type StreamRecord } from './jetstream.js'
import { follow, openReader, PULL_BATCH, PULL_MAX_BYTES, type PullReader } from './pull.js'
import type { Continuations } from './continuations.js'

/** How long a kept reader's first pull may take before a new consumer replaces it. */
const KEPT_READER_CHECK_MS = 1000
/** A reader is kept for the next page only if it buffers at most this much. */
const KEPT_READER_MAX_BYTES = 256 * 1024

/** One browser's messages in the fleet stream, read like the event log (same queries, same pages). */
export class FleetBrowserLog {
  private readonly token: string
  constructor(
    private readonly stream: FleetStream,
    private readonly kept: Continuations,
    readonly browserId: string,
  ) {
    this.token = encodeSubjectToken(browserId)
  }

  private filter(category?: Category): string {
    return `${this.stream.opts.subjectPrefix}.${this.token}.${category ?? '*'}`
  }

  /** True when the stream holds at least one message of this browser. */
  async exists(): Promise<boolean> {
    // From sequence 0: the browser's first message wherever the stream starts (one request).
    return (await this.stream.next(this.filter(), 0)) !== undefined
  }

  /**
   * The first stream position from which every message of this browser has a key >= target
   * (key: telemetry seq, or event ts), searched in [lo, hi): the log's seekTs over stream sequences.
   */
  async seek(key: 'seq' | 'ts', target: number, lo: number, hi: number): Promise<number> {
    const filter = this.filter()
    return seekPosition(lo, hi, target, async position => {
      const m = await this.stream.next(filter, position)
      return m && { position: m.position, key: key === 'seq' ? m.seq : m.ts }
    })
  }

  /** Highest telemetry seq of this browser in the stream (0 when none): the last message of each category. */
  async lastSeq(): Promise<number> {
    const jsm = await this.stream.jsm()
    let highest = 0
    try {
      for (const c of CATEGORIES) {
        this.stream.stats.gets++
        const m = await jsm.streams.getMessage(this.stream.opts.stream, { last_by_subj: this.filter(c) })
        const seq = Number(m?.header.get(HEADER_SEQ))
        if (Number.isSafeInteger(seq) && seq > highest) highest = seq
      }
    } catch (err) {
      throw asUnavailable(err)
    }
    return highest
  }

  /**
   * Every message of this browser stored after now, batched per I/O turn: the feed starts at the
   * stream's next sequence before lastSeq is asked, so nothing stored in between is missed.
   */
  async follow(
    onRecords: (records: StoredRecord[]) => void,
    onEnd: (err: Error) => void,
  ): Promise<{ lastSeq: number; stop(): void }> {
    const { last } = await this.stream.bounds()
    let batch: StoredRecord[] = []
    let scheduled = false
    const flush = () => {
      scheduled = false
      const records = batch
      batch = []
      if (records.length > 0) onRecords(records)
    }
    const feed = await follow(
      this.stream,
      this.filter(),
      last + 1,
      r => {
        batch.push(r)
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      },
      onEnd,
    )
    try {
      return { lastSeq: await this.lastSeq(), stop: () => feed.stop() }
    } catch (err) {
      feed.stop()
      throw err
    }
  }

  /** A page exactly as EventLog.read answers the same query over the same events. */
  async read(q: ReadQuery): Promise<ReadResult> {
    const limit = pageLimit(q)
    let known: StreamBounds | undefined
    const bounds = async () => (known ??= await this.stream.bounds())
    /** A cursor's position: from this process's hint when one probe confirms it, else a seek. */
    const cursorPos = async (cursor: number) =>
      (await this.hinted(cursor)) ?? this.seek('seq', cursor, (await bounds()).first, (await bounds()).last + 1)
    let hiPos = Infinity // exclusive; asc reads until the filter has nothing more
    if (q.untilUs !== undefined) {
      const b = await bounds()
      hiPos = await this.seek('ts', q.untilUs, b.first, b.last + 1)
    }
    const cats = q.categories && q.categories.size < CATEGORIES.length ? [...q.categories] : undefined
    const filters = cats ? cats.map(c => this.filter(c)) : [this.filter()]
    const want = limit + 1
    const maxBytes = q.maxBytes ?? DEFAULT_READ_MAX_BYTES
    let result: ReadResult
    if (q.order === 'asc') {
      let start: Promise<number> | undefined
      const from = () =>
        (start ??=
          q.cursor !== undefined
            ? cursorPos(q.cursor)
            : q.sinceUs !== undefined
              ? bounds().then(b => this.seek('ts', q.sinceUs!, b.first, b.last + 1))
              : bounds().then(b => b.first))
      const { records, readers } = await this.forward(filters, from, hiPos, want, maxBytes, q.cursor)
      result = page(records, limit, maxBytes, false)
      const last = result.records[result.records.length - 1] as StreamRecord | undefined
      for (const { filter, reader, taken } of readers) {
        // What this filter read beyond the page is where the next page starts.
        if (last) reader.unread(taken.filter(r => r.seq > last.seq))
        if (result.hasMore && reader.bufferedBytes <= KEPT_READER_MAX_BYTES)
          this.kept.keepReader(this.token, filter, result.nextCursor, reader)
        else reader.close()
      }
    } else {
      const b = await bounds()
      if (b.last === 0) return { records: [], hasMore: false, nextCursor: 0 }
      if (q.cursor !== undefined) hiPos = Math.min(hiPos, await cursorPos(q.cursor))
      hiPos = Math.min(hiPos, b.last + 1)
      if (b.first >= hiPos) return { records: [], hasMore: false, nextCursor: 0 }
      result = page(await this.backward(filters, b.first, hiPos, want, maxBytes), limit, maxBytes, true)
    }
    const last = result.records[result.records.length - 1] as StreamRecord | undefined
    if (result.hasMore && last) this.kept.hint(this.token, result.nextCursor, last)
    return result
  }

  /**
   * The position of `cursor` when this process answered the page that ended there: the hint names
   * the last record of that page, and one probe confirms it is still there (messages never move;
   * retention or a recreated stream make the probe disagree, and the caller seeks instead).
   */
  private async hinted(cursor: number): Promise<number | undefined> {
    const h = this.kept.hintOf(this.token, cursor)
    if (!h) return undefined
    const m = await this.stream.next(this.filter(), h.position)
    if (!m || m.position !== h.position || m.seq !== h.seq) return undefined
    // asc continues after that record (cursor = seq + 1); desc ends before it (cursor = seq).
    return cursor === h.seq ? h.position : h.position + 1
  }

  /**
   * The candidates of an asc page in [from, hiPos): the filters merged by seq, up to `want`
   * records or until their bytes pass maxBytes (the record that passes is the last candidate, as
   * the log's page rule needs), with each filter's reader and the records taken from it. A reader
   * kept where the previous page ended (same cursor) continues; otherwise one starts at `from()`
   * (a hint probe or a seek).
   */
  private async forward(
    filters: string[],
    from: () => Promise<number>,
    hiPos: number,
    want: number,
    maxBytes: number,
    cursor: number | undefined,
  ): Promise<{ records: StreamRecord[]; readers: { filter: string; reader: PullReader; taken: StreamRecord[] }[] }> {
    const readers: { filter: string; reader: PullReader; taken: StreamRecord[] }[] = []
    const records: StreamRecord[] = []
    try {
      for (const filter of filters) {
        let reader = cursor !== undefined ? this.kept.takeReader(this.token, filter, cursor) : undefined
        reader?.startPage()
        if (reader) {
          // A kept consumer the server dropped meanwhile (restart, inactivity) does not answer its
          // next pull: asked now, briefly, and replaced by a new one if it is gone.
          const ok = await reader.prefetch(want, maxBytes, KEPT_READER_CHECK_MS).then(
            () => true,
            () => false,
          )
          if (!ok) {
            reader.close()
            reader = undefined
          }
        }
        if (!reader) {
          const start = await from()
          if (start >= hiPos) continue
          reader = await openReader(this.stream, filter, start)
        }
        readers.push({ filter, reader, taken: [] })
      }
      let bytes = 0
      while (records.length < want && bytes <= maxBytes) {
        let best: { r: StreamRecord; i: number } | undefined
        for (let i = 0; i < readers.length; i++) {
          const r = await readers[i]!.reader.peek(hiPos, want - records.length, maxBytes - bytes)
          if (r && (!best || r.seq < best.r.seq)) best = { r, i }
        }
        if (!best) break
        const r = readers[best.i]!.reader.take()
        readers[best.i]!.taken.push(r)
        records.push(r)
        bytes += storedBytes(r)
      }
    } catch (err) {
      for (const r of readers) r.reader.close()
      throw err
    }
    return { records, readers }
  }

  /**
   * The candidates of a desc page in [loPos, hiPos), newest first: windows of stream positions
   * ending at hiPos, each twice as long as the last, read forward (only the part not read yet)
   * until `want` are found or loPos is reached. A browser with a share 1/k of the stream costs
   * about log2(k) windows for a page; a sparse category log2(distance to its events). Only the
   * newest records a page can hold are kept (want, and maxBytes plus the one that passes it).
   */
  private async backward(
    filters: string[],
    loPos: number,
    hiPos: number,
    want: number,
    maxBytes: number,
  ): Promise<StreamRecord[]> {
    let found: StreamRecord[] = [] // newest first
    let upper = hiPos // exclusive position of what is read already
    for (let span = want; ; span *= 2) {
      const from = Math.max(loPos, upper - span)
      const window: StreamRecord[] = []
      for (const f of filters) window.push(...(await this.collect(f, from, upper, want, maxBytes)))
      found = newest([...found, ...window], want, maxBytes)
      upper = from
      if (found.length >= want || from <= loPos) break
    }
    return found
  }

  /** The newest records of one filter in [from, to) a desc page can use (see newest()). */
  private async collect(
    filter: string,
    from: number,
    to: number,
    want: number,
    maxBytes: number,
  ): Promise<StreamRecord[]> {
    if (from >= to) return []
    const reader = await openReader(this.stream, filter, from)
    try {
      let kept: StreamRecord[] = []
      let bytes = 0
      for (;;) {
        const r = await reader.peek(to, PULL_BATCH, PULL_MAX_BYTES)
        if (!r) return kept
        kept.push(reader.take())
        bytes += r.envelopeBytes.byteLength
        // Trimmed as it grows: older records past what a page can hold are never needed.
        if (kept.length > 2 * want || bytes > 2 * (maxBytes + PULL_MAX_BYTES)) {
          kept = newest(kept, want, maxBytes).reverse()
          bytes = kept.reduce((n, k) => n + k.envelopeBytes.byteLength, 0)
        }
      }
    } finally {
      reader.close()
    }
  }
}

/**
 * Newest first, only what a desc page can use: at most `want` records, and no older record once
 * the newer ones pass maxBytes (the one that passes stays: it is the page's "more" candidate).
 */
function newest(records: StreamRecord[], want: number, maxBytes: number): StreamRecord[] {
  const sorted = mergeBySeq(records, true)
  const out: StreamRecord[] = []
  let bytes = 0
  for (const r of sorted) {
    if (out.length >= want || bytes > maxBytes) break
    out.push(r)
    bytes += storedBytes(r)
  }
  return out
}

function mergeBySeq(records: StreamRecord[], newestFirst: boolean): StreamRecord[] {
  return records.sort(newestFirst ? (a, b) => b.seq - a.seq : (a, b) => a.seq - b.seq)
}

/** The log's page rule over the merged candidates (one PageCut for the log and the fleet). */
function page(candidates: StreamRecord[], limit: number, maxBytes: number, reverse: boolean): ReadResult {
  const cut = new PageCut(limit, maxBytes, reverse)
  for (const r of candidates) if (!cut.take(r)) break
  return cut.result()
}
