// Fleet shipping: committed envelopes -> NATS JetStream. The sink list (sinks.ts) calls
// startShipping once.
import type { Logger } from '../log.js'
import type { EventLog } from '../store/event-log.js'
import type { ReadMapping } from '../store/read-mapping.js'
import { Shipper } from './shipper.js'

export { Shipper, type ShipHealth, type ShipState } from './shipper.js'

/** The --nats-* flags as the daemon parsed them (src/config/config.ts). */
export interface NatsConfig {
  servers: string[]
  credsFile?: string
  tokenFile?: string
  tlsCa?: string
  stream: string
  subjectPrefix: string
  /** Used only when the daemon creates the stream. */
  duplicateWindowMs: number
  maxAgeMs: number
  maxBytes: number
  replicas: number
  maxInFlight: number
}

/** Starts the shipper when --nats-url is set (undefined otherwise). Never waits for NATS to be reachable. */
export async function startShipping(
  config: NatsConfig | undefined,
  deps: { log: EventLog; browserId: string; logger: Logger; mapping?: ReadMapping },
): Promise<Shipper | undefined> {
  if (!config) return undefined
  const shipper = new Shipper({
    log: deps.log,
    browserId: deps.browserId,
    nats: { servers: config.servers, credsFile: config.credsFile, tokenFile: config.tokenFile, tlsCa: config.tlsCa },
    stream: config.stream,
    subjectPrefix: config.subjectPrefix,
    limits: {
      duplicateWindowMs: config.duplicateWindowMs,
      maxAgeMs: config.maxAgeMs,
      maxBytes: config.maxBytes,
      replicas: config.replicas,
    },
    maxInFlight: config.maxInFlight,
    logger: deps.logger,
    mapping: deps.mapping,
  })
  await shipper.start()
  return shipper
}
