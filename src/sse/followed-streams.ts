// SSE streams over followed sources, one feed per stream (`fleet serve`: each browser's copy in the
// fleet stream). Each stream is a StreamClient, as in the daemon, so frames, keepalives, resume,
// the bounded per-client queue and the `: lagging` cut are the same; what differs is where records
// come from. The feed starts *before* the client reads its backlog (follow() resolves with the
// highest seq held then), and records it delivers are held while the backlog is paged and written
// live afterwards: the same handover as the daemon's commit listener, with the same argument.
import type { ServerResponse } from 'node:http'
import { silentLogger, type Logger } from '../log.js'
import type { StoredRecord } from '../store/event-log.js'
import { withDefaults } from '../util/defaults.js'
import { MessageRing } from './message-ring.js'
import { sseMessages } from './messages.js'
import { StreamClient, type StreamHub, type StreamOpener, type StreamStart, type StreamStats } from './stream-client.js'
import type { FollowedSource } from './telemetry-source.js'
import { CLIENT_STREAM_DEFAULTS } from './telemetry-streams.js'

const FOLLOWED_DEFAULTS = CLIENT_STREAM_DEFAULTS
export type FollowedStreamTuning = typeof FOLLOWED_DEFAULTS

/** No ring: every stream has its own feed, so a resume reads the source from its point. */
const NO_RING = new MessageRing(0)

export class FollowedStreams implements StreamOpener {
  readonly opts: FollowedStreamTuning
  readonly stats: StreamStats = { open: 0, slowDisconnects: 0, refused: 0, ringResumes: 0, storeResumes: 0 }
  private readonly clients = new Set<StreamClient>()
  /** Streams between the route's check and their first byte count against maxClients too. */
  private starting = 0
  private closing = false
  private readonly logger: Logger

  constructor(
    private readonly sourceOf: (browserId: string) => FollowedSource,
    opts: Partial<FollowedStreamTuning> & { logger?: Logger } = {},
  ) {
    const { logger, ...tuning } = opts
    this.opts = withDefaults(FOLLOWED_DEFAULTS, tuning)
    this.logger = logger ?? silentLogger
  }

  refuseIfFull(): boolean {
    if (this.clients.size + this.starting < this.opts.maxClients && !this.closing) return false
    this.stats.refused++
    return true
  }

  async prepare(browserId: string, start: StreamStart): Promise<(res: ServerResponse) => Promise<void>> {
    const source = this.sourceOf(browserId)
    let client: StreamClient | undefined
    let early: StoredRecord[] = []
    const onRecords = (records: StoredRecord[]) => {
      if (!client) early.push(...records)
      else if (client.mode === 'backlog') client.hold(records)
      else if (client.mode === 'live') client.deliver(sseMessages(records))
    }
    this.starting++
    let feed
    try {
      feed = await source.follow(onRecords, err => {
        this.logger.warn({ err, browserId }, 'telemetry stream feed ended; closing the stream')
        client?.close()
      })
    } finally {
      this.starting--
    }
    const following = feed
    return (res: ServerResponse) => {
      const hub: StreamHub = {
        opts: this.opts,
        log: { lastSeq: following.lastSeq, read: q => source.read(q) },
        ring: NO_RING,
        messages: sseMessages,
        stats: this.stats,
        logger: this.logger,
      }
      const c = new StreamClient(hub, res, start)
      client = c
      this.clients.add(c)
      this.stats.open = this.clients.size
      void c.done.finally(() => {
        following.stop()
        this.clients.delete(c)
        this.stats.open = this.clients.size
      })
      c.begin()
      if (c.mode === 'backlog') c.hold(early)
      else if (c.mode === 'live' && early.length > 0) c.deliver(sseMessages(early))
      early = []
      return c.done
    }
  }

  /** Ends every stream (stalled sockets are destroyed after graceMs). */
  async closeAll(graceMs = 2000): Promise<void> {
    this.closing = true
    await Promise.all([...this.clients].map(c => c.end(graceMs)))
  }
}
