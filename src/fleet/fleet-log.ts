// One browser's telemetry read back from the fleet stream, with the event log's read semantics
// (`fleet serve`): the same ReadQuery in, the same ReadResult out, cursors being telemetry seqs.
//
// A browser's messages sit in the stream in telemetry-seq order and event ts never decreases with
// seq, so a position is found by binary search over stream sequences: each probe is one
// STREAM.MSG.GET with next_by_subj (the browser's first message at or after a stream sequence),
// about log2(stream messages) requests per seek. Pages are then read forward from that position
// with a pull consumer per filter (one filter subject per category asked for, merged by seq like
// the log's category index), so a page costs O(limit x categories) messages, not a scan. A page's
// consumers are kept where it ended for the page that continues there (no seek, no new consumer).
import { createInbox, nanos, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node'
import { JetStreamApiError, jetstreamManager, type JetStreamManager, type MsgRequest } from '@nats-io/jetstream'
import { CATEGORIES, type Category } from '../events/index.js'
import { ServiceError } from '../errors.js'
import {
  DEFAULT_READ_MAX_BYTES,
  RECORD_HEADER_BYTES,
  type ReadQuery,
  type ReadResult,
  type StoredRecord,
} from '../store/event-log.js'
import { HEADER_SEQ, encodeSubjectToken } from '../ship/subject.js'

export interface FleetLogOptions {
  stream: string
  subjectPrefix: string
  /** One JetStream API request's timeout (a read makes a few dozen). */
  timeoutMs: number
}

/** What one read or seek asked of the server (the bench reports it; tests pin it). */
export interface FleetLogStats {
  /** STREAM.MSG.GET probes. */
  gets: number
  /** Pull consumers created (each also one MSG.NEXT per batch). */
  consumers: number
  /** Cursors whose position came from a hint (then confirmed by one probe, or searched). */
  hinted: number
  /** Pages that continued a reader kept from the page before (no seek, no new consumer). */
  keptReaders: number
}

/** The answer when NATS cannot be asked now: 503, retryable, never a 500. */
export function unavailable(why: string): ServiceError {
  return new ServiceError(503, 'unavailable', `the fleet stream cannot be read now: ${why}`, undefined, {
    'Retry-After': '1',
  })
}

/** Readers kept for the next page at most, and for how long (below the consumers' inactive_threshold). */
const MAX_KEPT_READERS = 256
const KEPT_READER_MS = 15_000
/** Page-end positions remembered (a few hundred bytes each). */
const MAX_HINTS = 10_000
/** Messages pulled per MSG.NEXT request at most, and bytes (a larger message comes alone). */
const PULL_BATCH = 256
const PULL_MAX_BYTES = 1024 * 1024
/** How long a kept reader's first pull may take before a new consumer replaces it. */
const KEPT_READER_CHECK_MS = 1000
/** A reader is kept for the next page only if it buffers at most this much. */
const KEPT_READER_MAX_BYTES = 256 * 1024
/** How long a live feed's pull waits for new messages before the next one is sent. */
const FOLLOW_PULL_MS = 5000
/** A consumer nobody pulls from for this long is removed by the server. */
const CONSUMER_INACTIVE_MS = 30_000

/** A message of the stream as a log record: the payload is the stored envelope byte for byte. */
class StreamRecord implements StoredRecord {
  private text: string | undefined
  private tsUs: number | undefined
  constructor(
    readonly seq: number,
    readonly category: Category,
    readonly envelopeBytes: Uint8Array,
    /** Stream sequence (position). */
    readonly position: number,
  ) {}
  get json(): string {
    return (this.text ??= Buffer.from(
      this.envelopeBytes.buffer,
      this.envelopeBytes.byteOffset,
      this.envelopeBytes.byteLength,
    ).toString('utf8'))
  }
  get ts(): number {
    return (this.tsUs ??= (JSON.parse(this.json) as { event: { ts: number } }).event.ts)
  }
}

interface StreamBounds {
  first: number
  /** Last stream sequence (0 when empty). */
  last: number
}

/** The fleet stream of one NATS connection; `browser(id)` gives one browser's log view. */
export class FleetLog {
  readonly stats: FleetLogStats = { gets: 0, consumers: 0, hinted: 0, keptReaders: 0 }
  private jsmPromise: Promise<JetStreamManager> | undefined
  /** Where the last record of a recently answered page sits, by `<browser token> <next cursor>`. */
  private readonly hints = new Map<string, { seq: number; position: number }>()
  /** Readers left where a page ended, by `<browser token> <filter> <next cursor>`. */
  private readonly readers = new Map<string, { reader: PullReader; at: number }>()

  constructor(
    private readonly nc: () => NatsConnection | undefined,
    readonly opts: FleetLogOptions,
  ) {}

  browser(browserId: string): FleetBrowserLog {
    return new FleetBrowserLog(this, browserId)
  }

  /** The live connection, or 503 when there is none. */
  connection(): NatsConnection {
    const nc = this.nc()
    if (!nc || nc.isClosed()) throw unavailable('not connected to NATS')
    return nc
  }

  async jsm(): Promise<JetStreamManager> {
    const nc = this.connection()
    const p = (this.jsmPromise ??= jetstreamManager(nc, { timeout: this.opts.timeoutMs, checkAPI: false }))
    try {
      return await p
    } catch (err) {
      this.jsmPromise = undefined
      throw asUnavailable(err)
    }
  }

  /**
   * Remembers where the record ending a page sits, so the next page (the client sends that page's
   * X-Next-Offset) starts with one probe instead of a binary search. Only a speed-up: answers are
   * the same without it, e.g. when a client's next page goes to another fleet serve process.
   */
  hint(token: string, cursor: number, last: StreamRecord): void {
    const key = `${token} ${cursor}`
    this.hints.delete(key)
    this.hints.set(key, { seq: last.seq, position: last.position })
    if (this.hints.size > MAX_HINTS) this.hints.delete(this.hints.keys().next().value!)
  }

  hintOf(token: string, cursor: number): { seq: number; position: number } | undefined {
    const h = this.hints.get(`${token} ${cursor}`)
    if (h) this.stats.hinted++
    return h
  }

  /** A new connection replaces the old one: forget what was bound to it. */
  reset(): void {
    this.jsmPromise = undefined
    for (const { reader } of this.readers.values()) reader.close()
    this.readers.clear()
  }

  async bounds(): Promise<StreamBounds> {
    const jsm = await this.jsm()
    try {
      const { state } = await jsm.streams.info(this.opts.stream)
      return { first: state.first_seq, last: state.messages === 0 ? 0 : state.last_seq }
    } catch (err) {
      throw asUnavailable(err)
    }
  }

  /** The first message of `filter` at stream sequence >= position, or undefined. */
  async next(filter: string, position: number): Promise<StreamRecord | undefined> {
    const jsm = await this.jsm()
    this.stats.gets++
    try {
      // next_by_subj (nats-server 2.9+) is not in the client's request type; it is sent as is.
      const query = { seq: position, next_by_subj: filter } as unknown as MsgRequest
      const m = await jsm.streams.getMessage(this.opts.stream, query)
      if (!m) return undefined
      return new StreamRecord(Number(m.header.get(HEADER_SEQ)), categoryOf(m.subject), m.data, m.seq)
    } catch (err) {
      throw asUnavailable(err)
    }
  }

  /** A reader of `filter` from stream sequence `from`: one ephemeral pull consumer. */
  async openReader(filter: string, from: number): Promise<PullReader> {
    const nc = this.connection()
    return new PullReader(this, nc, await this.createConsumer(nc, filter, from))
  }

  /**
   * Keeps a reader whose next record is the first of `filter` with seq >= cursor (the page it
   * served ended just before), for the page that continues there: no seek, no new consumer.
   */
  keepReader(token: string, filter: string, cursor: number, reader: PullReader): void {
    const key = `${token} ${filter} ${cursor}`
    this.readers.get(key)?.reader.close()
    this.readers.delete(key)
    this.readers.set(key, { reader, at: Date.now() })
    if (this.readers.size > MAX_KEPT_READERS) {
      const [oldest, kept] = this.readers.entries().next().value!
      this.readers.delete(oldest)
      kept.reader.close()
    }
  }

  /** The kept reader for this continuation, if one is fresh (taken: one request uses it). */
  takeReader(token: string, filter: string, cursor: number): PullReader | undefined {
    const key = `${token} ${filter} ${cursor}`
    const kept = this.readers.get(key)
    if (!kept) return undefined
    this.readers.delete(key)
    if (Date.now() - kept.at > KEPT_READER_MS) {
      kept.reader.close()
      return undefined
    }
    this.stats.keptReaders++
    return kept.reader
  }

  /** An ephemeral pull consumer of `filter` from stream sequence `from` (memory, no acks). */
  private async createConsumer(nc: NatsConnection, filter: string, from: number): Promise<string> {
    const { stream, timeoutMs } = this.opts
    this.stats.consumers++
    try {
      const created = await nc.request(
        `$JS.API.CONSUMER.CREATE.${stream}`,
        JSON.stringify({
          stream_name: stream,
          config: {
            deliver_policy: 'by_start_sequence',
            opt_start_seq: Math.max(1, from),
            ack_policy: 'none',
            filter_subject: filter,
            mem_storage: true,
            num_replicas: 1,
            // The server removes it when this process is gone without deleting it.
            inactive_threshold: nanos(CONSUMER_INACTIVE_MS),
          },
        }),
        { timeout: timeoutMs },
      )
      const answer = created.json<{ name?: string; error?: { code: number; description?: string } }>()
      if (answer.error || !answer.name)
        throw unavailable(`consumer create: ${answer.error?.description ?? 'no consumer name in the answer'}`)
      return answer.name
    } catch (err) {
      throw asUnavailable(err)
    }
  }

  /** Not awaited: the answer is sent meanwhile; inactive_threshold removes it if this is lost. */
  deleteConsumer(nc: NatsConnection, name: string): void {
    const { stream, timeoutMs } = this.opts
    nc.request(`$JS.API.CONSUMER.DELETE.${stream}.${name}`, undefined, { timeout: timeoutMs }).catch(() => undefined)
  }

  /**
   * Every message of `filter` stored from stream sequence `from` on, as it arrives, until stop():
   * pulls of PULL_BATCH that wait up to FOLLOW_PULL_MS for messages, one after the other. onEnd
   * once, when the feed breaks (connection lost, consumer gone, no answer to a pull).
   */
  async follow(
    filter: string,
    from: number,
    onRecord: (r: StreamRecord) => void,
    onEnd: (err: Error) => void,
  ): Promise<{ stop(): void }> {
    const nc = this.connection()
    const name = await this.createConsumer(nc, filter, from)
    const { stream, timeoutMs } = this.opts
    const inbox = createInbox()
    let ended = false
    let inBatch = 0
    let watchdog: NodeJS.Timeout | undefined
    const end = (err?: Error) => {
      if (ended) return
      ended = true
      clearTimeout(watchdog)
      sub.unsubscribe()
      this.deleteConsumer(nc, name)
      if (err) onEnd(err)
    }
    const pullNext = () => {
      inBatch = 0
      clearTimeout(watchdog)
      watchdog = setTimeout(
        () => end(unavailable(`no answer to a pull in ${FOLLOW_PULL_MS + timeoutMs} ms`)),
        FOLLOW_PULL_MS + timeoutMs,
      )
      nc.publish(
        `$JS.API.CONSUMER.MSG.NEXT.${stream}.${name}`,
        JSON.stringify({ batch: PULL_BATCH, expires: nanos(FOLLOW_PULL_MS) }),
        { reply: inbox },
      )
    }
    const sub = nc.subscribe(inbox, {
      callback: (err, m) => {
        if (ended) return
        if (err) return end(asUnavailable(err))
        if (isStatus(m)) {
          const code = m.headers!.code
          // 408: the pull expired without (all) messages; 100 heartbeats are not asked for.
          if (code === 408 || code === 404) return pullNext()
          return end(unavailable(`${code} ${m.headers!.description}`))
        }
        onRecord(
          new StreamRecord(Number(m.headers?.get(HEADER_SEQ)), categoryOf(m.subject), m.data, positionOf(m.reply)),
        )
        if (++inBatch >= PULL_BATCH) pullNext()
      },
    })
    void sub.closed.then(() => end(unavailable('the NATS connection closed')))
    pullNext()
    return { stop: () => end() }
  }
}

/**
 * Reads one filter forward through an ephemeral pull consumer, in batches that never ask for more
 * than the caller still wants (a no-wait pull ends with a status when the filter has fewer), so
 * every message the server sent is accounted for and the reader can continue on the next page.
 */
export class PullReader {
  /** Records delivered but not handed out yet, in stream order. */
  readonly lookahead: StreamRecord[] = []
  private lastSeq = 0
  private closed = false
  /** The last pull found nothing more (a later one may: new messages arrive). */
  private exhausted = false

  constructor(
    private readonly fleet: FleetLog,
    private readonly nc: NatsConnection,
    readonly consumer: string,
  ) {}

  /**
   * The next record at a position below `to` (undefined: none now), pulling when nothing is
   * buffered: at most `want` messages and `maxBytes` bytes (at least one message), so what is
   * in flight and buffered stays bounded whatever the envelopes weigh.
   */
  async peek(to: number, want: number, maxBytes: number): Promise<StreamRecord | undefined> {
    for (;;) {
      const r = this.lookahead[0]
      if (r) {
        // A re-sent message stored twice (outside the duplicate window) is served once.
        if (r.seq <= this.lastSeq) {
          this.lookahead.shift()
          continue
        }
        return r.position < to ? r : undefined
      }
      if (this.exhausted) return undefined
      const batch = Math.max(1, Math.min(PULL_BATCH, want))
      let got = await this.pull(batch, Math.max(1, Math.min(maxBytes, PULL_MAX_BYTES)))
      // The next message alone is larger than the bound: it is fetched by itself.
      if (got.records.length === 0 && !got.exhausted) got = await this.pull(1)
      this.lookahead.push(...got.records)
      this.exhausted = got.exhausted
      if (got.records.length === 0) return undefined
    }
  }

  /** Pulls once now unless `want` records are buffered (a kept reader's check that its consumer is there). */
  async prefetch(want: number, maxBytes: number, timeoutMs: number): Promise<void> {
    if (this.lookahead.length >= want) return
    const got = await this.pull(
      Math.max(1, Math.min(PULL_BATCH, want - this.lookahead.length)),
      Math.max(1, Math.min(maxBytes, PULL_MAX_BYTES)),
      timeoutMs,
    )
    this.lookahead.push(...got.records)
    this.exhausted = got.exhausted
  }

  /** A new page: a filter that had run out may hold new messages now. */
  startPage(): void {
    this.exhausted = false
  }

  /** Takes the record peek() returned. */
  take(): StreamRecord {
    const r = this.lookahead.shift()!
    this.lastSeq = r.seq
    return r
  }

  /** Bytes of the records buffered. */
  get bufferedBytes(): number {
    let n = 0
    for (const r of this.lookahead) n += r.envelopeBytes.byteLength
    return n
  }

  /** Puts records back in front (a page did not use them); they are the next ones read. */
  unread(records: StreamRecord[]): void {
    this.lookahead.unshift(...records)
    if (records.length > 0) this.lastSeq = Math.min(this.lastSeq, records[0]!.seq - 1)
    this.exhausted = false
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.fleet.deleteConsumer(this.nc, this.consumer)
  }

  /**
   * One no-wait MSG.NEXT of `batch` (and `maxBytes`): what it delivered, and whether the filter
   * ran out (404/408). A 409 "exceeds MaxBytes" ends a batch without losing the message.
   */
  private pull(
    batch: number,
    maxBytes?: number,
    timeoutMs = this.fleet.opts.timeoutMs,
  ): Promise<{ records: StreamRecord[]; exhausted: boolean }> {
    const { stream } = this.fleet.opts
    const nc = this.nc
    const inbox = createInbox()
    return new Promise((resolve, reject) => {
      const records: StreamRecord[] = []
      let sub: Subscription | undefined = undefined
      const timer = setTimeout(() => finish(unavailable(`no answer from the stream in ${timeoutMs} ms`)), timeoutMs)
      const finish = (result: Error | boolean) => {
        clearTimeout(timer)
        sub?.unsubscribe()
        sub = undefined
        if (result instanceof Error) reject(result)
        else resolve({ records, exhausted: result })
      }
      sub = nc.subscribe(inbox, {
        callback: (err, m) => {
          if (!sub) return
          if (err) return finish(asUnavailable(err))
          if (isStatus(m)) {
            const code = m.headers!.code
            if (code === 409 && /MaxBytes/i.test(m.headers!.description)) return finish(false)
            return finish(code === 404 || code === 408 ? true : unavailable(`${code} ${m.headers!.description}`))
          }
          records.push(
            new StreamRecord(Number(m.headers?.get(HEADER_SEQ)), categoryOf(m.subject), m.data, positionOf(m.reply)),
          )
          if (records.length >= batch) finish(false)
        },
      })
      const request = maxBytes === undefined ? { batch, no_wait: true } : { batch, no_wait: true, max_bytes: maxBytes }
      nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${this.consumer}`, JSON.stringify(request), { reply: inbox })
    })
  }
}

/** One browser's messages in the fleet stream, read like the event log (same queries, same pages). */
export class FleetBrowserLog {
  private readonly token: string
  constructor(
    private readonly fleet: FleetLog,
    readonly browserId: string,
  ) {
    this.token = encodeSubjectToken(browserId)
  }

  private filter(category?: Category): string {
    return `${this.fleet.opts.subjectPrefix}.${this.token}.${category ?? '*'}`
  }

  /** True when the stream holds at least one message of this browser. */
  async exists(): Promise<boolean> {
    // From sequence 0: the browser's first message wherever the stream starts (one request).
    return (await this.fleet.next(this.filter(), 0)) !== undefined
  }

  /**
   * The first stream position from which every message of this browser has a key >= target
   * (key: telemetry seq, or event ts), searched in [lo, hi): the log's seekTs over stream sequences.
   */
  async seek(key: 'seq' | 'ts', target: number, lo: number, hi: number): Promise<number> {
    const filter = this.filter()
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2)
      const m = await this.fleet.next(filter, mid)
      if (!m || m.position >= hi) {
        hi = mid
        continue
      }
      if ((key === 'seq' ? m.seq : m.ts) >= target) hi = mid
      else lo = m.position + 1
    }
    return lo
  }

  /** Highest telemetry seq of this browser in the stream (0 when none): the last message of each category. */
  async lastSeq(): Promise<number> {
    const jsm = await this.fleet.jsm()
    let highest = 0
    try {
      for (const c of CATEGORIES) {
        this.fleet.stats.gets++
        const m = await jsm.streams.getMessage(this.fleet.opts.stream, { last_by_subj: this.filter(c) })
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
    const { last } = await this.fleet.bounds()
    let batch: StoredRecord[] = []
    let scheduled = false
    const flush = () => {
      scheduled = false
      const records = batch
      batch = []
      if (records.length > 0) onRecords(records)
    }
    const feed = await this.fleet.follow(
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
    const limit = Math.max(1, Math.floor(q.limit))
    let known: StreamBounds | undefined
    const bounds = async () => (known ??= await this.fleet.bounds())
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
          this.fleet.keepReader(this.token, filter, result.nextCursor, reader)
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
    if (result.hasMore && last) this.fleet.hint(this.token, result.nextCursor, last)
    return result
  }

  /**
   * The position of `cursor` when this process answered the page that ended there: the hint names
   * the last record of that page, and one probe confirms it is still there (messages never move;
   * retention or a recreated stream make the probe disagree, and the caller seeks instead).
   */
  private async hinted(cursor: number): Promise<number | undefined> {
    const h = this.fleet.hintOf(this.token, cursor)
    if (!h) return undefined
    const m = await this.fleet.next(this.filter(), h.position)
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
        let reader = cursor !== undefined ? this.fleet.takeReader(this.token, filter, cursor) : undefined
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
          reader = await this.fleet.openReader(filter, start)
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
        bytes += RECORD_HEADER_BYTES + r.envelopeBytes.byteLength
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
    const reader = await this.fleet.openReader(filter, from)
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
    bytes += RECORD_HEADER_BYTES + r.envelopeBytes.byteLength
  }
  return out
}

function mergeBySeq(records: StreamRecord[], newestFirst: boolean): StreamRecord[] {
  return records.sort(newestFirst ? (a, b) => b.seq - a.seq : (a, b) => a.seq - b.seq)
}

/** The log's page rule: up to limit records and maxBytes (at least one), hasMore when more exists. */
function page(candidates: StreamRecord[], limit: number, maxBytes: number, reverse: boolean): ReadResult {
  const records: StoredRecord[] = []
  let bytes = 0
  let hasMore = false
  for (const r of candidates) {
    const size = RECORD_HEADER_BYTES + r.envelopeBytes.byteLength // counted as the log counts its stored values
    if (records.length >= limit || (records.length > 0 && bytes + size > maxBytes)) {
      hasMore = true
      break
    }
    records.push(r)
    bytes += size
  }
  const last = records[records.length - 1]
  const nextCursor = hasMore && last ? (reverse ? last.seq : last.seq + 1) : 0
  return { records, hasMore: hasMore && nextCursor > 0, nextCursor }
}

function categoryOf(subject: string): Category {
  return subject.slice(subject.lastIndexOf('.') + 1) as Category
}

function isStatus(m: Msg): boolean {
  return m.data.length === 0 && m.headers !== undefined && m.headers.code > 0
}

/** The stream sequence of a JetStream delivery, from its reply subject. */
function positionOf(reply: string | undefined): number {
  const t = (reply ?? '').split('.')
  // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>, or with
  // <domain>.<account hash> after ACK and a random token at the end.
  return Number(t[t.length === 9 ? 5 : 7])
}

/** Any failure to ask NATS is a 503 with the reason; a ServiceError passes as is. */
export function asUnavailable(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err
  if (err instanceof JetStreamApiError && err.code === 404) return unavailable(`stream not found`)
  return unavailable((err as Error).message ?? String(err))
}
