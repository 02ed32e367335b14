// The sink core: a subscriber of committed envelopes (like SSE) that hands each one to a transport
// (a ShipLink: NATS JetStream, OTLP/HTTP) exactly once in effect, and never blocks capture, the API
// or the log. It owns the cursor over the committed log, the durable watermark, reading ahead, the
// bounded in-flight window, acks, retries with backoff, health and counters; a transport only sends
// records and reports answers. One idea, in one file because its state machine, window and
// watermark move together; its settings and phases are in sink-options.ts.
//
// How "exactly once in effect" holds:
// - Records go out in seq order, at most `maxInFlight` unacknowledged. Each carries an identity the
//   destination can de-duplicate on (the NATS msg id, the OTLP seq + browser id attributes).
// - `acked` is the watermark: every seq <= acked is stored at the destination (or refused for good,
//   counted, or no longer in the local log). It only moves over a contiguous run of acks and is written
//   to the log's metadata (one name per sink) about once a second, so after a crash we resume at most a
//   second behind.
// - On any failure (ack timeout, refusal, disconnect) everything unacknowledged is re-sent from
//   acked + 1 after a backoff (or the destination's Retry-After). Before that, after every (re)connect,
//   the transport may say what the destination already holds (NATS does; OTLP cannot).
import type { StoredRecord } from '../store/event-log.js'
import { silentLogger, type Logger } from '../log.js'
import { Backoff } from '../util/backoff.js'
import { withDefaults } from '../util/defaults.js'
import type { LinkEvents, Refusal, ShipLink } from './link.js'
import { SINK_DEFAULTS, TRANSITIONS, type Phase, type SinkOptions, type SinkTuning } from './sink-options.js'

export { SINK_DEFAULTS, type SinkOptions } from './sink-options.js'
import { PublishWindow } from './publish-window.js'
import { StoredWatermark } from './watermark.js'
import type { SinkHealth, ShipState, SinkStats } from './sink-health.js'
import { servedNow } from '../store/read-mapping.js'

const READ_PAGE = 512
/** Pages kept queued ahead of the window. */
const READ_AHEAD_PAGES = 2
/** Records queued for sending at most (read ahead of the in-flight window). */
const QUEUE_CAP = 2048

export class Sink {
  readonly stats: SinkStats
  readonly name: string
  private readonly opts: SinkOptions
  private readonly tuning: SinkTuning
  private readonly logger: Logger
  private readonly watermark: StoredWatermark
  private phase: Phase = 'stopped'
  /** The destination (constructed by the transport's factory, used through ShipLink). */
  private readonly link: ShipLink
  private readonly window = new PublishWindow()
  private readonly backoff: Backoff
  /** Bumped on every rewind so a stale async step (read, resync) drops its result. */
  private generation = 0
  private acked = 0
  /** Next log position to queue. */
  private next = 1
  /** A read-ahead is under way (at most one). */
  private reading = false
  private lastCommitSeen = 0
  private resyncTimer: NodeJS.Timeout | undefined
  private sweepTimer: NodeJS.Timeout | undefined
  private persistTimer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  private lastError: { message: string; at: number } | undefined
  /** Commit time (ts, Unix µs) of the oldest event not yet acknowledged, when known. */
  private pendingSinceTs: number | undefined
  private readonly ackListeners = new Set<(seq: number, ts: number) => void>()
  private readonly changeListeners = new Set<() => void>()
  private stopWaiters: (() => void)[] = []
  /** When publishing last (re)started after a resync. */
  private resumedAt = 0
  /** Earliest time a re-send may start (a destination's Retry-After). */
  private notBefore = 0
  /** Since when the sink has been standing back for capture (0 = it is not). */
  private yieldingSince = 0

  constructor(opts: SinkOptions) {
    this.opts = opts
    this.name = opts.name
    this.stats = {
      shippedEvents: 0,
      shippedBytes: 0,
      retentionDroppedEvents: 0,
      skippedEvents: 0,
      errors: Object.fromEntries(opts.errorKinds.map(k => [k, 0])),
    }
    this.tuning = withDefaults(SINK_DEFAULTS, {
      maxInFlight: opts.maxInFlight,
      ackTimeoutMs: opts.ackTimeoutMs,
      retryInitialMs: opts.retryInitialMs,
      retryMaxMs: opts.retryMaxMs,
      behindAfterMs: opts.behindAfterMs,
      persistIntervalMs: opts.persistIntervalMs,
      yieldBacklogBytes: opts.yieldBacklogBytes,
      maxYieldMs: opts.maxYieldMs,
    })
    this.logger = opts.logger ?? silentLogger
    this.watermark = new StoredWatermark(opts.log, opts.watermarkName, this.logger)
    this.backoff = new Backoff(this.tuning.retryInitialMs, this.tuning.retryMaxMs)
    this.link = opts.link(this.linkEvents, this.backoff, this.logger)
  }

  /** The one place the phase changes. Losing the connection, or a failed publish, drops the window. */
  private enter(to: Phase): void {
    const from = this.phase
    if (!TRANSITIONS[from].includes(to)) {
      this.logger.error({ sink: this.name, from, to }, 'sink: transition refused')
      return
    }
    this.phase = to
    if ((to === 'connecting' && from !== 'stopped') || (from === 'publishing' && to === 'resyncing')) this.rewind()
  }

  /** Loads the watermark and starts connecting in the background; never waits for the destination. */
  async start(): Promise<void> {
    if (this.phase !== 'stopped') return
    this.acked = await this.watermark.load()
    this.next = this.acked + 1
    this.lastCommitSeen = this.opts.log.lastSeq
    this.enter('connecting')
    this.unsubscribe = this.opts.log.onCommit(this.onCommit)
    this.sweepTimer = setInterval(this.sweep, 250).unref()
    this.persistTimer = setInterval(() => {
      void this.watermark.persist(this.acked)
    }, this.tuning.persistIntervalMs).unref()
    this.logger.info({ ...this.opts.describe?.(), ackedSeq: this.acked }, this.messages.started)
    this.link.start()
  }

  /** Waits briefly for in-flight acks, persists the watermark, closes the connection. Idempotent. */
  async stop(graceMs = 1000): Promise<void> {
    if (this.phase === 'stopped') return
    if (this.phase === 'publishing' && this.window.inFlight > 0) {
      this.link.flush?.()
      await new Promise<void>(resolve => {
        const t = setTimeout(resolve, graceMs)
        this.stopWaiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
    this.enter('stopped')
    this.unsubscribe?.()
    clearInterval(this.sweepTimer)
    clearInterval(this.persistTimer)
    clearTimeout(this.resyncTimer)
    await this.link.stop()
    await this.watermark.persist(this.acked)
    this.logger.info({ ackedSeq: this.acked }, this.messages.stopped)
  }

  /**
   * Tests and the bench hear about every advance of the watermark: acks (seq, its event ts), and
   * jumps with ts 0 (past seqs without events, or to what a resync found the destination holds).
   */
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
    switch (this.phase) {
      case 'stopped':
        return 'off'
      case 'connecting':
        return 'reconnecting'
      case 'resyncing':
        return 'behind'
      case 'publishing':
        return this.lagSeconds() * 1000 > this.tuning.behindAfterMs ? 'behind' : 'connected'
    }
  }

  lagEvents(): number {
    return Math.max(0, this.opts.log.lastSeq - this.acked)
  }

  lagSeconds(): number {
    if (this.acked >= this.opts.log.lastSeq) return 0
    const since = this.window.oldest()?.ts ?? this.window.queue.peek()?.ts ?? this.pendingSinceTs
    return since === undefined ? 0 : Math.max(0, (Date.now() * 1000 - since) / 1e6)
  }

  health(): SinkHealth {
    return {
      state: this.state(),
      ...this.opts.describe?.(),
      acked_seq: this.acked,
      lag_events: this.lagEvents(),
      lag_seconds: Math.round(this.lagSeconds() * 1000) / 1000,
      in_flight: this.window.inFlight,
      ...(this.lastError
        ? { last_error: this.lastError.message, last_error_at: new Date(this.lastError.at).toISOString() }
        : {}),
      retention_dropped_events: this.stats.retentionDroppedEvents,
      ...(this.stats.skippedEvents > 0 ? { skipped_events: this.stats.skippedEvents } : {}),
    }
  }

  private get messages(): { started: string; stopped: string; resumed: string } {
    return (
      this.opts.messages ?? {
        started: `${this.name} sink on`,
        stopped: `${this.name} sink stopped`,
        resumed: `${this.name} sink resumed`,
      }
    )
  }

  // ------------------------------------------------------------ what the link tells us

  private readonly linkEvents: LinkEvents = {
    up: () => {
      if (this.phase !== 'connecting') return
      this.enter('resyncing')
      this.changed()
    },
    ready: () => {
      if (this.phase === 'resyncing') this.scheduleResync(0)
    },
    down: () => {
      if (this.phase === 'stopped') return
      this.enter('connecting')
      this.changed()
    },
    ack: (seq: number, refusal?: Refusal) => {
      const entry = this.window.get(seq)
      if (!entry) return // an ack from before a rewind: that copy is stored; the re-send will be a duplicate
      if (refusal && !refusal.skip) {
        this.failAndRetry(refusal.kind, refusal.message)
        return
      }
      if (refusal) {
        // Refused for good (the destination said the record itself is bad): counted and passed.
        this.noteError(refusal.kind, refusal.message)
        entry.skipped = true
      }
      entry.acked = true
      this.advance()
    },
    moved: () => {
      if (this.phase === 'resyncing') {
        this.backoff.reset()
        this.scheduleResync(0)
      } else if (this.phase === 'publishing' && this.window.inFlight > 0) {
        this.logger.info(
          { sink: this.name, ackedSeq: this.acked },
          `${this.name}: the destination moved; re-sending what it has not answered`,
        )
        this.enter('resyncing')
        this.scheduleResync(0)
      }
    },
    retryAfter: (ms: number) => {
      this.notBefore = Math.max(this.notBefore, Date.now() + ms)
    },
    error: (kind: string, message: string) => this.noteError(kind, message),
  }

  /** Ask the stream what it holds of us, then (re)start publishing from there. */
  private scheduleResync(delayMs: number): void {
    clearTimeout(this.resyncTimer)
    const gen = this.generation
    this.resyncTimer = setTimeout(() => {
      void this.resync(gen)
    }, delayMs)
  }

  private async resync(gen: number): Promise<void> {
    if (this.phase !== 'resyncing' || gen !== this.generation) return
    let held: number
    try {
      held = await this.link.resync()
    } catch (err) {
      // A newer attempt (woken by the destination moving) may have succeeded meanwhile: this answer is moot.
      if (gen !== this.generation || this.phase !== 'resyncing') return
      this.noteError('setup', (err as Error).message)
      this.scheduleResync(Math.max(this.backoff.next(), this.notBefore - Date.now()))
      return
    }
    if (gen !== this.generation || this.phase !== 'resyncing') return
    if (held > this.acked) {
      this.logger.info(
        { ackedSeq: this.acked, streamHolds: held },
        'the stream already holds events past our watermark; resuming after them',
      )
      this.acked = held
      this.next = held + 1
      this.window.queue.clear()
      // An advance of the watermark like any other (what was sent before the rewind was stored after all).
      for (const l of this.ackListeners) l(this.acked, 0)
    }
    this.enter('publishing')
    this.resumedAt = Date.now()
    if (this.lastError) this.logger.info({ ackedSeq: this.acked }, this.messages.resumed)
    this.changed()
    this.pump()
  }

  private noteError(kind: string, message: string): void {
    this.stats.errors[kind] = (this.stats.errors[kind] ?? 0) + 1
    // Say each distinct problem once; counting covers the rest.
    if (this.lastError?.message !== message) this.logger.error({ sink: this.name, kind }, message)
    this.lastError = { message, at: Date.now() }
    this.changed()
  }

  // ------------------------------------------------------------ sending

  /** Drops everything unacknowledged; sending restarts at acked + 1 once publishing again. */
  private rewind(): void {
    this.generation++
    const oldest = this.window.clear()
    if (oldest !== undefined) this.pendingSinceTs = oldest
    this.next = this.acked + 1
    this.link.reset?.()
  }

  private failAndRetry(kind: string, message: string): void {
    this.noteError(kind, message)
    if (this.phase !== 'publishing') return
    this.enter('resyncing')
    // The destination's Retry-After, when it gave one, outranks our own backoff.
    this.scheduleResync(Math.max(this.backoff.next(), this.notBefore - Date.now()))
  }

  private readonly onCommit = (records: readonly StoredRecord[]): void => {
    const prev = this.lastCommitSeen
    this.lastCommitSeen = records[records.length - 1]!.seq
    if (this.pendingSinceTs === undefined && this.acked < records[0]!.seq) this.pendingSinceTs = records[0]!.ts
    // Live path: when we hold everything up to the previous commit, take these without a read.
    const queue = this.window.queue
    if (
      this.phase === 'publishing' &&
      !this.reading &&
      this.next === prev + 1 &&
      queue.length + records.length <= QUEUE_CAP
    ) {
      for (const r of records) queue.push(r)
      this.next = this.lastCommitSeen + 1
    }
    this.pump()
  }

  private pump(): void {
    if (this.phase !== 'publishing') return
    const queue = this.window.queue
    // Read ahead before sending: the read runs off the main thread while the records below are
    // encoded and sent, and a second page stays queued so the window never waits for the disk (nor
    // for it when the sink sends again after standing back for capture).
    if (!this.reading && queue.length < READ_AHEAD_PAGES * READ_PAGE && this.next <= this.opts.log.lastSeq)
      void this.readAhead()
    if (this.yieldsToCapture()) return
    const before = queue.length
    while (this.phase === 'publishing' && this.window.inFlight < this.tuning.maxInFlight && queue.length > 0)
      this.publish(queue.shift()!)
    // A window went out while standing back: the next maxYieldMs starts now (not before, so a wake-up
    // that found nothing queued yet does not use up its turn).
    if (this.yieldingSince !== 0 && queue.length < before) this.yieldingSince = this.clock()
  }

  /** True while capture has a backlog the store has not taken yet (bounded by maxYieldMs at a time). */
  private yieldsToCapture(): boolean {
    if (this.opts.log.pendingBytes <= this.tuning.yieldBacklogBytes) {
      this.yieldingSince = 0
      return false
    }
    const now = this.clock()
    if (this.yieldingSince === 0) this.yieldingSince = now
    return now - this.yieldingSince < this.tuning.maxYieldMs
  }

  private clock(): number {
    return (this.opts.now ?? Date.now)()
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
          `local retention removed events before the ${this.name} sink sent them`,
        )
        this.next = first
      }
      const page = await this.opts.log.read({ order: 'asc', cursor: this.next, limit: READ_PAGE })
      if (gen !== this.generation) return
      for (const r of page.records) this.window.queue.push(r)
      const last = page.records[page.records.length - 1]
      this.next = last ? last.seq + 1 : Math.max(this.next, this.opts.log.lastSeq + 1)
      if (!last) this.settleGap()
    } catch (err) {
      this.logger.error({ err, sink: this.name }, 'sink could not read the event log')
    } finally {
      this.reading = false
    }
    if (gen === this.generation) this.pump()
  }

  private publish(rec: StoredRecord): void {
    try {
      this.link.publish(servedNow(this.opts.mapping, rec))
    } catch (err) {
      this.failAndRetry('publish', `publish failed: ${(err as Error).message}`)
      return
    }
    this.window.sent(rec, Date.now())
  }

  private advance(): void {
    const moved = this.window.takeAckedRun(entry => {
      this.acked = entry.seq
      if (entry.skipped) this.stats.skippedEvents++
      else {
        this.stats.shippedEvents++
        this.stats.shippedBytes += entry.bytes
      }
      for (const l of this.ackListeners) l(entry.seq, entry.ts)
    })
    if (!moved) return
    // Acks flow again: an error from before the last resume no longer describes the sink (counters keep it).
    if (this.lastError && this.lastError.at < this.resumedAt) this.lastError = undefined
    this.settleGap()
    this.pendingSinceTs = undefined
    this.backoff.reset()
    if (this.window.inFlight === 0) for (const w of this.stopWaiters.splice(0)) w()
    this.pump()
  }

  /**
   * Positions below `next` without records (seqs skipped by load shedding or an unclean stop) never get an
   * ack: once everything sent is acknowledged, the watermark covers them too.
   */
  private settleGap(): void {
    if (this.window.empty && this.next - 1 > this.acked) {
      this.acked = this.next - 1
      for (const l of this.ackListeners) l(this.acked, 0)
    }
  }

  private readonly sweep = (): void => {
    const oldest = this.window.oldest()
    if (this.phase === 'publishing' && oldest && Date.now() - oldest.sentAt > this.tuning.ackTimeoutMs) {
      this.failAndRetry(
        'timeout',
        `no ${this.opts.ackName ?? 'acknowledgement'} for seq ${oldest.seq} within ${this.tuning.ackTimeoutMs} ms; re-sending from seq ${this.acked + 1}`,
      )
    }
  }
}
