// The pull protocol of the fleet read side: an ephemeral pull consumer read in no-wait batches
// that never ask for more than a page still wants (PullReader), and a live feed of expiring pulls
// one after the other (follow).
import { createInbox, nanos, type NatsConnection, type Subscription } from '@nats-io/transport-node'
import {
  asUnavailable,
  categoryOf,
  isStatus,
  positionOf,
  StreamRecord,
  unavailable,
  type FleetStream,
} from './jetstream.js'
import { HEADER_SEQ } from '../nats/subject.js'

/** Messages pulled per MSG.NEXT request at most, and bytes (a larger message comes alone). */
export const PULL_BATCH = 256
export const PULL_MAX_BYTES = 1024 * 1024
/** How long a live feed's pull waits for new messages before the next one is sent. */
const FOLLOW_PULL_MS = 5000

/** A reader of `filter` from stream sequence `from`: one ephemeral pull consumer. */
export async function openReader(stream: FleetStream, filter: string, from: number): Promise<PullReader> {
  const nc = stream.connection()
  return new PullReader(stream, nc, await stream.createConsumer(nc, filter, from))
}

/**
 * Every message of `filter` stored from stream sequence `from` on, as it arrives, until stop():
 * pulls of PULL_BATCH that wait up to FOLLOW_PULL_MS for messages, one after the other. onEnd
 * once, when the feed breaks (connection lost, consumer gone, no answer to a pull).
 */
export async function follow(
  stream: FleetStream,
  filter: string,
  from: number,
  onRecord: (r: StreamRecord) => void,
  onEnd: (err: Error) => void,
): Promise<{ stop(): void }> {
  const nc = stream.connection()
  const name = await stream.createConsumer(nc, filter, from)
  const { timeoutMs } = stream.opts
  const inbox = createInbox()
  let ended = false
  let inBatch = 0
  let watchdog: NodeJS.Timeout | undefined
  const end = (err?: Error) => {
    if (ended) return
    ended = true
    clearTimeout(watchdog)
    sub.unsubscribe()
    stream.deleteConsumer(nc, name)
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
      `$JS.API.CONSUMER.MSG.NEXT.${stream.opts.stream}.${name}`,
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
      onRecord(new StreamRecord(Number(m.headers?.get(HEADER_SEQ)), categoryOf(m.subject), m.data, positionOf(m.reply)))
      if (++inBatch >= PULL_BATCH) pullNext()
    },
  })
  void sub.closed.then(() => end(unavailable('the NATS connection closed')))
  pullNext()
  return { stop: () => end() }
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
    private readonly stream: FleetStream,
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
    this.stream.deleteConsumer(this.nc, this.consumer)
  }

  /**
   * One no-wait MSG.NEXT of `batch` (and `maxBytes`): what it delivered, and whether the filter
   * ran out (404/408). A 409 "exceeds MaxBytes" ends a batch without losing the message.
   */
  private pull(
    batch: number,
    maxBytes?: number,
    timeoutMs = this.stream.opts.timeoutMs,
  ): Promise<{ records: StreamRecord[]; exhausted: boolean }> {
    const { stream } = this.stream.opts
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
