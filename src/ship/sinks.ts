// Every destination of committed envelopes the daemon runs, as one list that /healthz, /metrics
// and shutdown all read. Each destination family starts from its own config here; adding one is a
// new transport in this folder plus one row of DESTINATIONS.
import type { Logger } from '../log.js'
import type { EventLog } from '../store/event-log.js'
import type { ReadMapping } from '../store/read-mapping.js'
import { startShipping, type NatsConfig } from './index.js'
import { startOtlp, type OtlpDeps } from '../otlp/otlp-sink.js'
import type { OtlpConfig } from '../otlp/config.js'
import type { MetricsSource } from '../otlp/metrics.js'
import type { Sink } from '../sink/sink.js'

/** What the daemon's config says about destinations (each undefined: that one is off). */
export interface SinksConfig {
  nats?: NatsConfig
  otlp?: OtlpConfig
}

export interface SinksDeps {
  log: EventLog
  browserId: string
  version: string
  /** The registry /metrics serves (exported over OTLP when asked). */
  metrics?: MetricsSource
  logger: Logger
  /** Tests shorten the OTLP batching and retries. */
  otlpTuning?: OtlpDeps['tuning']
  /** Records as every sink sends them (source-mapped console stacks). */
  mapping?: ReadMapping
}

/** One destination family once started: its sinks, every record it reports, and its stop. */
interface Started {
  sinks: readonly Sink[]
  health(): Record<string, SinkRecord>
  stop(): Promise<void>
}

/** A destination's /healthz record: its state and what it says of itself. */
export interface SinkRecord {
  state: string
  [field: string]: unknown
}

type Destination = (config: SinksConfig, deps: SinksDeps) => Promise<Started | undefined>

const DESTINATIONS: readonly Destination[] = [
  async (config, deps) => {
    const shipper = await startShipping(config.nats, {
      log: deps.log,
      browserId: deps.browserId,
      logger: deps.logger.child({ module: 'ship' }),
      mapping: deps.mapping,
    })
    return shipper && { sinks: [shipper], health: () => ({ nats: shipper.health() }), stop: () => shipper.stop() }
  },
  async (config, deps) =>
    startOtlp(config.otlp, {
      log: deps.log,
      browserId: deps.browserId,
      version: deps.version,
      metrics: deps.metrics,
      logger: deps.logger.child({ module: 'otlp' }),
      tuning: deps.otlpTuning,
      mapping: deps.mapping,
    }),
]

/** The daemon's destinations: none, one or several, read as one. */
export class SinkList {
  constructor(private readonly started: readonly Started[]) {}

  /** Every sink on the shared core (nats, otlp_logs, otlp_traces): what /metrics labels by name. */
  get sinks(): readonly Sink[] {
    return this.started.flatMap(s => s.sinks)
  }

  /** Every destination's record by name (also otlp_metrics, which is not a sink of the log). */
  health(): Record<string, SinkRecord> {
    return Object.assign({}, ...this.started.map(s => s.health())) as Record<string, SinkRecord>
  }

  /** Last acks and watermarks saved; every destination at once. */
  async stop(): Promise<void> {
    await Promise.all(this.started.map(s => s.stop()))
  }
}

/** Starts every configured destination; none waits for its server. A failure stops those already started. */
export async function startSinks(config: SinksConfig, deps: SinksDeps): Promise<SinkList> {
  const started: Started[] = []
  try {
    for (const start of DESTINATIONS) {
      const s = await start(config, deps)
      if (s) started.push(s)
    }
  } catch (err) {
    await new SinkList(started).stop()
    throw err
  }
  return new SinkList(started)
}
