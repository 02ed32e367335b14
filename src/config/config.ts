// The configuration of `browser-telemetry serve`: the flags of config/options.ts (each with a
// BROWSER_TELEMETRY_<NAME> env twin) parsed and validated once into a ServeConfig. Pure:
// parseServeConfig(argv, env) throws ConfigError.
import { CONFIGURABLE_CATEGORIES } from '../events/index.js'
import type { ConfigurableCategory } from '../pipeline/pipeline.js'
import { defaultShedding, type ShedOptions } from '../pipeline/shedding.js'
import type { StateBounds } from '../pipeline/bounds.js'
import type { NatsAuth } from '../nats/connect.js'
import type { NatsConfig } from '../ship/index.js'
import { parseOtlpConfig, type OtlpConfig } from '../otlp/config.js'
import type { StreamSettings } from '../sse/telemetry-streams.js'
import { FLEET_SERVE_OPTIONS, OPTIONS, SERVE_OPTIONS, type NATS_FLAGS } from './options.js'
import {
  OptionsError,
  mapOptionsError,
  parseDurationText,
  parseHostPort,
  resolveOptions,
  type HostPort,
  type OptionReader,
  type OptionTable,
  type ResolvedOptions,
} from './resolve.js'

export { FLEET_SERVE_OPTIONS, SERVE_OPTIONS } from './options.js'
export { envName, type HostPort } from './resolve.js'

export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

export interface ServeConfig {
  listen: HostPort
  dataDir: string
  browserId?: string
  cdpUrl?: string
  launch: boolean
  chromiumPath: string
  /** Extra Chromium flags for launch mode. */
  chromiumArgs: string[]
  /** User (name or uid) a root daemon runs the launched Chromium as. */
  chromiumUser: string
  open?: string
  token?: string
  tokenFile?: string
  /** Signed trace links: the key file (absent: a key per start) and the origins allowed by CORS. */
  traceLinks: { keyFile?: string; origins: string[] }
  categories: ConfigurableCategory[]
  proxyListen?: HostPort
  proxyAuth: boolean
  uploadRoots: string[]
  reconnectAttempts: number
  reconnectInitialBackoffMs: number
  reconnectMaxBackoffMs: number
  /** The SSE streams: keepalive, per-client queue bounds, the resume ring, the client cap. */
  streams: StreamSettings
  proxyMaxConnections: number
  /** Store CDP proxy commands' parameters and results (redacted, cut to 4 KiB each) in cdp_command events. */
  captureCommandParams: boolean
  /** Printable keys stored without their value in interaction_key, from the start (the capture config toggles it). */
  maskTypedKeys: boolean
  maxTargets: number
  /** maxEnvelopeBytes joins them at startup (src/daemon/stages.ts, buildPipeline), from --max-envelope-bytes. */
  bounds: Omit<StateBounds, 'maxEnvelopeBytes'>
  logLevel: string
  maxEnvelopeBytes: number
  shedding: ShedOptions
  /** Extra header names to mask (the built-in list is always on). */
  redactHeaders: string[]
  /** Extra secret-looking parameter / body field names (the built-in list is always on). */
  redactParams: string[]
  diskReserveBytes: number
  retentionBytes: number
  retentionAgeMs: number
  networkBodyMaxBytes: number
  /** Source maps for console stacks (src/symbols). */
  sourcemaps: SourceMapsConfig
  screenshotIntervalMs: number
  recording: RecordingConfig
  /** Performance traces on demand (src/perf). */
  perfTraces: PerfTracesConfig
  uploadMaxBytes: number
  zipMaxEntries: number
  zipMaxTotalBytes: number
  zipMaxRatio: number
  uploadMaxConcurrent: number
  /** trace.zip and bundle builds at once (shared). */
  exportMaxConcurrent: number
  drainMaxBytes: number
  drainTimeoutMs: number
  watchUnits: string[]
  kmsgPath: string
  /** Values adjusted rather than refused (e.g. the backoff clamp); startDaemon logs each as a warning. */
  warnings: string[]
  /** Fleet shipping to NATS JetStream; undefined when --nats-url is not set (shipping off). */
  nats?: NatsConfig
  /** OTLP/HTTP export; undefined when neither --otlp-endpoint nor OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  otlp?: OtlpConfig
}

export interface RecordingConfig {
  /** On at start (--recording); the capture config toggles it at runtime. */
  enabled: boolean
  maxFps: number
  quality: number
  maxWidth: number
  maxHeight: number
  maxBytes: number
}

export interface PerfTracesConfig {
  maxTraceBytes: number
  storeBytes: number
  keep: number
}

export interface SourceMapsConfig {
  maxBytes: number
  storeBytes: number
  cacheBytes: number
  /** Load scripts and maps through the browser (--no-sourcemap-fetch turns it off). */
  fetch: boolean
}

/** JetStream's duplicate window must cover a reconnect plus re-sends; the contract says at least 2 minutes. */
export const MIN_NATS_DUPLICATE_WINDOW_MS = 120_000

export function parseCategories(text: string, what = '--categories'): ConfigurableCategory[] {
  const out: ConfigurableCategory[] = []
  for (const raw of text.split(',')) {
    const c = raw.trim()
    if (c === '') continue
    if (c === 'monitor')
      throw new ConfigError(
        `${what}: monitor is not configurable (it flows whenever console, network, page or interaction is on)`,
      )
    if (!(CONFIGURABLE_CATEGORIES as string[]).includes(c))
      throw new ConfigError(
        `${what}: unknown category ${JSON.stringify(c)} (allowed: ${CONFIGURABLE_CATEGORIES.join(', ')})`,
      )
    if (!out.includes(c as ConfigurableCategory)) out.push(c as ConfigurableCategory)
  }
  return out
}

/** A command's options resolved, every option error a ConfigError. */
function resolve<T extends OptionTable>(table: T, argv: string[], env: NodeJS.ProcessEnv): ResolvedOptions<T> {
  return asConfigError(() => resolveOptions(table, argv, env))
}

function asConfigError<T>(f: () => T): T {
  return mapOptionsError(f, message => new ConfigError(message))
}

type ServeOptions = ResolvedOptions<typeof SERVE_OPTIONS>

export function parseServeConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const o = resolve(SERVE_OPTIONS, argv, env)
  return asConfigError(() => serveConfig(o, env))
}

function serveConfig(o: ServeOptions, env: NodeJS.ProcessEnv): ServeConfig {
  const cdpUrl = o.get('cdp-url')
  const proxyListenText = o.value('proxy-listen')
  const warnings: string[] = []
  let initial = o.value('reconnect-initial-backoff')
  const max = o.value('reconnect-max-backoff')
  // A cap below the first delay means "never wait longer than this": use it for both.
  if (max < initial) {
    warnings.push(
      `--reconnect-initial-backoff ${initial}ms is above --reconnect-max-backoff ${max}ms; using ${max}ms for both`,
    )
    initial = max
  }
  return {
    listen: o.value('listen'),
    dataDir: o.value('data-dir'),
    browserId: o.get('browser-id'),
    cdpUrl,
    launch: !o.value('no-browser') && (o.value('launch') || !cdpUrl),
    chromiumPath: o.value('chromium-path'),
    chromiumArgs: o.value('chromium-arg'),
    chromiumUser: o.value('chromium-user'),
    open: o.get('open'),
    token: o.get('token'),
    tokenFile: o.get('token-file'),
    traceLinks: { keyFile: o.get('trace-link-key-file'), origins: parseOrigins(o.value('trace-link-origins')) },
    categories: parseCategories(o.value('categories')),
    proxyListen: proxyListenText === 'off' ? undefined : parseHostPort(proxyListenText, 'proxy-listen'),
    proxyAuth: o.value('proxy-auth'),
    captureCommandParams: o.value('capture-command-params'),
    maskTypedKeys: o.value('mask-typed-keys'),
    uploadRoots: o.value('upload-root'),
    reconnectAttempts: o.value('reconnect-attempts'),
    reconnectInitialBackoffMs: initial,
    reconnectMaxBackoffMs: max,
    streams: {
      keepaliveMs: o.value('stream-keepalive'),
      bufferEvents: o.value('stream-buffer-events'),
      bufferBytes: o.value('stream-buffer-bytes'),
      ringBytes: o.value('stream-ring-bytes'),
      maxClients: o.value('max-stream-clients'),
    },
    proxyMaxConnections: o.value('proxy-max-connections'),
    maxTargets: o.value('max-targets'),
    bounds: {
      maxUrlBytes: o.value('max-url-bytes'),
      maxHeaderBytes: o.value('max-header-bytes'),
      maxRequestTableBytes: o.value('request-table-bytes'),
    },
    logLevel: o.value('log-level'),
    maxEnvelopeBytes: o.value('max-envelope-bytes'),
    // The page cap follows the retention: a share of it (src/pipeline/shedding.ts).
    shedding: { ...defaultShedding(o.value('retention-bytes')), backlogBytes: o.value('shed-backlog-bytes') },
    redactHeaders: o.get('redact-headers') ?? [],
    redactParams: o.get('redact-params') ?? [],
    diskReserveBytes: o.value('disk-reserve'),
    retentionBytes: o.value('retention-bytes'),
    retentionAgeMs: o.value('retention-age'),
    networkBodyMaxBytes: o.value('network-body-max-bytes'),
    sourcemaps: {
      maxBytes: o.value('sourcemap-max-bytes'),
      storeBytes: o.value('sourcemap-store-bytes'),
      cacheBytes: o.value('sourcemap-cache-bytes'),
      fetch: !o.value('no-sourcemap-fetch'),
    },
    screenshotIntervalMs: o.value('screenshot-interval'),
    recording: recordingConfig(o),
    perfTraces: perfTracesConfig(o),
    uploadMaxBytes: o.value('upload-max-bytes'),
    zipMaxEntries: o.value('zip-max-entries'),
    zipMaxTotalBytes: o.value('zip-max-total-bytes'),
    zipMaxRatio: o.value('zip-max-ratio'),
    uploadMaxConcurrent: o.value('upload-max-concurrent'),
    exportMaxConcurrent: o.value('export-max-concurrent'),
    drainMaxBytes: o.value('drain-max-bytes'),
    drainTimeoutMs: o.value('drain-timeout'),
    watchUnits: o.value('watch-unit'),
    kmsgPath: o.value('kmsg-path'),
    warnings,
    nats: natsConfig(o),
    otlp: otlpConfig(o, env),
  }
}

function recordingConfig(o: ServeOptions): RecordingConfig {
  const quality = o.value('recording-quality')
  if (quality > 100) throw new ConfigError(`--recording-quality: 1 to 100, got ${quality}`)
  const fps = o.value('recording-max-fps')
  if (fps > 60) throw new ConfigError(`--recording-max-fps: 1 to 60, got ${fps}`)
  const sizeText = o.value('recording-max-size')
  const m = /^\s*(\d{1,5})\s*x\s*(\d{1,5})\s*$/i.exec(sizeText)
  if (!m || Number(m[1]) < 16 || Number(m[2]) < 16)
    throw new ConfigError(`--recording-max-size: expected WIDTHxHEIGHT like 1280x720, got ${JSON.stringify(sizeText)}`)
  return {
    enabled: o.value('recording'),
    maxFps: fps,
    quality,
    maxWidth: Number(m[1]),
    maxHeight: Number(m[2]),
    maxBytes: o.value('recording-max-bytes'),
  }
}

function perfTracesConfig(o: ServeOptions): PerfTracesConfig {
  const maxTraceBytes = o.value('perf-trace-max-bytes')
  const storeBytes = o.value('perf-trace-store-bytes')
  if (storeBytes < maxTraceBytes)
    throw new ConfigError(
      `--perf-trace-store-bytes (${storeBytes}) must hold at least one trace of --perf-trace-max-bytes (${maxTraceBytes})`,
    )
  return { maxTraceBytes, storeBytes, keep: o.value('perf-trace-keep') }
}

function otlpConfig(o: ServeOptions, env: NodeJS.ProcessEnv): OtlpConfig | undefined {
  try {
    return parseOtlpConfig({
      explicit: flag => o.given(flag as keyof typeof SERVE_OPTIONS),
      default: flag => SERVE_OPTIONS[flag as keyof typeof SERVE_OPTIONS].default!,
      duration: (flag, v) => parseDurationText(v, flag),
      env,
    })
  } catch (err) {
    if (err instanceof ConfigError || err instanceof OptionsError) throw err
    throw new ConfigError((err as Error).message)
  }
}

/** The NATS connection and stream of any command that takes the NATS options. */
export function natsTarget(o: OptionReader<Pick<typeof OPTIONS, (typeof NATS_FLAGS)[number]>>): NatsTarget | undefined {
  const servers = o.get('nats-url')
  if (servers === undefined) return undefined
  return {
    auth: {
      servers,
      credsFile: o.get('nats-creds-file'),
      tokenFile: o.get('nats-token-file'),
      tlsCa: o.get('nats-tls-ca'),
    },
    stream: o.value('nats-stream'),
    subjectPrefix: o.value('nats-subject-prefix'),
  }
}

export interface NatsTarget {
  auth: NatsAuth
  stream: string
  subjectPrefix: string
}

function natsConfig(o: ServeOptions): NatsConfig | undefined {
  const target = natsTarget(o)
  if (!target) return undefined
  const duplicateWindowMs = o.value('nats-duplicate-window')
  if (duplicateWindowMs < MIN_NATS_DUPLICATE_WINDOW_MS)
    throw new ConfigError('--nats-duplicate-window: must be at least 2m (re-sends after a reconnect rely on it)')
  const replicas = o.value('nats-replicas')
  if (replicas > 5) throw new ConfigError('--nats-replicas: JetStream allows at most 5')
  return {
    ...target.auth,
    stream: target.stream,
    subjectPrefix: target.subjectPrefix,
    duplicateWindowMs,
    maxAgeMs: o.value('nats-max-age'),
    maxBytes: o.value('nats-max-bytes'),
    replicas,
    maxInFlight: o.value('nats-max-in-flight'),
  }
}

export interface FleetServeConfig {
  listen: HostPort
  token?: string
  tokenFile?: string
  nats: { servers: string[]; credsFile?: string; tokenFile?: string; tlsCa?: string }
  stream: string
  subjectPrefix: string
  requestTimeoutMs: number
  maxStreamClients: number
  logLevel: string
}

/** `fleet serve` flags and their BROWSER_TELEMETRY_<NAME> twins (flags win), validated once. */
export function parseFleetServeConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): FleetServeConfig {
  const o = resolve(FLEET_SERVE_OPTIONS, argv, env)
  return asConfigError(() => {
    const target = natsTarget(o)
    if (!target) throw new ConfigError('--nats-url is required (or BROWSER_TELEMETRY_NATS_URL)')
    const token = o.get('token')
    const tokenFile = o.get('token-file')
    if (token === undefined && tokenFile === undefined)
      throw new ConfigError(
        '--token or --token-file is required (fleet serve has no data dir to keep a generated token in)',
      )
    const requestTimeoutMs = o.value('nats-timeout')
    if (requestTimeoutMs < 100) throw new ConfigError('--nats-timeout: at least 100ms')
    return {
      listen: o.value('listen'),
      token,
      tokenFile,
      nats: target.auth,
      stream: target.stream,
      subjectPrefix: target.subjectPrefix,
      requestTimeoutMs,
      maxStreamClients: o.value('max-stream-clients'),
      logLevel: o.value('log-level'),
    }
  })
}

/** `https://a.example,http://127.0.0.1:8080`: each an origin (scheme, host, optional port, nothing else). */
function parseOrigins(text: string): string[] {
  const out: string[] = []
  for (const raw of text.split(',')) {
    const v = raw.trim().replace(/\/+$/, '')
    if (v === '') continue
    if (!/^https?:\/\/[^/?#\s]+$/.test(v))
      throw new ConfigError(
        `--trace-link-origins: expected origins like https://trace.playwright.dev, got ${JSON.stringify(raw)}`,
      )
    out.push(v)
  }
  return out
}
