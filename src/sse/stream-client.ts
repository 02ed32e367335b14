// One SSE client of the telemetry stream (GET /browsers/{id}/telemetry/stream): it registers for
// commits before it reads its backlog, pages the store (or the frame ring) from its resume point,
// then goes live; when its socket stops draining it queues, and past its bounds it is cut with a
// final `: lagging` comment (it resumes with Last-Event-ID). TelemetryStreams (telemetry-stream.ts)
// owns every client and the fan-out.
import type { ServerResponse } from 'node:http'
import type { StoredRecord } from '../store/event-log.js'
import type { EventReader } from './telemetry-source.js'
import type { Logger } from '../log.js'
import type { MessageBatch, MessageRing } from './message-ring.js'
import { sseMessages } from './messages.js'

export type StreamStart =
  | { kind: 'new' } // only events committed from now on
  | { kind: 'oldest' } // replay=all: from the oldest retained event
  | { kind: 'after'; seq: number } // Last-Event-ID: events with seq > this

export interface StreamStats {
  open: number
  slowDisconnects: number
  refused: number
  /** Streams with a resume point (Last-Event-ID, replay=all) that started from the ring / read the store. */
  ringResumes: number
  storeResumes: number
}

/** What a client reads of the TelemetryStreams that owns it. */
export interface StreamHub {
  readonly opts: Readonly<{
    keepaliveMs: number
    pageSize: number
    bufferEvents: number
    bufferBytes: number
    lagCloseGraceMs: number
  }>
  /** The events streamed: the log, or a followed source with the last seq it held when the feed started. */
  readonly log: EventReader & { readonly lastSeq: number }
  readonly ring: MessageRing
  readonly stats: StreamStats
  /** SSE messages of committed records as live writes serve them (held commits go out the same way). */
  messages(records: readonly StoredRecord[]): MessageBatch
  readonly logger: Logger
}

const KEEPALIVE = Buffer.from(': keepalive\n\n')
/** Last words to a client that fell behind (an SSE comment: EventSource ignores it, then reconnects). */
const LAGGING = Buffer.from(': lagging: client too slow, closing; reconnect with Last-Event-ID to resume\n\n')

/** One SSE client: backlog from the store or the ring, then live writes; bounded while it lags. */
export class StreamClient {
  /** backlog: paging the store; ring: writing ring batches as the socket drains; live: written at each flush. */
  mode: 'backlog' | 'ring' | 'live' | 'closed' = 'backlog'
  /** Highest seq handed to the socket. */
  private lastSent = 0
  /** Commits heard while paging the backlog. */
  private held: StoredRecord[] = []
  private heldBytes = 0
  private heldOverflowed = false
  /** Frames waiting for the socket to drain, and how many events they hold. */
  private queued: Buffer[] = []
  private queuedEvents = 0
  private queuedBytes = 0
  /** Events and bytes of the write the socket has not drained yet (Node buffers it). */
  private undrained = 0
  private undrainedBytes = 0
  private blocked = false
  private wroteSinceTick = false
  private keepalive: NodeJS.Timeout | undefined
  private resolveDone!: () => void
  readonly done = new Promise<void>(r => {
    this.resolveDone = r
  })
  private readonly logger: Logger
  /** A method, not a field read, so TypeScript does not narrow it across awaits. */
  private isClosed(): boolean {
    return this.mode === 'closed'
  }

  constructor(
    private readonly hub: StreamHub,
    private readonly res: ServerResponse,
    private readonly start: StreamStart,
  ) {
    this.logger = hub.logger
  }

  begin(): void {
    const { res } = this
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })
    res.flushHeaders()
    res.socket?.setNoDelay(true)
    res.on('close', () => this.close())
    res.on('drain', this.onDrain)
    this.keepalive = setInterval(() => {
      if (!this.wroteSinceTick && !this.blocked) this.write(KEEPALIVE, 0)
      this.wroteSinceTick = false
    }, this.hub.opts.keepaliveMs)

    const log = this.hub.log
    // Registered (by the hub) before anything is read: lastSeq and the listener are consistent within this tick.
    if (this.start.kind === 'new' || (this.start.kind === 'after' && this.start.seq >= log.lastSeq)) {
      // An id above lastSeq can only come from another data dir: serve new events rather than wait for it.
      this.lastSent = this.start.kind === 'after' ? Math.min(this.start.seq, log.lastSeq) : log.lastSeq
      this.mode = 'live'
      return
    }
    this.lastSent = this.start.kind === 'after' ? this.start.seq : 0
    if (this.start.kind === 'after' && this.hub.ring.covers(this.lastSent)) {
      this.hub.stats.ringResumes++
      this.mode = 'ring'
      this.pump()
      return
    }
    this.hub.stats.storeResumes++
    this.startReplay()
  }

  private async replay(): Promise<void> {
    const pageSize = this.hub.opts.pageSize
    for (;;) {
      this.heldOverflowed = false
      const page = await this.hub.log.read({ order: 'asc', limit: pageSize, cursor: this.lastSent + 1 })
      if (this.isClosed()) return
      const fresh = page.records.filter(r => r.seq > this.lastSent)
      if (fresh.length > 0) this.write(sseMessages(fresh).buf, fresh.length, fresh[fresh.length - 1]!.seq)
      if (this.blocked) await this.drainedOrClosed()
      if (this.isClosed()) return
      if (this.hub.ring.covers(this.lastSent)) {
        // Reached what the ring holds: the rest comes from memory (held commits are in the ring or pending).
        this.held = []
        this.heldBytes = 0
        this.mode = 'ring'
        this.pump()
        return
      }
      if (page.hasMore) continue
      // Caught up with the store. If held commits were dropped during that read, read again.
      if (this.heldOverflowed) continue
      break
    }
    const rest = this.held.filter(r => r.seq > this.lastSent)
    this.held = []
    this.heldBytes = 0
    if (rest.length > 0) this.write(this.hub.messages(rest).buf, rest.length, rest[rest.length - 1]!.seq)
    this.mode = 'live'
  }

  /** Pages the store from the last sent seq; a failed read closes the stream (the client resumes). */
  private startReplay(): void {
    void this.replay().catch(err => {
      this.logger.warn({ err }, 'telemetry stream backlog read failed; closing the stream')
      this.close()
    })
  }

  /**
   * Ring mode: writes ring batches after the last sent seq until the socket pushes back (the next
   * drain continues), the ring has nothing more (live: what is committed but not yet written goes
   * out with the hub's next flush), or the ring no longer has the next record (back to the store).
   */
  pump(): void {
    while (this.mode === 'ring' && !this.blocked) {
      const next = this.hub.ring.after(this.lastSent)
      if (next === 'caught-up') {
        this.mode = 'live'
        return
      }
      if (next === 'behind') {
        this.mode = 'backlog'
        this.startReplay()
        return
      }
      this.write(next.buf, next.events, next.lastSeq)
    }
  }

  private drainedOrClosed(): Promise<void> {
    return new Promise<void>(resolve => {
      const done = () => {
        this.res.off('drain', done)
        this.res.off('close', done)
        resolve()
      }
      this.res.on('drain', done).on('close', done)
    })
  }

  /** Backlog mode: keep commits until the backlog is read; past the cap drop them and re-read the store instead. */
  hold(records: readonly StoredRecord[]): void {
    let bytes = 0
    for (const r of records) bytes += r.envelopeBytes?.byteLength ?? r.json.length
    if (
      this.held.length + records.length > this.hub.opts.bufferEvents ||
      this.heldBytes + bytes > this.hub.opts.bufferBytes
    ) {
      this.held = []
      this.heldBytes = 0
      this.heldOverflowed = true
      return
    }
    for (const r of records) this.held.push(r)
    this.heldBytes += bytes
  }

  /** Live mode: a write batch in seq order, its frames shared by every client. */
  deliver(batch: MessageBatch): void {
    const { seqs } = batch
    const n = seqs.length
    if (seqs[n - 1]! <= this.lastSent) return
    let i = 0
    while (seqs[i]! <= this.lastSent) i++ // went live after some of these were committed: it sent them itself
    this.write(i === 0 ? batch.buf : batch.buf.subarray(batch.starts[i]), n - i, seqs[n - 1]!)
  }

  private write(chunk: Buffer, events: number, lastSeq?: number): void {
    if (this.mode === 'closed') return
    if (lastSeq !== undefined) this.lastSent = lastSeq
    this.wroteSinceTick = true
    if (this.blocked) {
      // The socket has not drained since the last write: more data means the client is falling behind.
      this.queued.push(chunk)
      this.queuedEvents += events
      this.queuedBytes += chunk.length
      if (
        this.undrained + this.queuedEvents > this.hub.opts.bufferEvents ||
        this.undrainedBytes + this.queuedBytes > this.hub.opts.bufferBytes
      ) {
        this.lagClose()
      }
      return
    }
    this.send(chunk, events)
  }

  private send(chunk: Buffer, events: number): void {
    if (this.res.write(chunk)) return
    this.blocked = true
    this.undrained = events
    this.undrainedBytes = chunk.length
  }

  /**
   * The client fell behind by more than its buffer: the queue is dropped (never sent), a final
   * comment follows what the socket already holds, and the response ends. The client has every
   * frame up to the last id it parsed and resumes losslessly with Last-Event-ID.
   */
  private lagClose(): void {
    this.hub.stats.slowDisconnects++
    const buffered = { events: this.undrained + this.queuedEvents, bytes: this.undrainedBytes + this.queuedBytes }
    this.logger.info({ buffered, lastSent: this.lastSent }, 'telemetry stream client too slow; disconnecting')
    this.queued = []
    this.queuedEvents = 0
    this.queuedBytes = 0
    const res = this.res
    if (!res.writableEnded && !res.destroyed) {
      res.end(LAGGING)
      // A client that does not read at all never drains the comment: the socket goes after a grace period.
      const t = setTimeout(() => res.destroy(), this.hub.opts.lagCloseGraceMs)
      t.unref()
      res.once('close', () => clearTimeout(t))
    }
    this.close()
  }

  private readonly onDrain = (): void => {
    this.blocked = false
    this.undrained = 0
    this.undrainedBytes = 0
    if (this.queued.length === 0) {
      if (this.mode === 'ring') this.pump()
      return
    }
    const chunks = this.queued
    const events = this.queuedEvents
    const bytes = this.queuedBytes
    this.queued = []
    this.queuedEvents = 0
    this.queuedBytes = 0
    // Written one by one (corked into one syscall), not concatenated: the chunks are the Buffers
    // shared by every client, so a lagging client holds references, not copies.
    this.res.cork()
    let ok = true
    for (const c of chunks) ok = this.res.write(c)
    this.res.uncork()
    if (!ok) {
      this.blocked = true
      this.undrained = events
      this.undrainedBytes = bytes
    }
  }

  /** Clean end on shutdown: flush what is queued, end the response, destroy it if it does not finish in time. */
  end(graceMs: number): Promise<void> {
    if (this.mode !== 'closed') {
      for (const c of this.queued) this.res.write(c)
      this.queued = []
      this.res.end()
      const t = setTimeout(() => this.res.destroy(), graceMs)
      t.unref()
      void this.done.then(() => clearTimeout(t))
      this.stopTimers()
      this.mode = 'closed'
      this.res.once('close', () => this.resolveDone())
      if (this.res.closed) this.resolveDone()
    }
    return this.done
  }

  private stopTimers(): void {
    if (this.keepalive) {
      clearInterval(this.keepalive)
      this.keepalive = undefined
    }
  }

  close(): void {
    this.stopTimers()
    this.held = []
    this.heldBytes = 0
    this.queued = []
    this.queuedBytes = 0
    if (this.mode !== 'closed') {
      this.mode = 'closed'
      if (!this.res.writableEnded) this.res.end()
    }
    this.resolveDone()
  }
}

/** The SSE streams a server offers: the daemon's TelemetryStreams, or fleet serve's followed sources. */
export interface StreamOpener {
  readonly opts: { readonly maxClients: number }
  /** True when another stream would exceed maxClients (the route answers 429). */
  refuseIfFull(): boolean
  /**
   * Everything that can fail before the response starts (the route answers those with an error
   * object); then the returned function takes over the response and streams from `start`.
   */
  prepare(browserId: string, start: StreamStart): Promise<(res: ServerResponse) => Promise<void>>
}
