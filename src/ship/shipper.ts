// The fleet shipper: the sink core with the NATS JetStream transport (nats-link.ts). Re-sends carry
// `Nats-Msg-Id: <browser_id>:<seq>`, so the stream's duplicate window drops copies; after every
// (re)connect the link asks the stream for the last message of each `<prefix>.<browser>.<category>`
// subject, because an outage longer than the duplicate window would otherwise turn re-sends into
// duplicates. The stream is the truth for what it holds.
import type { Logger } from '../log.js'
import type { NatsAuth } from '../nats/connect.js'
import type { StreamLimits } from '../nats/stream.js'
import { NatsLink, PUBLISH_ERROR_KINDS, type PublishErrorKind } from './nats-link.js'
import { Sink, SINK_DEFAULTS, type SinkOptions } from '../sink/sink.js'
import { watermarkName } from '../sink/watermark.js'
import type { ShipHealth } from '../sink/sink-health.js'

export { PUBLISH_ERROR_KINDS, type PublishErrorKind } from './nats-link.js'
export { watermarkName } from '../sink/watermark.js'
export { SHIP_STATES, type ShipHealth, type ShipState, type ShipStats } from '../sink/sink-health.js'

export const SHIPPER_DEFAULTS = SINK_DEFAULTS

export interface ShipperOptions extends Omit<
  SinkOptions,
  'name' | 'watermarkName' | 'errorKinds' | 'link' | 'describe' | 'messages' | 'ackName'
> {
  browserId: string
  nats: NatsAuth
  stream: string
  subjectPrefix: string
  limits: StreamLimits
  logger?: Logger
}

export class Shipper extends Sink {
  declare readonly stats: Sink['stats'] & { errors: Record<PublishErrorKind, number> }

  constructor(opts: ShipperOptions) {
    let link: NatsLink | undefined
    super({
      ...opts,
      name: 'nats',
      watermarkName: watermarkName(opts.stream, opts.subjectPrefix),
      errorKinds: PUBLISH_ERROR_KINDS,
      link: (events, backoff, logger) => (link = new NatsLink(opts, events, backoff, logger)),
      describe: () => ({
        stream: opts.stream,
        subject_prefix: opts.subjectPrefix,
        ...(link?.server ? { server: link.server } : {}),
      }),
      ackName: 'JetStream ack',
      messages: {
        started: 'fleet shipping on; connecting to NATS',
        stopped: 'fleet shipping stopped',
        resumed: 'fleet shipping resumed',
      },
    })
  }

  override health(): ShipHealth {
    return super.health() as ShipHealth
  }
}
