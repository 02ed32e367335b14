// OTLP/HTTP export: one sink per signal on the shared sink core (logs and traces follow the
// committed log with their own durable watermarks `otlp:<signal>:<endpoint>`), plus the metrics
// exporter on an interval. The sink list (sinks.ts) calls startOtlp once; nothing waits for the
// collector.
import { readFile } from 'node:fs/promises'
import {
  JsonLogsSerializer,
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer'
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { Logger } from '../log.js'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import type { ReadMapping } from '../store/read-mapping.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { Sink } from '../sink/sink.js'
import type { SinkHealth } from '../sink/sink-health.js'
import { readHeadersFile, type OtlpConfig, type OtlpSignal } from './config.js'
import { OtlpLink, OTLP_ERROR_KINDS, type SignalEncoder } from './link.js'
import { MetricsExporter, type MetricsSource } from './metrics.js'
import {
  NOT_LOGGED,
  logRecordOf,
  navigationSpanOf,
  parseEnvelope,
  sharedOf,
  type Envelope,
  type OtlpShared,
} from './model.js'
import { SpanBuilder } from './spans.js'
import type { HttpAnswer } from './http.js'

export { OTLP_ERROR_KINDS } from './link.js'

export interface OtlpDeps {
  log: Pick<EventLog, 'onCommit' | 'read' | 'readMeta' | 'writeMeta' | 'lastSeq' | 'firstSeq' | 'pendingBytes'>
  browserId: string
  version: string
  /** The registry /metrics serves. */
  metrics?: MetricsSource
  logger: Logger
  /** Tests shorten these. */
  tuning?: { batchEvents?: number; batchDelayMs?: number; retryInitialMs?: number; retryMaxMs?: number }
  /** Records as exported: console stacks mapped through the source maps known at export time. */
  mapping?: ReadMapping
}

export interface OtlpExport {
  sinks: Sink[]
  metrics: MetricsExporter | undefined
  health(): Record<string, { state: string }>
  stop(): Promise<void>
}

/** user:pass@ never reaches logs or /healthz. */
export function redactEndpoint(endpoint: string): string {
  return endpoint.replace(/\/\/[^@/]*@/, '//***@')
}

function answerJson(a: HttpAnswer): boolean {
  return a.contentType.includes('json')
}

/** Events before the watermark read again at start to rebuild open spans (a navigation rarely spans more). */
const TRACE_REPLAY_EVENTS = 20_000

const CONTENT_TYPE = { 'http/protobuf': 'application/x-protobuf', 'http/json': 'application/json' } as const

/** The envelope of a record as exported (console stacks source-mapped when a map is known). */
type ParseRecord = (rec: StoredRecord) => Envelope

/** The log records of one envelope: none for screenshots; linked to the navigation's root span. */
function logsEncoder(shared: OtlpShared, json: boolean, parse: ParseRecord): SignalEncoder<ReadableLogRecord> {
  const spanOf = navigationSpanOf(shared.browserId)
  const serializer = json ? JsonLogsSerializer : ProtobufLogsSerializer
  return {
    signal: 'logs',
    itemsOf: rec => (NOT_LOGGED.has(rec.category) ? [] : [logRecordOf(parse(rec), shared, spanOf)]),
    serialize: items => serializer.serializeRequest(items) ?? new Uint8Array(),
    rejected: a => {
      const r = (answerJson(a) ? JsonLogsSerializer : ProtobufLogsSerializer).deserializeResponse(a.body)
      return { count: Number(r.partialSuccess?.rejectedLogRecords ?? 0), message: r.partialSuccess?.errorMessage }
    },
  }
}

/**
 * Spans of the envelopes: the builder keeps open spans between records. The spans a record ended
 * are kept until their request is accepted, so a re-send of that record (after a failure) sends the
 * same spans again instead of feeding the builder twice.
 */
function tracesEncoder(
  shared: OtlpShared,
  json: boolean,
  replay: { log: OtlpDeps['log']; acked: () => number },
  parse: ParseRecord,
): SignalEncoder<ReadableSpan> & { builder: SpanBuilder } {
  const builder = new SpanBuilder(shared)
  const ended = new Map<number, ReadableSpan[]>()
  let fedUpTo = 0
  let primed = false
  const serializer = json ? JsonTraceSerializer : ProtobufTraceSerializer
  return {
    signal: 'traces',
    builder,
    // After a restart the spans still open at the watermark (a navigation, its requests) are rebuilt
    // from the log: the events before the watermark are fed again, their ended spans discarded (they
    // were exported before).
    prepare: async () => {
      if (primed) return
      primed = true
      const upTo = replay.acked()
      let cursor = Math.max(replay.log.firstSeq, upTo - TRACE_REPLAY_EVENTS + 1, 1)
      while (cursor <= upTo) {
        const page = await replay.log.read({ order: 'asc', cursor, limit: 512 })
        if (page.records.length === 0) break
        for (const rec of page.records) if (rec.seq <= upTo) builder.feed(parseEnvelope(rec))
        cursor = page.records[page.records.length - 1]!.seq + 1
      }
      fedUpTo = Math.max(fedUpTo, upTo)
    },
    itemsOf: rec => {
      if (rec.seq <= fedUpTo) return ended.get(rec.seq) ?? []
      fedUpTo = rec.seq
      const spans = builder.feed(parse(rec))
      if (spans.length > 0) ended.set(rec.seq, spans)
      return spans
    },
    delivered: seqs => {
      for (const s of seqs) ended.delete(s)
    },
    serialize: items => serializer.serializeRequest(items) ?? new Uint8Array(),
    rejected: a => {
      const r = (answerJson(a) ? JsonTraceSerializer : ProtobufTraceSerializer).deserializeResponse(a.body)
      return { count: Number(r.partialSuccess?.rejectedSpans ?? 0), message: r.partialSuccess?.errorMessage }
    },
  }
}

/** Starts the configured signals (undefined when export is off). Config errors (headers file, CA) throw. */
export async function startOtlp(config: OtlpConfig | undefined, deps: OtlpDeps): Promise<OtlpExport | undefined> {
  if (!config) return undefined
  const headers: Record<string, string> = { ...config.headers }
  if (config.headersFile) Object.assign(headers, await readHeadersFile(config.headersFile))
  headers['user-agent'] ??= `browser-telemetry/${deps.version}`
  let ca: Buffer | undefined
  if (config.tlsCa)
    ca = await readFile(config.tlsCa).catch((err: NodeJS.ErrnoException) => {
      throw new Error(`--otlp-tls-ca ${config.tlsCa}: ${err.code ?? err.message}`)
    })
  const shared = sharedOf({
    browserId: deps.browserId,
    version: deps.version,
    serviceName: config.serviceName,
    resourceAttributes: config.resourceAttributes,
  })
  const json = config.protocol === 'http/json'
  const contentType = CONTENT_TYPE[config.protocol]
  const t = deps.tuning ?? {}
  const batchEvents = t.batchEvents ?? DEFAULT_SETTINGS.otlpBatchEvents
  const batchDelayMs = t.batchDelayMs ?? DEFAULT_SETTINGS.otlpBatchDelayMs
  const urlOf = (signal: OtlpSignal) => new URL(`${config.endpoint}/v1/${signal}`)
  const shown = redactEndpoint(config.endpoint)
  const sinks: Sink[] = []
  const links = new Map<string, OtlpLink<unknown>>()
  // Records come to the encoders as the sink core sends them: console stacks already mapped.
  const parse: ParseRecord = parseEnvelope
  for (const signal of ['logs', 'traces'] as const) {
    if (!config.signals.includes(signal)) continue
    const name = `otlp_${signal}`
    let sink: Sink | undefined = undefined
    const encoder = (
      signal === 'logs'
        ? logsEncoder(shared, json, parse)
        : tracesEncoder(shared, json, { log: deps.log, acked: () => sink?.ackedSeq ?? 0 }, parse)
    ) as SignalEncoder<unknown>
    sink = new Sink({
      log: deps.log,
      name,
      // The endpoint, not the protocol: switching protobuf/json keeps the position.
      watermarkName: `otlp:${signal}:${config.endpoint}`,
      errorKinds: OTLP_ERROR_KINDS,
      // Two requests of a batch each, plus one filling.
      maxInFlight: batchEvents * 3,
      ackTimeoutMs: config.timeoutMs + batchDelayMs + 5000,
      retryInitialMs: t.retryInitialMs ?? 500,
      retryMaxMs: t.retryMaxMs ?? 30_000,
      link: (events, _backoff, logger) => {
        void logger
        const link = new OtlpLink(
          { url: urlOf(signal), contentType, headers, ca, timeoutMs: config.timeoutMs, batchEvents, batchDelayMs },
          encoder,
          events,
        )
        links.set(name, link)
        return link
      },
      describe: () => ({
        endpoint: `${shown}/v1/${signal}`,
        protocol: config.protocol,
        rejected_items: links.get(name)?.rejectedItems ?? 0,
      }),
      ackName: 'OTLP answer',
      messages: {
        started: `OTLP ${signal} export on`,
        stopped: `OTLP ${signal} export stopped`,
        resumed: `OTLP ${signal} export resumed`,
      },
      logger: deps.logger.child({ sink: name }),
      mapping: deps.mapping,
    })
    sinks.push(sink)
  }
  let metrics: MetricsExporter | undefined
  if (config.signals.includes('metrics') && deps.metrics) {
    metrics = new MetricsExporter({
      source: deps.metrics,
      shared,
      url: urlOf('metrics'),
      contentType,
      headers,
      ca,
      timeoutMs: config.timeoutMs,
      intervalMs: config.metricsIntervalMs,
      serialize: rm =>
        (json ? JsonMetricsSerializer : ProtobufMetricsSerializer).serializeRequest(rm) ?? new Uint8Array(),
      rejected: a =>
        Number(
          (answerJson(a) ? JsonMetricsSerializer : ProtobufMetricsSerializer).deserializeResponse(a.body).partialSuccess
            ?.rejectedDataPoints ?? 0,
        ),
      logger: deps.logger.child({ sink: 'otlp_metrics' }),
    })
  }
  for (const s of sinks) await s.start()
  metrics?.start()
  deps.logger.info(
    { endpoint: shown, protocol: config.protocol, signals: config.signals },
    'OTLP export on (nothing waits for the collector)',
  )
  return {
    sinks,
    metrics,
    health: () => {
      const out: Record<string, { state: string; [k: string]: unknown }> = {}
      for (const s of sinks) out[s.name] = s.health() satisfies SinkHealth
      if (metrics) out.otlp_metrics = { endpoint: `${shown}/v1/metrics`, ...metrics.health() }
      return out
    },
    stop: async () => {
      await Promise.all(sinks.map(s => s.stop()))
      await metrics?.stop()
    },
  }
}
