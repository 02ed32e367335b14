// Live SSE streams of committed envelopes (GET /browsers/{id}/telemetry/stream).
//
// Exact handover between stored backlog and live events: a stream is registered for commits
// *before* it reads the backlog. While it pages the store from its resume point, committed batches
// are buffered; once a read finds nothing more, the buffer is drained from the last seq sent. So
// every record is sent once, in seq order, with no hole (see README.md for the argument).
//
// Live fan-out: committed records are framed once per write for every client, and a client gets
// at most one write per `coalesceMs` (commits in between are joined): at 10k events/s and 100
// clients that is a few thousand writes a second, not one per commit per client.
//
// Slow clients never block ingest or other clients: when the socket stops draining, frames queue
// per client; once the undrained write plus the queue hold more than `bufferEvents` events or
// `bufferBytes` bytes the queue is dropped, a final `: lagging` comment ends the response and the
// client resumes with Last-Event-ID. Memory per client is therefore bounded by bufferBytes plus one
// commit batch; replay reads the store page by page (never the whole backlog at once).
import type { ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import { silentLogger, type Logger } from '../log.js'

export type StreamStart =
  | { kind: 'new' } // only events committed from now on
  | { kind: 'oldest' } // replay=all: from the oldest retained event
  | { kind: 'after'; seq: number } // Last-Event-ID: events with seq > this

export interface TelemetryStreamsOptions {
  /** Interval of `: keepalive` comments while no event was written. */
  keepaliveMs: number
  /** Queued events per client (socket not draining) before it is disconnected. */
  bufferEvents: number
  /** Queued bytes per client (undrained write + queue) before it is disconnected (default 8 MiB). */
  bufferBytes?: number
  /** Open streams at most; the route answers 429 beyond (default 64). */
  maxClients?: number
  /** How long a lagging client's final comment may take to drain before the socket is destroyed (default 5 s). */
  lagCloseGraceMs?: number
  /** Backlog page size. */
  pageSize?: number
  /**
   * Live writes to a client at most this often (default 20 ms): commits arriving sooner are
   * coalesced into the next write. A commit after a quiet spell is written at once; under a flood
   * each client gets one larger write per interval instead of one per commit (0 = every commit).
   */
  coalesceMs?: number
  logger?: Logger
}

export interface StreamStats { open: number; slowDisconnects: number; refused: number }

export const DEFAULT_STREAM_BUFFER_BYTES = 8 * 1024 * 1024
export const DEFAULT_MAX_STREAM_CLIENTS = 64
export const DEFAULT_STREAM_COALESCE_MS = 20

/**
 * SSE frames of records, encoded once (the same bytes go to every live client). Records from the
 * write path carry their envelope bytes: those are copied, not decoded and encoded again.
 */
const frames = (records: readonly StoredRecord[]): Buffer => {
  let size = 0
  for (const r of records) {
    if (r.envelopeBytes === undefined) return framesOfText(records)
    size += 13 + String(r.seq).length + r.envelopeBytes.byteLength // `id: `, `\ndata: `, `\n\n`
  }
  const out = Buffer.allocUnsafe(size)
  let at = 0
  for (const r of records) {
    at += out.write(`id: ${r.seq}\ndata: `, at, 'latin1')
    out.set(r.envelopeBytes!, at)
    at += r.envelopeBytes!.byteLength
    out[at++] = 0x0a
    out[at++] = 0x0a
  }
  return out
}
const framesOfText = (records: readonly StoredRecord[]): Buffer => {
  let s = ''
  for (const r of records) s += `id: ${r.seq}\ndata: ${r.json}\n\n`
  return Buffer.from(s, 'utf8')
}
const KEEPALIVE = Buffer.from(': keepalive\n\n')
/** Last words to a client that fell behind (an SSE comment: EventSource ignores it, then reconnects). */
const LAGGING = Buffer.from(': lagging: client too slow, closing; reconnect with Last-Event-ID to resume\n\n')

/** Every open stream of the daemon; one commit listener fans each batch out to all of them. */
export class TelemetryStreams {
  private readonly sessions = new Set<StreamSession>()
  private readonly unsubscribe: () => void
  private closing = false
  /** Committed records not yet written to the live clients (coalescing), and when the last write went out. */
  private pending: StoredRecord[] = []
  private flushTimer: NodeJS.Timeout | undefined
  private lastFlush = -Infinity
  readonly stats: StreamStats = { open: 0, slowDisconnects: 0, refused: 0 }

  constructor(readonly log: EventLog, readonly opts: TelemetryStreamsOptions) {
    this.unsubscribe = log.onCommit(this.onCommit)
  }

  get size(): number { return this.sessions.size }

  /** True when another stream would exceed maxClients (the route answers 429 and counts it). */
  full(): boolean {
    if (this.sessions.size < (this.opts.maxClients ?? DEFAULT_MAX_STREAM_CLIENTS)) return false
    this.stats.refused++
    return true
  }

  /** Takes over `res` (headers, body, end) and streams from `start`. Returns the session's end. */
  open(res: ServerResponse, start: StreamStart): Promise<void> {
    if (this.closing) { res.writeHead(503).end(); return Promise.resolve() }
    const session = new StreamSession(this, res, start)
    this.sessions.add(session)
    this.stats.open = this.sessions.size
    session.done.finally(() => { this.sessions.delete(session); this.stats.open = this.sessions.size })
    session.begin()
    return session.done
  }

  /** Ends every stream cleanly (stalled sockets are destroyed after `graceMs`) and stops listening. */
  async closeAll(graceMs = 2000): Promise<void> {
    this.closing = true
    this.unsubscribe()
    this.flush() // what was committed reaches the live clients before their streams end
    await Promise.all([...this.sessions].map((s) => s.end(graceMs)))
  }

  private readonly onCommit = (records: readonly StoredRecord[]): void => {
    let live = false
    for (const s of this.sessions) {
      if (s.mode === 'live') live = true
      else if (s.mode === 'backlog') s.hold(records)
    }
    if (!live) return
    for (const r of records) this.pending.push(r)
    if (this.flushTimer) return
    const coalesceMs = this.opts.coalesceMs ?? DEFAULT_STREAM_COALESCE_MS
    const wait = this.lastFlush + coalesceMs - performance.now()
    if (wait <= 0) this.flush()
    else this.flushTimer = setTimeout(this.flush, wait)
  }

  /**
   * One write of every pending record to each live client, framed once for all. A session that
   * went live after some of them were committed held those and sent them itself: deliver() skips
   * what is at or below its last sent seq.
   */
  private readonly flush = (): void => {
    if (this.flushTimer) { clearTimeout(this.flushTimer); this.flushTimer = undefined }
    this.lastFlush = performance.now()
    const records = this.pending
    if (records.length === 0) return
    this.pending = []
    let chunk: Buffer | undefined
    for (const s of this.sessions) {
      if (s.mode !== 'live') continue
      chunk ??= frames(records)
      s.deliver(records, chunk)
    }
  }
}

class StreamSession {
  mode: 'backlog' | 'live' | 'closed' = 'backlog'
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
  readonly done = new Promise<void>((r) => { this.resolveDone = r })
  private readonly logger: Logger
  /** A method, not a field read, so TypeScript does not narrow it across awaits. */
  private isClosed(): boolean { return this.mode === 'closed' }

  constructor(private readonly hub: TelemetryStreams, private readonly res: ServerResponse, private readonly start: StreamStart) {
    this.logger = hub.opts.logger ?? silentLogger
  }

  begin(): void {
    const { res } = this
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'Connection': 'keep-alive',
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
    void this.replay().catch((err) => {
      this.logger.warn({ err: (err as Error).message }, 'telemetry stream backlog read failed; closing the stream')
      this.close()
    })
  }

  private async replay(): Promise<void> {
    const pageSize = this.hub.opts.pageSize ?? 500
    for (;;) {
      this.heldOverflowed = false
      const page = await this.hub.log.read({ order: 'asc', limit: pageSize, cursor: this.lastSent + 1 })
      if (this.isClosed()) return
      const fresh = page.records.filter((r) => r.seq > this.lastSent)
      if (fresh.length > 0) this.write(frames(fresh), fresh.length, fresh[fresh.length - 1]!.seq)
      if (this.blocked) await this.drainedOrClosed()
      if (this.isClosed()) return
      if (page.hasMore) continue
      // Caught up with the store. If held commits were dropped during that read, read again.
      if (this.heldOverflowed) continue
      break
    }
    const rest = this.held.filter((r) => r.seq > this.lastSent)
    this.held = []
    this.heldBytes = 0
    if (rest.length > 0) this.write(frames(rest), rest.length, rest[rest.length - 1]!.seq)
    this.mode = 'live'
  }

  private drainedOrClosed(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => { this.res.off('drain', done); this.res.off('close', done); resolve() }
      this.res.on('drain', done).on('close', done)
    })
  }

  /** Backlog mode: keep commits until the backlog is read; past the cap drop them and re-read the store instead. */
  hold(records: readonly StoredRecord[]): void {
    let bytes = 0
    for (const r of records) bytes += r.envelopeBytes?.byteLength ?? r.json.length
    if (this.held.length + records.length > this.hub.opts.bufferEvents ||
      this.heldBytes + bytes > (this.hub.opts.bufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES)) {
      this.held = []
      this.heldBytes = 0
      this.heldOverflowed = true
      return
    }
    for (const r of records) this.held.push(r)
    this.heldBytes += bytes
  }

  /** Live mode: committed records in seq order; `chunk` is their frames, shared by every client. */
  deliver(records: readonly StoredRecord[], chunk: Buffer): void {
    const last = records[records.length - 1]!.seq
    let events = records.length
    if (records[0]!.seq <= this.lastSent) {
      const fresh = records.filter((r) => r.seq > this.lastSent)
      if (fresh.length === 0) return
      chunk = frames(fresh)
      events = fresh.length
    }
    this.write(chunk, events, last)
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
      if (this.undrained + this.queuedEvents > this.hub.opts.bufferEvents ||
        this.undrainedBytes + this.queuedBytes > (this.hub.opts.bufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES)) {
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
      const t = setTimeout(() => res.destroy(), this.hub.opts.lagCloseGraceMs ?? 5000)
      t.unref()
      res.once('close', () => clearTimeout(t))
    }
    this.close()
  }

  private readonly onDrain = (): void => {
    this.blocked = false
    this.undrained = 0
    this.undrainedBytes = 0
    if (this.queued.length === 0) return
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
    if (!ok) { this.blocked = true; this.undrained = events; this.undrainedBytes = bytes }
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
    if (this.keepalive) { clearInterval(this.keepalive); this.keepalive = undefined }
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
