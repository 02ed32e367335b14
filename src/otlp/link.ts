// The OTLP/HTTP transport of the sink core, for one signal (logs or traces): records handed over by
// the sink are turned into items (LogRecords, finished spans), gathered into batches (size or delay,
// whichever first) and posted to `<endpoint>/v1/<signal>`, at most two requests at a time. Answers:
// 2xx acknowledges every record of the batch (a partial success is logged and counted; the OTLP
// specification forbids retrying it, and the rejected items are not identified); 429/502/503/504 and
// network errors re-send from the watermark after the backoff or the collector's Retry-After; any
// other 4xx refuses the batch for good: logged, counted, skipped.
import type { StoredRecord } from '../store/event-log.js'
import type { LinkEvents, ShipLink } from '../sink/link.js'
import { classify, describeAnswer, post, type HttpAnswer } from './http.js'

export const OTLP_ERROR_KINDS = ['network', 'throttled', 'unavailable', 'refused', 'partial', 'encode'] as const

/** One signal's encoding: items of a record, the request body, and the partial-success answer. */
export interface SignalEncoder<Item> {
  signal: 'logs' | 'traces'
  itemsOf(rec: StoredRecord): Item[]
  /** Runs before the first send after every (re)start: rebuilds state the encoder keeps across records. */
  prepare?(): Promise<void>
  /** The items have been accepted: state kept for re-sends of these seqs may go. */
  delivered?(seqs: readonly number[]): void
  serialize(items: Item[]): Uint8Array
  /** The items the collector rejected in a 2xx answer (0 = all accepted), with its message. */
  rejected(answer: HttpAnswer): { count: number; message?: string }
}

export interface OtlpLinkOptions {
  url: URL
  contentType: string
  headers: Record<string, string>
  ca?: Buffer
  timeoutMs: number
  batchEvents: number
  batchDelayMs: number
  /** Requests under way at most. */
  concurrency?: number
}

/** A batch body's size at most (records are up to 1 MiB each). */
const BATCH_BYTES = 4 * 1024 * 1024

interface Batch<Item> {
  seqs: number[]
  items: Item[]
  bytes: number
}

export class OtlpLink<Item> implements ShipLink {
  /** Items the collector rejected in partial-success answers. */
  rejectedItems = 0
  /** Requests posted and answered 2xx. */
  exports = 0
  private batch: Batch<Item> = { seqs: [], items: [], bytes: 0 }
  private timer: NodeJS.Timeout | undefined
  private posting = 0
  private generation = 0
  private running = false
  private readonly posts = new Set<Promise<void>>()

  constructor(
    private readonly opts: OtlpLinkOptions,
    private readonly encoder: SignalEncoder<Item>,
    private readonly events: LinkEvents,
  ) {}

  start(): void {
    this.running = true
    // HTTP has no session: the collector is asked only by exporting.
    this.events.up()
    this.events.ready()
  }

  async stop(): Promise<void> {
    this.running = false
    clearTimeout(this.timer)
    await Promise.allSettled([...this.posts])
  }

  /** The collector cannot say what it holds: 0. The encoder may rebuild its state first. */
  async resync(): Promise<number> {
    await this.encoder.prepare?.()
    return 0
  }

  publish(rec: StoredRecord): void {
    if (!this.running) throw new Error('stopped')
    const b = this.batch
    b.seqs.push(rec.seq)
    for (const item of this.encoder.itemsOf(rec)) b.items.push(item)
    b.bytes += rec.json.length
    if (b.seqs.length >= this.opts.batchEvents || b.bytes >= BATCH_BYTES) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), this.opts.batchDelayMs)
  }

  reset(): void {
    this.generation++
    clearTimeout(this.timer)
    this.timer = undefined
    this.batch = { seqs: [], items: [], bytes: 0 }
  }

  flush(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.batch.seqs.length === 0) return
    if (this.posting >= (this.opts.concurrency ?? 2)) return // sent when a request finishes
    const batch = this.batch
    this.batch = { seqs: [], items: [], bytes: 0 }
    const gen = this.generation
    if (batch.items.length === 0) {
      // Nothing to export for these records (e.g. screenshots, events inside an open span): passed at once.
      queueMicrotask(() => {
        if (gen === this.generation) this.accepted(batch)
      })
      return
    }
    let body: Uint8Array
    try {
      const encoded = this.encoder.serialize(batch.items)
      body = encoded
    } catch (err) {
      queueMicrotask(() => {
        if (gen !== this.generation) return
        const message = `could not encode ${this.encoder.signal}: ${(err as Error).message}`
        for (const seq of batch.seqs) this.events.ack(seq, { kind: 'encode', message, skip: true })
      })
      return
    }
    this.posting++
    const p = this.send(batch, body, gen).finally(() => {
      this.posting--
      this.posts.delete(p)
      if (this.running && this.batch.seqs.length > 0 && !this.timer) this.flush()
    })
    this.posts.add(p)
  }

  private async send(batch: Batch<Item>, body: Uint8Array, gen: number): Promise<void> {
    let answer: HttpAnswer
    try {
      answer = await post(this.opts.url, body, {
        headers: this.opts.headers,
        contentType: this.opts.contentType,
        timeoutMs: this.opts.timeoutMs,
        ca: this.opts.ca,
      })
    } catch (err) {
      if (gen !== this.generation) return
      this.events.ack(batch.seqs[0]!, {
        kind: 'network',
        message: `OTLP ${this.encoder.signal} export to ${this.opts.url.origin}${this.opts.url.pathname} failed: ${(err as Error).message}`,
      })
      return
    }
    if (gen !== this.generation) return
    const where = `OTLP ${this.encoder.signal} export to ${this.opts.url.origin}${this.opts.url.pathname}`
    switch (classify(answer.status)) {
      case 'ok': {
        this.exports++
        let rejected: { count: number; message?: string } = { count: 0 }
        try {
          rejected = this.encoder.rejected(answer)
        } catch {
          /* an unreadable 2xx body is still a success */
        }
        if (rejected.count > 0) {
          this.rejectedItems += rejected.count
          this.events.error(
            'partial',
            `${where}: the collector rejected ${rejected.count} of ${batch.items.length} ${this.encoder.signal === 'logs' ? 'log records' : 'spans'}${rejected.message ? `: ${rejected.message}` : ''}`,
          )
        }
        this.accepted(batch)
        return
      }
      case 'refused': {
        const message = `${where} refused a batch of ${batch.seqs.length} events (seq ${batch.seqs[0]}-${batch.seqs[batch.seqs.length - 1]}), skipped: ${describeAnswer(answer)}`
        this.encoder.delivered?.(batch.seqs)
        for (const seq of batch.seqs) this.events.ack(seq, { kind: 'refused', message, skip: true })
        return
      }
      case 'retry': {
        if (answer.retryAfterMs !== undefined) this.events.retryAfter?.(answer.retryAfterMs)
        this.events.ack(batch.seqs[0]!, {
          kind: answer.status === 429 ? 'throttled' : 'unavailable',
          message: `${where}: ${describeAnswer(answer)}${answer.retryAfterMs !== undefined ? ` (retry after ${answer.retryAfterMs} ms)` : ''}`,
        })
        return
      }
    }
  }

  private accepted(batch: Batch<Item>): void {
    this.encoder.delivered?.(batch.seqs)
    for (const seq of batch.seqs) this.events.ack(seq)
  }
}
