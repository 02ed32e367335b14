// Live SSE streams of committed envelopes (GET /browsers/{id}/telemetry/stream).
//
// Exact handover between stored backlog and live events: a stream is registered for commits
// *before* it reads the backlog. While it pages the store from its resume point, committed batches
// are buffered; once a read finds nothing more, the buffer is drained from the last seq sent. So
// every record is sent once, in seq order, with no hole (see src/api/README.md for the argument).
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
import type { EventReader } from './telemetry-source.js'
import { silentLogger, type Logger } from '../log.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { withDefaults } from '../util/defaults.js'
import type { ReadMapping } from '../store/read-mapping.js'
import { MessageRing, type MessageBatch } from './message-ring.js'
import { sseMessages } from './messages.js'
import { StreamClient, type StreamStart, type StreamStats } from './stream-client.js'

export { sseMessages } from './messages.js'
export type { StreamStart, StreamStats } from './stream-client.js'

/**
 * Every option's default, set once here (the daemon's come from its configuration). The first six
 * are every SSE client's, whatever feeds it (fleet serve's streams use them too).
 */
export const CLIENT_STREAM_DEFAULTS = {
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
}
const STREAM_DEFAULTS = {
  ...CLIENT_STREAM_DEFAULTS,
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
/** What the daemon's configuration sets of its streams (--stream-*, --max-stream-clients), as one component. */
export type StreamSettings = Pick<
  StreamTuning,
  'keepaliveMs' | 'bufferEvents' | 'bufferBytes' | 'ringBytes' | 'maxClients'
>

export interface TelemetryStreamsOptions extends Partial<StreamTuning> {
  logger?: Logger
  /** Console stacks as readers serve them (source maps): replays, live writes and the ring alike. */
  mapping?: ReadMapping
}

/** Every open stream of the daemon; one commit listener fans each batch out to all of them. */
export class TelemetryStreams {
  private readonly clients = new Set<StreamClient>()
  private readonly unsubscribe: () => void
  private closing = false
  /** Committed records not yet written to the clients (coalescing), and when the last write went out. */
  private pending: StoredRecord[] = []
  private flushTimer: NodeJS.Timeout | undefined
  private lastFlush = -Infinity
  /** Recent write batches (complete after ring.coveredAfter while a stream is open), mapped at `ringGeneration`. */
  private readonly ring_: MessageRing
  private ringGeneration: number
  readonly stats: StreamStats = { open: 0, slowDisconnects: 0, refused: 0, ringResumes: 0, storeResumes: 0 }

  /** The options in force, every default applied. */
  readonly opts: StreamTuning
  readonly logger: Logger
  /** What replays read: the log, its pages mapped when a mapping is given. */
  readonly log: EventReader & { readonly lastSeq: number }
  private readonly mapping: ReadMapping | undefined

  constructor(log: EventLog, opts: TelemetryStreamsOptions) {
    const { logger, mapping, ...tuning } = opts
    this.opts = withDefaults(STREAM_DEFAULTS, tuning)
    this.logger = logger ?? silentLogger
    this.ring_ = new MessageRing(this.opts.ringBytes)
    this.mapping = mapping
    this.ringGeneration = mapping?.generation ?? 0
    this.log = mapping
      ? {
          read: async q => {
            const page = await log.read(q)
            return { ...page, records: await mapping.mapRecords(page.records) }
          },
          get lastSeq() {
            return log.lastSeq
          },
        }
      : log
    this.unsubscribe = log.onCommit(this.onCommit)
  }

  /**
   * The messages kept for resumes. Once a map became known after they were written they may now
   * map further: they are forgotten, and a resume reads the log again.
   */
  get ring(): MessageRing {
    const generation = this.mapping?.generation ?? 0
    if (generation !== this.ringGeneration) {
      this.ringGeneration = generation
      this.ring_.clear()
    }
    return this.ring_
  }

  /** SSE messages of committed records as this daemon serves them (stacks mapped from memory). */
  messages(records: readonly StoredRecord[]): MessageBatch {
    return sseMessages(this.mapping ? this.mapping.mapRecordsNow(records) : records)
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

  /** The route's entry (StreamOpener): nothing can fail before the response starts for the log. */
  prepare(_browserId: string, start: StreamStart): Promise<(res: ServerResponse) => Promise<void>> {
    return Promise.resolve(res => this.open(res, start))
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
    const batch = this.messages(records)
    this.ring.append(batch)
    for (const s of this.clients) {
      if (s.mode === 'live') s.deliver(batch)
      else if (s.mode === 'ring') s.pump()
    }
  }
}
