// The fleet shipper: a subscriber of committed envelopes (like SSE) that publishes each one to NATS
// JetStream, exactly once in effect, and never blocks capture, the API or the log.
//
// How "exactly once in effect" holds:
// - Publishes go out in seq order on one connection, at most `maxInFlight` unacknowledged. Each carries
//   `Nats-Msg-Id: <browser_id>:<seq>`, so a re-send inside the stream's duplicate window is dropped.
// - `acked` is the watermark: every seq <= acked is stored in the stream (or no longer in the local
//   log). It only moves over a contiguous run of acks and is written to the log's metadata about once
//   a second, so after a crash we resume at most a second behind and the re-sends are deduplicated.
// - On any failure (ack timeout, error ack, disconnect) everything unacknowledged is re-sent from
//   acked + 1. Before that, after every (re)connect, we ask the stream for the last message of each
//   `<prefix>.<browser>.<category>` subject: an outage longer than the duplicate window would
//   otherwise turn re-sends into duplicates. The stream is the truth for what it holds.
//
// Why nc.publish with a reply subject instead of js.publish: the client builds a request (with a
// stack trace) per js.publish; one ack subscription + one timeout sweep was ~4x faster here (bench/ship.ts).
import {
  connect,
  createInbox,
  headers,
  type Msg,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node'
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import type { Category } from '../events/index.js'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import { silentLogger, type Logger } from '../log.js'
import { connectionOptions, type NatsAuth } from './connect.js'
import { ensureStream, highestStoredSeq, type StreamLimits } from './stream.js'
import { HEADER_BROWSER_ID, HEADER_MSG_ID, HEADER_SEQ, msgIdOf, subjectOf } from './subject.js'

export type ShipState = 'off' | 'connected' | 'reconnecting' | 'behind'
export const SHIP_STATES: readonly ShipState[] = ['off', 'connected', 'reconnecting', 'behind']
export const PUBLISH_ERROR_KINDS = ['connect', 'setup', 'timeout', 'no_responders', 'stream', 'publish'] as const
export type PublishErrorKind = (typeof PUBLISH_ERROR_KINDS)[number]

export interface ShipperOptions {
  log: Pick<EventLog, 'onCommit' | 'read' | 'readMeta' | 'writeMeta' | 'lastSeq' | 'firstSeq'>
  browserId: string
  nats: NatsAuth
  stream: string
  subjectPrefix: string
  limits: StreamLimits
  /** Unacknowledged publishes at most (default 256; 1,024 was no faster). */
  maxInFlight?: number
  /** An unacknowledged publish older than this restarts sending from the watermark (default 5 s). */
  ackTimeoutMs?: number
  /** Retry delays after failures: doubling from initial to max (defaults 250 ms, 10 s). */
  retryInitialMs?: number
  retryMaxMs?: number
  /** Reported as `behind` when the oldest unshipped event is older than this (default 5 s). */
  behindAfterMs?: number
  /** How often the watermark is written to the log's metadata (default 1 s). */
  persistIntervalMs?: number
  logger?: Logger
}

export interface ShipHealth {
  state: ShipState
  stream: string
  subject_prefix: string
  acked_seq: number
  lag_events: number
  lag_seconds: number
  in_flight: number
  last_error?: string
  last_error_at?: string
  retention_dropped_events: number
}

export interface ShipStats {
  shippedEvents: number
  shippedBytes: number
  errors: Record<PublishErrorKind, number>
  retentionDroppedEvents: number
}

interface InFlight {
  seq: number
  ts: number
  bytes: number
  sentAt: number
  acked: boolean
}

/** Metadata name of the watermark: tied to the destination stream and prefix, not to a server URL. */
export const watermarkName = (stream: string, prefix: string) => `ship:${stream}:${prefix}`

const READ_PAGE = 512
/** Records queued for sending at most (read ahead of the in-flight window). */
const QUEUE_CAP = 2048

export class Shipper {
  readonly stats: ShipStats = {
    shippedEvents: 0,
    shippedBytes: 0,
    retentionDroppedEvents: 0,
    errors: Object.fromEntries(PUBLISH_ERROR_KINDS.map(k => [k, 0])) as Record<PublishErrorKind, number>,
  }
  private readonly opts: Required<Omit<ShipperOptions, 'logger'>>
  private readonly logger: Logger
  private readonly metaName: string
  private running = false
  private nc: NatsConnection | undefined
  private jsm: JetStreamManager | undefined
  private ackSub: Subscription | undefined
  private inbox = ''
  private connected = false
  /** Connected and resynchronised with the stream: publishing allowed. */
  private ready = false
  /** Bumped on every rewind so a stale async step (read, resync) drops its result. */
  private generation = 0
  private acked = 0
  private persisted = 0
  private persisting: Promise<void> | undefined
  /** Next log position to queue, and the records queued (in seq order) but not yet published. */
  private next = 1
  private queue: StoredRecord[] = []
  private queueHead = 0
  private reading = false
  private lastCommitSeen = 0
  private readonly inflight = new Map<number, InFlight>()
  private order: InFlight[] = []
  private orderHead = 0
  private pumping = false
  private retryMs: number
  private retryTimer: NodeJS.Timeout | undefined
  private sweepTimer: NodeJS.Timeout | undefined
  private persistTimer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  private connectLoop: Promise<void> | undefined
  private wakeConnectLoop: (() => void) | undefined
  private lastError: { message: string; at: number } | undefined
  /** Commit time (ts, Unix µs) of the oldest event not yet acknowledged, when known. */
  private pendingSinceTs: number | undefined
  private readonly subjects = new Map<Category, string>()
  private readonly headers = headers()
  private readonly ackListeners = new Set<(seq: number, ts: number) => void>()
  private readonly changeListeners = new Set<() => void>()
  private stopWaiters: (() => void)[] = []

  constructor(opts: ShipperOptions) {
    this.opts = {
      maxInFlight: 256,
      ackTimeoutMs: 5000,
      retryInitialMs: 250,
      retryMaxMs: 10_000,
      behindAfterMs: 5000,
      persistIntervalMs: 1000,
      ...opts,
    } as Required<Omit<ShipperOptions, 'logger'>>
    this.logger = opts.logger ?? silentLogger
    this.metaName = watermarkName(opts.stream, opts.subjectPrefix)
    this.retryMs = this.opts.retryInitialMs
    this.headers.set(HEADER_BROWSER_ID, opts.browserId)
  }

  /** Loads the watermark and starts connecting in the background; never waits for NATS. */
  async start(): Promise<void> {
    if (this.running) return
    const stored = await this.opts.log.readMeta(this.metaName)
    this.acked = stored && stored.length >= 8 ? Number(stored.readBigUInt64BE(0)) : 0
    this.persisted = this.acked
    this.next = this.acked + 1
    this.lastCommitSeen = this.opts.log.lastSeq
    this.running = true
    this.unsubscribe = this.opts.log.onCommit(this.onCommit)
    this.sweepTimer = setInterval(this.sweep, 250).unref()
    this.persistTimer = setInterval(() => {
      void this.persist()
    }, this.opts.persistIntervalMs).unref()
    this.logger.info(
      { stream: this.opts.stream, subjectPrefix: this.opts.subjectPrefix, ackedSeq: this.acked },
      'fleet shipping on; connecting to NATS',
    )
    this.connectLoop = this.runConnectLoop()
  }

  /** Waits briefly for in-flight acks, persists the watermark, closes the connection. Idempotent. */
  async stop(graceMs = 1000): Promise<void> {
    if (!this.running) return
    if (this.ready && this.order.length > this.orderHead) {
      await new Promise<void>(resolve => {
        const t = setTimeout(resolve, graceMs)
        this.stopWaiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
    this.running = false
    this.ready = false
    this.unsubscribe?.()
    clearInterval(this.sweepTimer)
    clearInterval(this.persistTimer)
    clearTimeout(this.retryTimer)
    this.wakeConnectLoop?.()
    const nc = this.nc
    this.nc = undefined
    if (nc) await nc.close().catch(() => undefined)
    // A connect attempt in progress may take its full timeout; it closes itself once it sees we stopped.
    await Promise.race([this.connectLoop?.catch(() => undefined), new Promise(r => setTimeout(r, 500).unref())])
    await this.persist()
    this.logger.info({ ackedSeq: this.acked }, 'fleet shipping stopped')
  }

  /** Tests and the bench hear about every advance of the watermark (seq, its event ts; 0 when it passed seqs without events). */
  onAcked(listener: (seq: number, ts: number) => void): () => void {
    this.ackListeners.add(listener)
    return () => {
      this.ackListeners.delete(listener)
    }
  }

  /** Called after connection changes, errors and resyncs (tests wait on it instead of sleeping). */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener)
    return () => {
      this.changeListeners.delete(listener)
    }
  }

  private changed(): void {
    for (const l of this.changeListeners) l()
  }

  get ackedSeq(): number {
    return this.acked
  }

  state(): ShipState {
    if (!this.running) return 'off'
    if (!this.connected) return 'reconnecting'
    if (!this.ready || this.lagSeconds() * 1000 > this.opts.behindAfterMs) return 'behind'
    return 'connected'
  }

  lagEvents(): number {
    return Math.max(0, this.opts.log.lastSeq - this.acked)
  }

  lagSeconds(): number {
    if (this.acked >= this.opts.log.lastSeq) return 0
    const head = this.order[this.orderHead]
    const since = head?.ts ?? this.queue[this.queueHead]?.ts ?? this.pendingSinceTs
    return since === undefined ? 0 : Math.max(0, (Date.now() * 1000 - since) / 1e6)
  }

  health(): ShipHealth {
    return {
      state: this.state(),
      stream: this.opts.stream,
      subject_prefix: this.opts.subjectPrefix,
      acked_seq: this.acked,
      lag_events: this.lagEvents(),
      lag_seconds: Math.round(this.lagSeconds() * 1000) / 1000,
      in_flight: this.inflight.size,
      ...(this.lastError
        ? { last_error: this.lastError.message, last_error_at: new Date(this.lastError.at).toISOString() }
        : {}),
      retention_dropped_events: this.stats.retentionDroppedEvents,
    }
  }

  // ------------------------------------------------------------ connection

  private async runConnectLoop(): Promise<void> {
    while (this.running) {
      let nc: NatsConnection | undefined
      try {
        const options = await connectionOptions(this.opts.nats, {
          name: `browser-telemetry ${this.opts.browserId}`,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1000,
          timeout: 5000,
          noAsyncTraces: true,
          pingInterval: 10_000,
          maxPingOut: 3,
        })
        nc = await connect(options)
        if (!this.running) {
          await nc.close()
          return
        }
        this.nc = nc
        this.connected = true
        this.logger.info({ server: redactUrl(nc.getServer()) }, 'connected to NATS')
        this.changed()
        void this.watchStatus(nc)
        this.inbox = createInbox() + '.'
        this.ackSub = nc.subscribe(this.inbox + '*', { callback: (_err, msg) => this.onAck(msg) })
        this.jsm = await jetstreamManager(nc, { timeout: 5000 })
        this.scheduleResync(0)
        const closedWith = await nc.closed()
        if (!this.running) return
        this.noteError('connect', `NATS connection closed${closedWith ? `: ${closedWith.message}` : ''}`)
      } catch (err) {
        if (!this.running) return
        this.noteError(
          'connect',
          `cannot connect to NATS (${this.opts.nats.servers.map(redactUrl).join(', ')}): ${(err as Error).message}`,
        )
        await nc?.close().catch(() => undefined)
      }
      this.connected = false
      this.rewind()
      this.changed()
      this.nc = undefined
      this.jsm = undefined
      this.ackSub = undefined
      const wait = this.nextRetryDelay()
      await new Promise<void>(r => {
        this.wakeConnectLoop = r
        this.retryTimer = setTimeout(r, wait)
      })
      this.wakeConnectLoop = undefined
    }
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (nc !== this.nc) return
      if (s.type === 'disconnect') {
        this.connected = false
        this.rewind()
        this.logger.warn({ server: redactUrl(s.server) }, 'NATS disconnected; shipping paused, the client reconnects')
        this.changed()
      } else if (s.type === 'reconnect') {
        this.connected = true
        this.logger.info({ server: redactUrl(s.server) }, 'NATS reconnected; resynchronising with the stream')
        this.scheduleResync(0)
        this.changed()
      } else if (s.type === 'error') {
        this.noteError('connect', `NATS: ${s.error.message}`)
      }
    }
  }

  /** Ensure the stream, learn what it holds of us, then (re)start publishing from there. */
  private scheduleResync(delayMs: number): void {
    clearTimeout(this.retryTimer)
    const gen = this.generation
    this.retryTimer = setTimeout(() => {
      void this.resync(gen)
    }, delayMs)
  }

  private async resync(gen: number): Promise<void> {
    const jsm = this.jsm
    if (!this.running || !this.connected || !jsm || gen !== this.generation) return
    try {
      const probe = subjectOf(this.opts.subjectPrefix, this.opts.browserId, 'console')
      const ensured = await ensureStream(jsm, this.opts.stream, this.opts.subjectPrefix, this.opts.limits, probe)
      if (ensured.created)
        this.logger.info(
          { stream: this.opts.stream, subjects: ensured.info.config.subjects },
          'created JetStream stream',
        )
      if (ensured.warning) this.logger.warn(ensured.warning)
      const held = await highestStoredSeq(jsm, this.opts.stream, this.opts.subjectPrefix, this.opts.browserId)
      if (gen !== this.generation || !this.connected) return
      if (held > this.acked) {
        this.logger.info(
          { ackedSeq: this.acked, streamHolds: held },
          'the stream already holds events past our watermark; resuming after them',
        )
        this.acked = held
        this.next = held + 1
        this.queue = []
        this.queueHead = 0
      }
      this.ready = true
      if (this.lastError) this.logger.info({ ackedSeq: this.acked }, 'fleet shipping resumed')
      this.changed()
      this.pump()
    } catch (err) {
      this.noteError('setup', `JetStream stream ${this.opts.stream}: ${(err as Error).message}`)
      this.scheduleResync(this.nextRetryDelay())
    }
  }

  private nextRetryDelay(): number {
    const d = this.retryMs
    this.retryMs = Math.min(this.retryMs * 2, this.opts.retryMaxMs)
    return d
  }

  private noteError(kind: PublishErrorKind, message: string): void {
    this.stats.errors[kind]++
    // Say each distinct problem once; counting covers the rest.
    if (this.lastError?.message !== message) this.logger.error({ kind }, message)
    this.lastError = { message, at: Date.now() }
    this.changed()
  }

  // ------------------------------------------------------------ sending

  /** Drops everything unacknowledged; sending restarts at acked + 1 once ready again. */
  private rewind(): void {
    this.generation++
    this.ready = false
    const head = this.order[this.orderHead]
    if (head) this.pendingSinceTs = head.ts
    this.inflight.clear()
    this.order = []
    this.orderHead = 0
    this.queue = []
    this.queueHead = 0
    this.next = this.acked + 1
  }

  private failAndRetry(kind: PublishErrorKind, message: string): void {
    this.noteError(kind, message)
    if (!this.ready) return
    this.rewind()
    this.scheduleResync(this.nextRetryDelay())
  }

  private readonly onCommit = (records: readonly StoredRecord[]): void => {
    const prev = this.lastCommitSeen
    this.lastCommitSeen = records[records.length - 1]!.seq
    if (this.pendingSinceTs === undefined && this.acked < records[0]!.seq) this.pendingSinceTs = records[0]!.ts
    // Live path: when we hold everything up to the previous commit, take these without a read.
    if (this.ready && !this.reading && this.next === prev + 1 && this.queued() + records.length <= QUEUE_CAP) {
      for (const r of records) this.queue.push(r)
      this.next = this.lastCommitSeen + 1
    }
    this.pump()
  }

  private pump(): void {
    if (this.pumping || !this.ready) return
    this.pumping = true
    try {
      const nc = this.nc
      while (this.ready && nc && this.inflight.size < this.opts.maxInFlight && this.queueHead < this.queue.length) {
        this.publish(nc, this.queue[this.queueHead++]!)
      }
      if (this.queueHead === this.queue.length) {
        this.queue = []
        this.queueHead = 0
      }
      // Read ahead while the window drains, so the next page is there when it empties.
      if (this.ready && !this.reading && this.queued() < READ_PAGE && this.next <= this.opts.log.lastSeq)
        void this.readAhead()
    } finally {
      this.pumping = false
    }
  }

  private queued(): number {
    return this.queue.length - this.queueHead
  }

  private async readAhead(): Promise<void> {
    const gen = this.generation
    this.reading = true
    try {
      const first = this.opts.log.firstSeq
      if (this.next < first) {
        // Retention removed these before they were shipped: the stream will show the gap.
        const lost = first - this.next
        this.stats.retentionDroppedEvents += lost
        this.logger.warn(
          { fromSeq: this.next, toSeq: first - 1, events: lost },
          'local retention removed events before they were shipped',
        )
        this.next = first
      }
      const page = await this.opts.log.read({ order: 'asc', cursor: this.next, limit: READ_PAGE })
      if (gen !== this.generation) return
      for (const r of page.records) this.queue.push(r)
      const last = page.records[page.records.length - 1]
      this.next = last ? last.seq + 1 : Math.max(this.next, this.opts.log.lastSeq + 1)
      if (!last) this.settleGap()
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'shipper could not read the event log')
    } finally {
      this.reading = false
    }
    if (gen === this.generation) this.pump()
  }

  private publish(nc: NatsConnection, rec: StoredRecord): void {
    // One header set, rewritten per message: publish() encodes it synchronously.
    const h = this.headers
    h.set(HEADER_MSG_ID, msgIdOf(this.opts.browserId, rec.seq))
    h.set(HEADER_SEQ, String(rec.seq))
    let subject = this.subjects.get(rec.category)
    if (!subject)
      this.subjects.set(rec.category, (subject = subjectOf(this.opts.subjectPrefix, this.opts.browserId, rec.category)))
    try {
      nc.publish(subject, rec.json, { headers: h, reply: this.inbox + rec.seq })
    } catch (err) {
      this.failAndRetry('publish', `publish failed: ${(err as Error).message}`)
      return
    }
    const entry: InFlight = { seq: rec.seq, ts: rec.ts, bytes: rec.json.length, sentAt: Date.now(), acked: false }
    this.inflight.set(rec.seq, entry)
    this.order.push(entry)
  }

  private onAck(msg: Msg): void {
    const seq = Number(msg.subject.slice(this.inbox.length))
    const entry = this.inflight.get(seq)
    if (!entry) return // an ack from before a rewind: that copy is stored; the re-send will be a duplicate
    if (msg.headers?.code === 503) {
      this.failAndRetry(
        'no_responders',
        `no JetStream stream answers on ${subjectOf(this.opts.subjectPrefix, this.opts.browserId, 'console')} (stream ${this.opts.stream} missing or not covering ${this.opts.subjectPrefix}.>)`,
      )
      return
    }
    // A PubAck is {"stream":..,"seq":..[,"duplicate":true]}; only anything else (an error) is worth parsing.
    const text = msg.string()
    if (!text.startsWith('{"stream"') || text.includes('"error"')) {
      let body: { error?: { code?: number; err_code?: number; description?: string } }
      try {
        body = JSON.parse(text) as typeof body
      } catch {
        body = {}
      }
      body.error ??= { description: `unexpected ack: ${text.slice(0, 100)}` }
      this.failAndRetry(
        'stream',
        `JetStream refused seq ${seq}: ${body.error.description ?? 'error'} (${body.error.err_code ?? body.error.code ?? '?'})`,
      )
      return
    }
    entry.acked = true
    this.advance()
  }

  private advance(): void {
    let moved = false
    let head = this.order[this.orderHead]
    while (head && head.acked) {
      this.inflight.delete(head.seq)
      this.acked = head.seq
      this.stats.shippedEvents++
      this.stats.shippedBytes += head.bytes
      for (const l of this.ackListeners) l(head.seq, head.ts)
      moved = true
      head = this.order[++this.orderHead]
    }
    if (!moved) return
    this.settleGap()
    if (this.orderHead > 1024) {
      this.order = this.order.slice(this.orderHead)
      this.orderHead = 0
    }
    this.pendingSinceTs = undefined
    if (this.retryMs !== this.opts.retryInitialMs) this.retryMs = this.opts.retryInitialMs
    if (this.inflight.size === 0) for (const w of this.stopWaiters.splice(0)) w()
    this.pump()
  }

  /**
   * Positions below `next` without records (seqs skipped by load shedding or an unclean stop) never get an
   * ack: once everything sent is acknowledged, the watermark covers them too.
   */
  private settleGap(): void {
    if (this.order.length === this.orderHead && this.queued() === 0 && this.next - 1 > this.acked) {
      this.acked = this.next - 1
      for (const l of this.ackListeners) l(this.acked, 0)
    }
  }

  private readonly sweep = (): void => {
    const head = this.order[this.orderHead]
    if (this.ready && head && Date.now() - head.sentAt > this.opts.ackTimeoutMs) {
      this.failAndRetry(
        'timeout',
        `no JetStream ack for seq ${head.seq} within ${this.opts.ackTimeoutMs} ms; re-sending from seq ${this.acked + 1}`,
      )
    }
  }

  private async persist(): Promise<void> {
    if (this.persisting) return this.persisting
    if (this.acked === this.persisted) return
    const value = Buffer.alloc(8)
    const seq = this.acked
    value.writeBigUInt64BE(BigInt(seq))
    this.persisting = this.opts.log
      .writeMeta(this.metaName, value)
      .then(
        () => {
          this.persisted = seq
        },
        (err: Error) => {
          this.logger.error({ err: err.message }, 'could not persist the shipped watermark')
        },
      )
      .finally(() => {
        this.persisting = undefined
      })
    return this.persisting
  }
}

/** nats://user:pass@host -> nats://***@host: credentials never reach logs or /healthz. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@')
}
