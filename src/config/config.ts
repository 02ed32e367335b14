// The configuration of `browser-telemetry serve`: the flags of config/options.ts (each with a
// BROWSER_TELEMETRY_<NAME> env twin) parsed and validated once into a ServeConfig, one settings
// object per component of the table. Pure: parseServeConfig(argv, env) throws ConfigError.
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

/** The daemon's settings, one object per component, each handed whole to the part that uses it. */
export interface ServeConfig {
  listen: HostPort
  dataDir: string
  browserId?: string
  logLevel: string
  /** The browser the monitor launches or attaches to (src/monitor). */
  browser: BrowserSettings
  /** API bearer tokens (src/identity/tokens.ts, loadTokens). */
  auth: { token?: string; tokenFile?: string }
  /** Signed trace links: the key file (absent: a key per start) and the origins allowed by CORS. */
  traceLinks: { keyFile?: string; origins: string[] }
  /** What the pipeline and the collectors capture, and how large an event may be. */
  capture: CaptureSettings
  /** The CDP WebSocket proxy (src/proxy). */
  proxy: ProxySettings
  /** The SSE streams: keepalive, per-client queue bounds, the resume ring, the client cap. */
  streams: StreamSettings
  /** maxEnvelopeBytes joins them at startup (src/daemon/stages.ts, buildPipeline), from capture.maxEnvelopeBytes. */
  bounds: Omit<StateBounds, 'maxEnvelopeBytes'>
  shedding: ShedOptions
  /** Extra names to mask; the built-in lists are always on (src/events/redact.ts). */
  redaction: RedactionSettings
  /** The event log's retention and the disk reserve (src/store, src/daemon/disk-guard.ts). */
  store: StoreSettings
  /** Source maps for console stacks (src/symbols). */
  sourcemaps: SourceMapsConfig
  recording: RecordingConfig
  /** Performance traces on demand (src/perf). */
  perfTraces: PerfTracesConfig
  /** upload_zip and extension uploads (src/uploads, src/api/routes/uploads.ts). */
  uploads: UploadSettings
  /** trace.zip and bundle builds at once (shared). */
  exportMaxConcurrent: number
  /** Draining a refused request body (src/api/body-drain.ts, DrainLimits). */
  drain: DrainSettings
  /** The system collectors: kernel log and watched units (collectors/system.ts). */
  system: { watchUnits: string[]; kmsgPath: string }
  /** Values adjusted rather than refused (e.g. the backoff clamp); startDaemon logs each as a warning. */
  warnings: string[]
  /** Fleet shipping to NATS JetStream; undefined when --nats-url is not set (shipping off). */
  nats?: NatsConfig
  /** OTLP/HTTP export; undefined when neither --otlp-endpoint nor OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  otlp?: OtlpConfig
}

export interface BrowserSettings {
  cdpUrl?: string
  /** Launch a local Chromium: --launch, or no --cdp-url (and no --no-browser). */
  launch: boolean
  chromiumPath: string
  /** Extra Chromium flags for launch mode. */
  chromiumArgs: string[]
  /** User (name or uid) a root daemon runs the launched Chromium as. */
  chromiumUser: string
  /** Demo: a page opened once attached. */
  open?: string
  maxTargets: number
  /** The monitor's ReconnectOptions (src/monitor/monitor.ts), as they are. */
  reconnect: { attempts: number; initialBackoffMs: number; maxBackoffMs: number }
}

export interface CaptureSettings {
  categories: ConfigurableCategory[]
  /** Printable keys stored without their value in interaction_key, from the start (the capture config toggles it). */
  maskTypedKeys: boolean
  networkBodyMaxBytes: number
  screenshotIntervalMs: number
  maxEnvelopeBytes: number
}

export interface ProxySettings {
  /** Undefined: --proxy-listen off (no proxy). */
  listen?: HostPort
  /** Require a token with scope cdp (always required beyond loopback). */
  auth: boolean
  maxConnections: number
  /** Store CDP proxy commands' parameters and results (redacted, cut to 4 KiB each) in cdp_command events. */
  captureCommandParams: boolean
}

export interface RedactionSettings {
  /** Extra header names to mask. */
  headers: string[]
  /** Extra secret-looking parameter / body field names. */
  params: string[]
}

export interface StoreSettings {
  /** The event log's retention (EventLogOptions' maxBytes and maxAgeMs). */
  retention: { maxBytes: number; maxAgeMs: number }
  /** Space held in <data-dir>/.disk-reserve (0: none). */
  reserveBytes: number
}

export interface UploadSettings {
  /** As given; the daemon adds its defaults when empty (src/uploads/upload-roots.ts). */
  roots: string[]
  maxBytes: number
  maxConcurrent: number
  /** The ZipLimits of src/uploads/zip-entries.ts, as they are. */
  zip: { maxEntries: number; maxTotalBytes: number; maxRatio: number }
}

/** The DrainLimits of src/api/body-drain.ts, as they are. */
export interface DrainSettings {
  maxBytes: number
  maxMs: number
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
  const warnings: string[] = []
  return {
    listen: o.value('listen'),
    dataDir: o.value('data-dir'),
    browserId: o.get('browser-id'),
    logLevel: o.value('log-level'),
    browser: browserSettings(o, warnings),
    auth: { token: o.get('token'), tokenFile: o.get('token-file') },
    traceLinks: { keyFile: o.get('trace-link-key-file'), origins: parseOrigins(o.value('trace-link-origins')) },
    capture: {
      categories: parseCategories(o.value('categories')),
      maskTypedKeys: o.value('mask-typed-keys'),
      networkBodyMaxBytes: o.value('network-body-max-bytes'),
      screenshotIntervalMs: o.value('screenshot-interval'),
      maxEnvelopeBytes: o.value('max-envelope-bytes'),
    },
    proxy: proxySettings(o),
    streams: {
      keepaliveMs: o.value('stream-keepalive'),
      bufferEvents: o.value('stream-buffer-events'),
      bufferBytes: o.value('stream-buffer-bytes'),
      ringBytes: o.value('stream-ring-bytes'),
      maxClients: o.value('max-stream-clients'),
    },
    bounds: {
      maxUrlBytes: o.value('max-url-bytes'),
      maxHeaderBytes: o.value('max-header-bytes'),
      maxRequestTableBytes: o.value('request-table-bytes'),
    },
    // The page cap follows the retention: a share of it (src/pipeline/shedding.ts).
    shedding: { ...defaultShedding(o.value('retention-bytes')), backlogBytes: o.value('shed-backlog-bytes') },
    redaction: { headers: o.get('redact-headers') ?? [], params: o.get('redact-params') ?? [] },
    store: {
      retention: { maxBytes: o.value('retention-bytes'), maxAgeMs: o.value('retention-age') },
      reserveBytes: o.value('disk-reserve'),
    },
    sourcemaps: {
      maxBytes: o.value('sourcemap-max-bytes'),
      storeBytes: o.value('sourcemap-store-bytes'),
      cacheBytes: o.value('sourcemap-cache-bytes'),
      fetch: !o.value('no-sourcemap-fetch'),
    },
    recording: recordingConfig(o),
    perfTraces: perfTracesConfig(o),
    uploads: {
      roots: o.value('upload-root'),
      maxBytes: o.value('upload-max-bytes'),
      maxConcurrent: o.value('upload-max-concurrent'),
      zip: {
        maxEntries: o.value('zip-max-entries'),
        maxTotalBytes: o.value('zip-max-total-bytes'),
        maxRatio: o.value('zip-max-ratio'),
      },
    },
    exportMaxConcurrent: o.value('export-max-concurrent'),
    drain: { maxBytes: o.value('drain-max-bytes'), maxMs: o.value('drain-timeout') },
    system: { watchUnits: o.value('watch-unit'), kmsgPath: o.value('kmsg-path') },
    warnings,
    nats: natsConfig(o),
    otlp: otlpConfig(o, env),
  }
}

function browserSettings(o: ServeOptions, warnings: string[]): BrowserSettings {
  const cdpUrl = o.get('cdp-url')
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
    cdpUrl,
    launch: !o.value('no-browser') && (o.value('launch') || !cdpUrl),
    chromiumPath: o.value('chromium-path'),
    chromiumArgs: o.value('chromium-arg'),
    chromiumUser: o.value('chromium-user'),
    open: o.get('open'),
    maxTargets: o.value('max-targets'),
    reconnect: { attempts: o.value('reconnect-attempts'), initialBackoffMs: initial, maxBackoffMs: max },
  }
}

function proxySettings(o: ServeOptions): ProxySettings {
  const listenText = o.value('proxy-listen')
  return {
    listen: listenText === 'off' ? undefined : parseHostPort(listenText, 'proxy-listen'),
    auth: o.value('proxy-auth'),
    maxConnections: o.value('proxy-max-connections'),
    captureCommandParams: o.value('capture-command-params'),
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
