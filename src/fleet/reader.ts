// Reading the fleet stream back (CLI `fleet tail` / `fleet read`): one ordered consumer with a single
// filter subject (nats-server 2.9 refuses filter_subjects arrays), the rest filtered client-side.
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { DeliverPolicy, jetstream, jetstreamManager, type JsMsg, type OrderedConsumerOptions } from '@nats-io/jetstream'
import type { Category } from '../events/index.js'
import { connectionOptions, type NatsAuth } from '../nats/connect.js'
import { HEADER_BROWSER_ID, HEADER_SEQ, decodeSubjectToken, encodeSubjectToken } from '../nats/subject.js'

export interface FleetQuery {
  stream: string
  subjectPrefix: string
  browserId?: string
  categories?: Category[]
  /**
   * Unix microseconds, matched against the stream's store time (within shipping lag of the event ts).
   * Undefined: only new messages when following, everything when reading.
   */
  sinceUs?: number
}

export interface FleetMessage {
  browserId: string
  seq: number
  category: string
  /** The envelope JSON exactly as shipped (what the daemon's read API returns). */
  json: string
  /** Stream sequence and pending count after this message (0 = caught up with the stream). */
  streamSeq: number
  pending: number
}

/** The one filter subject a 2.9 server accepts; categories beyond one are filtered client-side. */
export function filterSubject(q: FleetQuery): string {
  const browser = q.browserId !== undefined ? encodeSubjectToken(q.browserId) : '*'
  const category = q.categories && q.categories.length === 1 ? q.categories[0]! : '*'
  return `${q.subjectPrefix}.${browser}.${category}`
}

export function toFleetMessage(m: JsMsg, prefix: string): FleetMessage {
  const tokens = m.subject.slice(prefix.length + 1).split('.')
  const browserId = m.headers?.get(HEADER_BROWSER_ID) || decodeSubjectToken(tokens[0] ?? '') || (tokens[0] ?? '')
  return {
    browserId,
    seq: Number(m.headers?.get(HEADER_SEQ)),
    category: tokens[1] ?? '',
    json: m.string(),
    streamSeq: m.seq,
    pending: m.info.pending,
  }
}

export async function connectFleet(auth: NatsAuth): Promise<NatsConnection> {
  return connect(await connectionOptions(auth, { name: 'browser-telemetry fleet', noAsyncTraces: true, timeout: 5000 }))
}

/**
 * Calls onMessage for each matching message in stream order (return false to stop). With follow,
 * runs until signal aborts; without, stops once caught up with the stream.
 */
export async function readFleet(
  nc: NatsConnection,
  q: FleetQuery & { follow: boolean; signal?: AbortSignal },
  onMessage: (m: FleetMessage) => Promise<boolean | void> | boolean | void,
): Promise<void> {
  const opts: Partial<OrderedConsumerOptions> = { filter_subjects: filterSubject(q) }
  if (q.sinceUs !== undefined) {
    opts.deliver_policy = DeliverPolicy.StartTime
    opts.opt_start_time = new Date(Math.floor(q.sinceUs / 1000)).toISOString()
  } else {
    opts.deliver_policy = q.follow ? DeliverPolicy.New : DeliverPolicy.All
  }
  // Fails clearly when the stream does not exist (before any consumer is made).
  await (await jetstreamManager(nc)).streams.info(q.stream)
  const consumer = await jetstream(nc).consumers.get(q.stream, opts)
  const wanted = q.categories && q.categories.length > 1 ? new Set<string>(q.categories) : undefined
  if (!q.follow && (await consumer.info(true)).num_pending === 0) return
  const messages = await consumer.consume({ max_messages: 512 })
  const stop = () => {
    void messages.close()
  }
  q.signal?.addEventListener('abort', stop, { once: true })
  try {
    for await (const m of messages) {
      const fm = toFleetMessage(m, q.subjectPrefix)
      if (!wanted || wanted.has(fm.category)) {
        if ((await onMessage(fm)) === false) break
      }
      if (!q.follow && fm.pending === 0) break
    }
  } finally {
    q.signal?.removeEventListener('abort', stop)
    await messages.close()
  }
}
