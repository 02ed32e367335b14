// Every numeric default of the daemon, once, as numbers. config/options.ts formats them for --help,
// docs/configuration.md and the env example; the modules that also run without the config
// (tests, tools, the bench) read the same values. Imports nothing.

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB
const SECOND = 1000
const DAY = 86_400 * SECOND

export const DEFAULT_SETTINGS = {
  reconnectAttempts: 10,
  reconnectInitialBackoffMs: 250,
  reconnectMaxBackoffMs: 2 * SECOND,
  streamKeepaliveMs: 15 * SECOND,
  streamBufferEvents: 10_000,
  streamBufferBytes: 8 * MiB,
  streamRingBytes: 16 * MiB,
  maxStreamClients: 64,
  proxyMaxConnections: 32,
  /** Agent steps: open at once, and how long one may stay open before it is finished as abandoned. */
  stepMaxOpen: 1000,
  stepMaxOpenMs: 30 * 60 * SECOND,
  maxTargets: 500,
  maxUrlBytes: 8 * KiB,
  maxHeaderBytes: 32 * KiB,
  requestTableBytes: 4 * MiB,
  maxEnvelopeBytes: 1 * MiB,
  shedBacklogBytes: 16 * MiB,
  diskReserveBytes: 8 * MiB,
  retentionBytes: 512 * MiB,
  retentionAgeMs: 7 * DAY,
  networkBodyMaxBytes: 64 * KiB,
  screenshotIntervalMs: 5 * SECOND,
  /**
   * Screen recording: frames kept per second per page, JPEG quality, largest frame, frame store bound.
   * 960x540 at quality 50: a 1280-wide page at 0.75 keeps 16 px text at 12 px, still readable, for
   * about half the bytes and pixels to encode of 1280x720 at 60 (bench/recording.ts).
   */
  recordingMaxFps: 5,
  recordingQuality: 50,
  recordingMaxWidth: 960,
  recordingMaxHeight: 540,
  recordingMaxBytes: 256 * MiB,
  uploadMaxBytes: 1 * GiB,
  /** Source maps: the largest one read or uploaded, the disk store's bound, the parsed maps in memory. */
  sourcemapMaxBytes: 16 * MiB,
  sourcemapStoreBytes: 256 * MiB,
  sourcemapCacheBytes: 64 * MiB,
  /** Performance traces: the largest one, the disk store's bound, how many are kept. */
  perfTraceMaxBytes: 64 * MiB,
  perfTraceStoreBytes: 256 * MiB,
  perfTraceKeep: 10,
  zipMaxEntries: 100_000,
  zipMaxTotalBytes: 4 * GiB,
  zipMaxRatio: 200,
  uploadMaxConcurrent: 4,
  /** trace.zip and bundle builds at once: each reads the log, encodes and compresses for as long as its reader reads. */
  exportMaxConcurrent: 2,
  drainMaxBytes: 64 * MiB,
  drainTimeoutMs: 10 * SECOND,
  natsDuplicateWindowMs: 120 * SECOND,
  natsMaxAgeMs: 7 * DAY,
  /** 0 = unlimited. */
  natsMaxBytes: 0,
  natsReplicas: 1,
  natsMaxInFlight: 256,
  /** fleet serve: one JetStream API request's timeout (a page makes a few dozen). */
  fleetServeRequestTimeoutMs: 5 * SECOND,
  /** OTLP/HTTP: one export request's timeout (OTEL_EXPORTER_OTLP_TIMEOUT's default). */
  otlpTimeoutMs: 10 * SECOND,
  /** OTLP/HTTP: records per export request at most, and how long a partial batch waits to fill. */
  otlpBatchEvents: 512,
  otlpBatchDelayMs: 200,
  /** OTLP metrics: export interval (OTEL_METRIC_EXPORT_INTERVAL's default). */
  otlpMetricsIntervalMs: 60 * SECOND,
}
