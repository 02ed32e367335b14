// Live SSE streams of committed envelopes (GET /browsers/{id}/telemetry/stream).
//
// Exact handover between stored backlog and live events: a stream is registered for commits
// *before* it reads the backlog. While it pages the store from its resume point, committed batches
// are buffered; once a read finds nothing more, the buffer is drained from the last seq sent. So
// every record is sent once, in seq order, with no hole (see README.md for the argument).
//
// Live fan-out: committed records are framed once per write for every client, and a client gets
// at most one write per `coalesceMs` (commits in between are joined): at 10k events/s and 100
// clients that is a few thousand writes a second, not one per commit per client. Each write batch
// also goes into a byte-bounded ring (frame-ring.ts): a stream resuming after a seq the ring still
// covers (a `: lagging` cut, a blip) is served from those same Buffers, and a store replay hands
// over to the ring as soon as it reaches it; the store is read only for what is older.
//
// Slow clients never block ingest or other clients: when the socket stops draining, frames queue
// per client; once the undrained write plus the queue hold more than `bufferEvents` events or
// `bufferBytes` bytes the queue is dropped, a final `: lagging` comment ends the response and the
// client resumes with Last-Event-ID. Memory per client is therefore bounded by bufferBytes plus one
// commit batch; replay reads the store page by page (never the whole backlog at once) or writes one
// ring batch per drain.
import type { ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import { silentLogger, type Logger } from '../log.js'
import { DEFAULT_SETTINGS } from '../default-settings.js'
import { withDefaults } from '../util/defaults.js'
import { FrameRing, type FrameBatch } from './frame-ring.js'

export type StreamStart =
  | { kind: 'new' } // only events committed from now on
  | { kind: 'oldest' } // replay=all: from the oldest retained event
  | { kind: 'after'; seq: number } // Last-Event-ID: events with seq > this

/** Every option's default, set once here (the daemon's come from its configuration). */
const STREAM_DEFAULTS = {
  /** Interval of `: keepalive` comments while no event was written. */
  keepaliveMs: DEFAULT_SETTINGS.streamKeepaliveMs,
  /** Queued events per client (socket not draining) before it is disconnected. */
  bufferEvents: DEFAULT_SETTINGS.streamBufferEvents,
  /** Queued bytes per client (undrained write + queue) before it is disconnected. */
  bufferBytes: DEFAULT_SETTINGS.streamBufferBytes,
  /** Open streams at most; the route answers 429 beyond. */
  maxClients: DEFAULT_SETTINGS.maxStreamClients,
  /** How long a lagging client's final comment may take to drain before the socket is destroyed. */
  lagCloseGraceMs: 5000,
  /** Backlog page size. */
  pageSize: 500,
  /**
   * Live writes to a client at most this often: commits arriving sooner are coalesced into the
   * next write. A commit after a quiet spell is written at once; under a flood each client gets
   * one larger write per interval instead of one per commit (0 = every commit).
   */
  coalesceMs: 20,
  /**
   * Frame bytes of the most recent write batches kept for resumes (0 = none): a stream resuming
   * after a seq the ring covers is served from memory, older resumes read the store.
   */
  ringBytes: DEFAULT_SETTINGS.streamRingBytes,
}
export type StreamTuning = typeof STREAM_DEFAULTS

export interface TelemetryStreamsOptions extends Partial<StreamTuning> {
  logger?: Logger
}

export interface StreamStats {
  open: number
  slowDisconnects: number
  refused: number
  /** Streams with a resume point (Last-Event-ID, replay=all) that started from the ring / read the store. */
  ringResumes: number
  storeResumes: number
}

/**
 * SSE frames of records, encoded once (the same bytes go to every live client), with where each
 * frame starts (a client that already has some of them gets a subarray, not a copy). Records from
 * the write path carry their envelope bytes: those are copied, not decoded and encoded again.
 */
export const frames = (records: readonly StoredRecord[]): FrameBatch => {
  const n = records.length
  const seqs = new Float64Array(n)
  const starts = new Uint32Array(n)
  let size = 0
  for (let i = 0; i < n; i++) {
    const r = records[i]!
    if (r.envelopeBytes === undefined) return framesOfText(records)
    seqs[i] = r.seq
    starts[i] = size
    size += 13 + String(r.seq).length + r.envelopeBytes.byteLength // `id: `, `\ndata: `, `\n\n`
  }
  const buf = Buffer.allocUnsafe(size)
  let at = 0
  for (const r of records) {
    at += buf.write(`id: ${r.seq}\ndata: `, at, 'latin1')
    buf.set(r.envelopeBytes!, at)
    at += r.envelopeBytes!.byteLength
    buf[at++] = 0x0a
    buf[at++] = 0x0a
  }
  return { buf, seqs, starts }
}
const framesOfText = (records: readonly StoredRecord[]): FrameBatch => {
  const parts: Buffer[] = []
  const seqs = new Float64Array(records.length)
  const starts = new Uint32Array(records.length)
  let size = 0
  records.forEach((r, i) => {
    const part = Buffer.from(`id: ${r.seq}\ndata: ${r.json}\n\n`, 'utf8')
    seqs[i] = r.seq
    starts[i] = size
    size += part.length
    parts.push(part)
  })
  return { buf: Buffer.concat(parts, size), seqs, starts }
}
const KEEPALIVE = Buffer.from(': keepalive\n\n')
/** Last words to a client that fell behind (an SSE comment: EventSource ignores it, then reconnects). */
const LAGGING = Buffer.from(': lagging: client too slow, closing; reconnect with Last-Event-ID to resume\n\n')

/** Every open stream of the daemon; one commit listener fans each batch out to all of them. */
export class TelemetryStreams {
  private readonly clients = new Set<StreamClient>()
  private readonly unsubscribe: () => void
  private closing = false
  /** Committed records not yet written to the clients (coalescing), and when the last write went out. */
  private pending: StoredRecord[] = []
  private flushTimer: NodeJS.Timeout | undefined
  private lastFlush = -Infinity
  /** Recent write batches (complete after ring.coveredAfter while a stream is open). */
  readonly ring: FrameRing
  readonly stats: StreamStats = { open: 0, slowDisconnects: 0, refused: 0, ringResumes: 0, storeResumes: 0 }

  /** The options in force, every default applied. */
  readonly opts: StreamTuning
  readonly logger: Logger

  constructor(
    readonly log: EventLog,
    opts: TelemetryStreamsOptions,
  ) {
    const { logger, ...tuning } = opts
    this.opts = withDefaults(STREAM_DEFAULTS, tuning)
    this.logger = logger ?? silentLogger
    this.ring = new FrameRing(this.opts.ringBytes)
    this.unsubscribe = log.onCommit(this.onCommit)
  }

  get size(): number {
    return this.clients.size
  }

  /** True when another stream would exceed maxClients: the refusal is counted (the route answers 429). */
  refuseIfFull(): boolean {
    if (this.clients.size < this.opts.maxClients) return false
    this.stats.refused++
    return true
  }

  /** Takes over `res` (headers, body, end) and streams from `start`. Returns the stream's end. */
  open(res: ServerResponse, start: StreamStart): Promise<void> {
    if (this.closing) {
      res.writeHead(503).end()
      return Promise.resolve()
    }
    const client = new StreamClient(this, res, start)
    this.clients.add(client)
    this.stats.open = this.clients.size
    void client.done.finally(() => {
      this.clients.delete(client)
      this.stats.open = this.clients.size
    })
    client.begin()
    return client.done
  }

  /** Ends every stream cleanly (stalled sockets are destroyed after `graceMs`) and stops listening. */
  async closeAll(graceMs = 2000): Promise<void> {
    this.closing = true
    this.unsubscribe()
    this.flush() // what was committed reaches the live clients before their streams end
    this.ring.clear()
    await Promise.all([...this.clients].map(s => s.end(graceMs)))
  }

  private readonly onCommit = (records: readonly StoredRecord[]): void => {
    if (this.clients.size === 0) {
      // Nobody listens: no framing work. The ring would miss these records, so it forgets everything.
      if (this.ring.coveredAfter !== undefined) this.ring.clear()
      this.pending = []
      return
    }
    for (const s of this.clients) if (s.mode === 'backlog') s.hold(records)
    for (const r of records) this.pending.push(r)
    if (this.flushTimer) return
    const coalesceMs = this.opts.coalesceMs
    const wait = this.lastFlush + coalesceMs - performance.now()
    if (wait <= 0) this.flush()
    else this.flushTimer = setTimeout(this.flush, wait)
  }

  /**
   * One write of every pending record to each live client, framed once for all, and into the
   * ring. A client that went live after some of them were committed held those and sent them
   * itself: deliver() skips what is at or below its last sent seq. Sessions catching up from the
   * ring take the new batch from there.
   */
  private readonly flush = (): void => {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer)
      this.flushTimer = undefined
    }
    this.lastFlush = performance.now()
    const records = this.pending
    if (records.length === 0) return
    this.pending = []
    const batch = frames(records)
    this.ring.append(batch)
    for (const s of this.clients) {
      if (s.mode === 'live') s.deliver(batch)
      else if (s.mode === 'ring') s.pump()
    }
  }
}

class StreamClient {
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
    private readonly hub: TelemetryStreams,
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
      if (fresh.length > 0) this.write(frames(fresh).buf, fresh.length, fresh[fresh.length - 1]!.seq)
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
    if (rest.length > 0) this.write(frames(rest).buf, rest.length, rest[rest.length - 1]!.seq)
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
  deliver(batch: FrameBatch): void {
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
