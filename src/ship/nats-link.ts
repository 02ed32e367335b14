// The shipper's NATS side: one connection (connected again after every loss), the ack inbox, the
// stream set-up and resync question, and the publish call. Everything NATS-specific lives here; the
// shipper sees only the ShipTransport calls and the LinkEvents it is told.
//
// Why nc.publish with a reply subject instead of js.publish: the client builds a request (with a
// stack trace) per js.publish; one ack subscription + one timeout sweep was ~4x faster here (bench/ship.ts).
import { connect, createInbox, MsgHdrsImpl, type Msg, type NatsConnection } from '@nats-io/transport-node'
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import type { Category } from '../events/index.js'
import type { StoredRecord } from '../store/event-log.js'
import type { Logger } from '../log.js'
import type { Backoff } from '../util/backoff.js'
import type { LinkEvents, ShipLink } from '../sink/link.js'
import { connectionOptions, redactUrl, type NatsAuth } from '../nats/connect.js'
import { ensureStream, highestStoredSeq, type StreamLimits } from '../nats/stream.js'
import { HEADER_BROWSER_ID, HEADER_MSG_ID, HEADER_SEQ, msgIdOf, subjectOf } from '../nats/subject.js'

export const PUBLISH_ERROR_KINDS = ['connect', 'setup', 'timeout', 'no_responders', 'stream', 'publish'] as const
export type PublishErrorKind = (typeof PUBLISH_ERROR_KINDS)[number]
export type { LinkEvents, Refusal, ShipLink, ShipTransport } from '../sink/link.js'

export interface NatsLinkOptions {
  browserId: string
  nats: NatsAuth
  stream: string
  subjectPrefix: string
  limits: StreamLimits
}

export class NatsLink implements ShipLink {
  private running = false
  private nc: NatsConnection | undefined
  private jsm: JetStreamManager | undefined
  private inbox = ''
  private retryTimer: NodeJS.Timeout | undefined
  private connectLoop: Promise<void> | undefined
  private wakeConnectLoop: (() => void) | undefined
  private readonly subjects = new Map<Category, string>()
  private readonly headers: ShippedHeaders

  constructor(
    private readonly opts: NatsLinkOptions,
    private readonly events: LinkEvents,
    private readonly backoff: Backoff,
    private readonly logger: Logger,
  ) {
    this.headers = new ShippedHeaders(opts.browserId)
  }

  /** The server the connection is on now, credentials removed (undefined while not connected). */
  get server(): string | undefined {
    const nc = this.nc
    return nc && !nc.isClosed() ? redactUrl(nc.getServer()) : undefined
  }

  /** Starts connecting in the background. */
  start(): void {
    this.running = true
    this.connectLoop = this.runConnectLoop()
  }

  /** Closes the connection; a connect attempt in progress is given half a second to notice. */
  async stop(): Promise<void> {
    this.running = false
    clearTimeout(this.retryTimer)
    this.wakeConnectLoop?.()
    const nc = this.nc
    this.nc = undefined
    if (nc) await nc.close().catch(() => undefined)
    // A connect attempt in progress may take its full timeout; it closes itself once it sees we stopped.
    await Promise.race([this.connectLoop?.catch(() => undefined), new Promise(r => setTimeout(r, 500).unref())])
  }

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
        this.logger.info({ server: redactUrl(nc.getServer()) }, 'connected to NATS')
        this.events.up()
        void this.watchStatus(nc)
        this.inbox = createInbox() + '.'
        nc.subscribe(this.inbox + '*', { callback: (_err, msg) => this.onAck(msg) })
        // A clustered stream that lost its leader drops publishes until a new one is elected; the new
        // leader's advisory wakes the sink at once instead of after an ack timeout or a backoff.
        nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${this.opts.stream}`, {
          callback: () => this.events.moved?.(),
        })
        // No account-info probe: the stream request of the resync fails as clearly when JetStream is off,
        // and a fleet reconnecting together asks one round trip less.
        this.jsm = await jetstreamManager(nc, { timeout: 5000, checkAPI: false })
        this.events.ready()
        const closedWith = await nc.closed()
        if (!this.running) return
        this.events.error('connect', `NATS connection closed${closedWith ? `: ${closedWith.message}` : ''}`)
      } catch (err) {
        if (!this.running) return
        this.events.error(
          'connect',
          `cannot connect to NATS (${this.opts.nats.servers.map(redactUrl).join(', ')}): ${(err as Error).message}`,
        )
        await nc?.close().catch(() => undefined)
      }
      this.events.down()
      this.nc = undefined
      this.jsm = undefined
      const wait = this.backoff.next()
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
        this.logger.warn({ server: redactUrl(s.server) }, 'NATS disconnected; shipping paused, the client reconnects')
        this.events.down()
      } else if (s.type === 'reconnect') {
        this.logger.info({ server: redactUrl(s.server) }, 'NATS reconnected; resynchronising with the stream')
        this.events.up()
        this.events.ready()
      } else if (s.type === 'error') {
        this.events.error('connect', `NATS: ${s.error.message}`)
      }
    }
  }

  /** Ensures the stream, then asks it for the last message of each of our subjects. */
  async resync(): Promise<number> {
    const jsm = this.jsm
    if (!jsm) throw new Error('not connected')
    try {
      const probe = subjectOf(this.opts.subjectPrefix, this.opts.browserId, 'console')
      // Both questions at once (one round trip, not two): a stream that had to be created holds
      // nothing of ours, so its "not found" answers to the second mean 0.
      const [ensured, held] = await Promise.all([
        ensureStream(jsm, this.opts.stream, this.opts.subjectPrefix, this.opts.limits, probe),
        highestStoredSeq(jsm, this.opts.stream, this.opts.subjectPrefix, this.opts.browserId).catch((err: unknown) => {
          if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return -1
          throw err
        }),
      ])
      if (ensured.created)
        this.logger.info(
          { stream: this.opts.stream, subjects: ensured.info.config.subjects },
          'created JetStream stream',
        )
      if (ensured.warning) this.logger.warn(ensured.warning)
      if (held >= 0) return held
      // Not found while we asked, found or created by ensureStream: ask again (another daemon may
      // have created it between, but it holds nothing of this browser unless we sent it).
      return ensured.created
        ? 0
        : await highestStoredSeq(jsm, this.opts.stream, this.opts.subjectPrefix, this.opts.browserId)
    } catch (err) {
      throw new Error(`JetStream stream ${this.opts.stream}: ${(err as Error).message}`, { cause: err })
    }
  }

  publish(rec: StoredRecord): void {
    const nc = this.nc
    if (!nc) throw new Error('not connected')
    // One header object, its seq rewritten per message: publish() encodes it synchronously.
    const h = this.headers
    h.seq = rec.seq
    let subject = this.subjects.get(rec.category)
    if (!subject)
      this.subjects.set(rec.category, (subject = subjectOf(this.opts.subjectPrefix, this.opts.browserId, rec.category)))
    // The stored bytes go out as they are: no decode to a string and encode back.
    nc.publish(subject, rec.envelopeBytes ?? rec.json, { headers: h, reply: this.inbox + rec.seq })
  }

  private onAck(msg: Msg): void {
    const seq = Number(msg.subject.slice(this.inbox.length))
    if (msg.headers?.code === 503) {
      this.events.ack(seq, {
        kind: 'no_responders',
        message: `no JetStream stream answers on ${subjectOf(this.opts.subjectPrefix, this.opts.browserId, 'console')} (stream ${this.opts.stream} missing or not covering ${this.opts.subjectPrefix}.>)`,
      })
      return
    }
    // A PubAck is {"stream":..,"seq":..[,"duplicate":true]}; only anything else (an error) is worth
    // decoding, so the bytes are checked as they are.
    const data = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength)
    if (!data.subarray(0, 9).equals(PUB_ACK_START) || data.includes(ERROR_KEY)) {
      const text = msg.string()
      let body: { error?: { code?: number; err_code?: number; description?: string } }
      try {
        body = JSON.parse(text) as typeof body
      } catch {
        body = {}
      }
      body.error ??= { description: `unexpected ack: ${text.slice(0, 100)}` }
      this.events.ack(seq, {
        kind: 'stream',
        message: `JetStream refused seq ${seq}: ${body.error.description ?? 'error'} (${body.error.err_code ?? body.error.code ?? '?'})`,
      })
      return
    }
    this.events.ack(seq)
  }
}

const PUB_ACK_START = Buffer.from('{"stream"')
const ERROR_KEY = Buffer.from('"error"')

/**
 * The three headers of a shipped message, written straight to bytes: the base class rebuilds its
 * map, validates and encodes every header per message, and these differ only in the seq. The bytes
 * are what the base class would write (values trimmed; CR/LF refused once, here).
 */
export class ShippedHeaders extends MsgHdrsImpl {
  seq = 0
  private readonly browserId: string
  constructor(browserId: string) {
    super()
    this.browserId = MsgHdrsImpl.validHeaderValue(browserId)
  }
  override encode(): Uint8Array {
    const id = this.browserId
    const seq = this.seq
    return Buffer.from(
      `NATS/1.0\r\n${HEADER_BROWSER_ID}: ${id}\r\n${HEADER_MSG_ID}: ${msgIdOf(id, seq)}\r\n${HEADER_SEQ}: ${seq}\r\n\r\n`,
    )
  }
}
