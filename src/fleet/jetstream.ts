// JetStream access for the fleet read side: one stream of one NATS connection, asked for its
// bounds, probed for a subject's first message at a position (STREAM.MSG.GET with next_by_subj),
// and given ephemeral pull consumers. Every failure to ask NATS is a 503 (retryable), never a 500.
import { nanos, type Msg, type NatsConnection } from '@nats-io/transport-node'
import { JetStreamApiError, jetstreamManager, type JetStreamManager, type MsgRequest } from '@nats-io/jetstream'
import type { Category } from '../events/index.js'
import { ServiceError } from '../errors.js'
import type { StoredRecord } from '../store/event-log.js'
import { HEADER_SEQ } from '../nats/subject.js'

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

/** A consumer nobody pulls from for this long is removed by the server. */
const CONSUMER_INACTIVE_MS = 30_000

/** The answer when NATS cannot be asked now: 503, retryable, never a 500. */
export function unavailable(why: string): ServiceError {
  return new ServiceError(503, 'unavailable', `the fleet stream cannot be read now: ${why}`, undefined, {
    'Retry-After': '1',
  })
}

/** Any failure to ask NATS is a 503 with the reason; a ServiceError passes as is. */
export function asUnavailable(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err
  if (err instanceof JetStreamApiError && err.code === 404) return unavailable(`stream not found`)
  return unavailable((err as Error).message ?? String(err))
}

/** A message of the stream as a log record: the payload is the stored envelope byte for byte. */
export class StreamRecord implements StoredRecord {
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

export interface StreamBounds {
  first: number
  /** Last stream sequence (0 when empty). */
  last: number
}

/** The fleet stream of one NATS connection: bounds, probes and consumers. */
export class FleetStream {
  readonly stats: FleetLogStats = { gets: 0, consumers: 0, hinted: 0, keptReaders: 0 }
  private jsmPromise: Promise<JetStreamManager> | undefined

  constructor(
    private readonly nc: () => NatsConnection | undefined,
    readonly opts: FleetLogOptions,
  ) {}

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

  /** A new connection replaces the old one: forget what was bound to it. */
  reset(): void {
    this.jsmPromise = undefined
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

  /** An ephemeral pull consumer of `filter` from stream sequence `from` (memory, no acks). */
  async createConsumer(nc: NatsConnection, filter: string, from: number): Promise<string> {
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
}

export function categoryOf(subject: string): Category {
  return subject.slice(subject.lastIndexOf('.') + 1) as Category
}

export function isStatus(m: Msg): boolean {
  return m.data.length === 0 && m.headers !== undefined && m.headers.code > 0
}

/** The stream sequence of a JetStream delivery, from its reply subject. */
export function positionOf(reply: string | undefined): number {
  const t = (reply ?? '').split('.')
  // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>, or with
  // <domain>.<account hash> after ACK and a random token at the end.
  return Number(t[t.length === 9 ? 5 : 7])
}
