// The configuration of `browser-telemetry serve`: the flags of config/options.ts (each with a
// BROWSER_TELEMETRY_<NAME> env twin) parsed and validated once into a ServeConfig. Pure:
// parseServeConfig(argv, env) throws ConfigError.
import { CONFIGURABLE_CATEGORIES } from '../events/index.js'
import type { ConfigurableCategory } from '../pipeline/pipeline.js'
import { MIN_ENVELOPE_BYTES } from '../pipeline/envelope-fit.js'
import { defaultShedding, type ShedOptions } from '../pipeline/shedding.js'
import type { StateBounds } from '../pipeline/bounds.js'
import { parseDuration } from '../util/duration.js'
import { parseSize } from '../util/size.js'
import { OptionsError, parseOptions, type OptionSpec, type OptionValue } from '../util/options.js'
import { FLEET_SERVE_OPTIONS, SERVE_OPTIONS, envName } from './options.js'
import { parseNatsServers } from '../ship/connect.js'
import { isValidSubjectPrefix } from '../ship/subject.js'
import type { NatsConfig } from '../ship/index.js'
import { parseOtlpConfig, type OtlpConfig } from '../ship/otlp-config.js'

export { SERVE_OPTIONS, FLEET_SERVE_OPTIONS, envName } from './options.js'

export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

export interface HostPort {
  host: string
  port: number
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
  categories: ConfigurableCategory[]
  proxyListen?: HostPort
  proxyAuth: boolean
  uploadRoots: string[]
  reconnectAttempts: number
  reconnectInitialBackoffMs: number
  reconnectMaxBackoffMs: number
  streamKeepaliveMs: number
  streamBufferEvents: number
  streamBufferBytes: number
  streamRingBytes: number
  maxStreamClients: number
  proxyMaxConnections: number
  /** Store CDP proxy commands' parameters and results (redacted, cut to 4 KiB each) in cdp_command events. */
  captureCommandParams: boolean
  maxTargets: number
  /** maxEnvelopeBytes joins them at startup (src/main.ts), from --max-envelope-bytes. */
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
  screenshotIntervalMs: number
  recording: RecordingConfig
  uploadMaxBytes: number
  zipMaxEntries: number
  zipMaxTotalBytes: number
  zipMaxRatio: number
  uploadMaxConcurrent: number
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

/** JetStream's duplicate window must cover a reconnect plus re-sends; the contract says at least 2 minutes. */
export const MIN_NATS_DUPLICATE_WINDOW_MS = 120_000

export function parseHostPort(text: string, what: string): HostPort {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text.trim())
  const port = m ? Number(m[3]) : NaN
  if (!m || port > 65535) throw new ConfigError(`${what}: expected host:port, got ${JSON.stringify(text)}`)
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port }
}

function duration(flag: string, v: string): number {
  const ms = parseDuration(v)
  if (ms === undefined)
    throw new ConfigError(`--${flag}: expected a duration like 250ms, 2s, 5m, got ${JSON.stringify(v)}`)
  return ms
}
function size(flag: string, v: string): number {
  const n = parseSize(v)
  if (n === undefined || n <= 0)
    throw new ConfigError(`--${flag}: expected a size like 65536, 64KiB, 1MiB, got ${JSON.stringify(v)}`)
  return n
}
/** A size where 0 means off (any spelling of zero: 0, 0B, 0KiB). */
function sizeOrOff(flag: string, v: string): number {
  return parseSize(v) === 0 ? 0 : size(flag, v)
}
function minSize(flag: string, v: string, min: number): number {
  const n = size(flag, v)
  if (n < min) throw new ConfigError(`--${flag}: at least ${min} bytes, got ${JSON.stringify(v)}`)
  return n
}
function int(flag: string, v: string, min: number): number {
  if (!/^\d+$/.test(v.trim()) || Number(v) < min)
    throw new ConfigError(`--${flag}: expected an integer >= ${min}, got ${JSON.stringify(v)}`)
  return Number(v)
}

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

function sheddingConfig(get: (flag: string) => string | undefined): ShedOptions {
  // The page cap follows the retention: a share of it (src/pipeline/shedding.ts, README "Limits").
  return {
    ...defaultShedding(size('retention-bytes', get('retention-bytes')!)),
    backlogBytes: minSize('shed-backlog-bytes', get('shed-backlog-bytes')!, 1024 * 1024),
  }
}

/**
 * A command's flags read once: each value from its flag, else its BROWSER_TELEMETRY_<NAME> twin
 * (empty = unset), else its default.
 */
function readOptions(spec: Record<string, OptionSpec>, argv: string[], env: NodeJS.ProcessEnv) {
  let values: Record<string, OptionValue>
  try {
    values = parseOptions(spec, argv).values
  } catch (err) {
    if (err instanceof OptionsError) throw new ConfigError(err.message)
    throw err
  }
  const get = (flag: string): string | undefined => {
    const v = values[flag]
    if (typeof v === 'string') return v
    const e = env[envName(flag)]
    if (e !== undefined && e !== '') return e
    return spec[flag]!.default
  }
  return { values, get }
}

/** --nats-stream and --nats-subject-prefix, checked (the daemon ships to them, fleet serve reads them). */
function streamNames(get: (flag: string) => string | undefined): { stream: string; subjectPrefix: string } {
  const stream = get('nats-stream')!
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(stream))
    throw new ConfigError(`--nats-stream: letters, digits, "_" and "-" only, got ${JSON.stringify(stream)}`)
  const subjectPrefix = get('nats-subject-prefix')!
  if (!isValidSubjectPrefix(subjectPrefix))
    throw new ConfigError(
      `--nats-subject-prefix: dot-separated tokens without spaces, "*" or ">", got ${JSON.stringify(subjectPrefix)}`,
    )
  return { stream, subjectPrefix }
}

export function parseServeConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const { values, get } = readOptions(SERVE_OPTIONS, argv, env)
  const list = (flag: string): string[] => {
    const v = values[flag]
    if (Array.isArray(v) && v.length > 0) return v
    const e = env[envName(flag)]
    return e
      ? e
          .split(/[,:\n]/)
          .map(s => s.trim())
          .filter(Boolean)
      : []
  }
  const bool = (flag: string): boolean => {
    if (values[flag] === true) return true
    const e = env[envName(flag)]
    return e === '1' || e === 'true' || e === 'yes'
  }
  const dataDir = get('data-dir')!
  const cdpUrl = get('cdp-url')
  if (cdpUrl && !/^(https?|wss?):\/\//.test(cdpUrl))
    throw new ConfigError(`--cdp-url: expected http://host:port or ws://..., got ${JSON.stringify(cdpUrl)}`)
  const proxyListenText = get('proxy-listen')!
  const warnings: string[] = []
  let initial = duration('reconnect-initial-backoff', get('reconnect-initial-backoff')!)
  const max = duration('reconnect-max-backoff', get('reconnect-max-backoff')!)
  // A cap below the first delay means "never wait longer than this": use it for both.
  if (max < initial) {
    warnings.push(
      `--reconnect-initial-backoff ${initial}ms is above --reconnect-max-backoff ${max}ms; using ${max}ms for both`,
    )
    initial = max
  }
  const logLevel = get('log-level')!
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(logLevel))
    throw new ConfigError(`--log-level: unknown level ${JSON.stringify(logLevel)}`)
  const browserId = get('browser-id')
  if (browserId !== undefined && !/^[A-Za-z0-9._-]{1,128}$/.test(browserId))
    throw new ConfigError('--browser-id: 1-128 characters of letters, digits, ".", "_", "-"')
  return {
    listen: parseHostPort(get('listen')!, '--listen'),
    dataDir,
    browserId,
    cdpUrl,
    launch: !bool('no-browser') && (bool('launch') || !cdpUrl),
    chromiumPath: get('chromium-path')!,
    chromiumArgs: list('chromium-arg'),
    chromiumUser: get('chromium-user')!,
    open: get('open'),
    token: get('token'),
    tokenFile: get('token-file'),
    categories: parseCategories(get('categories')!),
    proxyListen: proxyListenText === 'off' ? undefined : parseHostPort(proxyListenText, '--proxy-listen'),
    proxyAuth: bool('proxy-auth'),
    captureCommandParams: bool('capture-command-params'),
    uploadRoots: list('upload-root'),
    reconnectAttempts: int('reconnect-attempts', get('reconnect-attempts')!, 0),
    reconnectInitialBackoffMs: initial,
    reconnectMaxBackoffMs: max,
    streamKeepaliveMs: duration('stream-keepalive', get('stream-keepalive')!),
    streamBufferEvents: int('stream-buffer-events', get('stream-buffer-events')!, 1),
    streamBufferBytes: size('stream-buffer-bytes', get('stream-buffer-bytes')!),
    streamRingBytes: sizeOrOff('stream-ring-bytes', get('stream-ring-bytes')!),
    maxStreamClients: int('max-stream-clients', get('max-stream-clients')!, 1),
    proxyMaxConnections: int('proxy-max-connections', get('proxy-max-connections')!, 1),
    maxTargets: int('max-targets', get('max-targets')!, 1),
    bounds: {
      maxUrlBytes: minSize('max-url-bytes', get('max-url-bytes')!, 256),
      maxHeaderBytes: minSize('max-header-bytes', get('max-header-bytes')!, 1024),
      maxRequestTableBytes: minSize('request-table-bytes', get('request-table-bytes')!, 64 * 1024),
    },
    logLevel,
    maxEnvelopeBytes: minSize('max-envelope-bytes', get('max-envelope-bytes')!, MIN_ENVELOPE_BYTES),
    shedding: sheddingConfig(get),
    redactHeaders: (get('redact-headers') ?? '')
      .split(',')
      .map(s => s.trim())
      .filter(Boolean),
    redactParams: (get('redact-params') ?? '')
      .split(',')
      .map(s => s.trim())
      .filter(Boolean),
    diskReserveBytes: sizeOrOff('disk-reserve', get('disk-reserve')!),
    retentionBytes: size('retention-bytes', get('retention-bytes')!),
    retentionAgeMs: duration('retention-age', get('retention-age')!),
    networkBodyMaxBytes: sizeOrOff('network-body-max-bytes', get('network-body-max-bytes')!),
    screenshotIntervalMs: duration('screenshot-interval', get('screenshot-interval')!),
    recording: recordingConfig(get, bool('recording')),
    uploadMaxBytes: size('upload-max-bytes', get('upload-max-bytes')!),
    zipMaxEntries: int('zip-max-entries', get('zip-max-entries')!, 1),
    zipMaxTotalBytes: size('zip-max-total-bytes', get('zip-max-total-bytes')!),
    zipMaxRatio: int('zip-max-ratio', get('zip-max-ratio')!, 1),
    uploadMaxConcurrent: int('upload-max-concurrent', get('upload-max-concurrent')!, 1),
    drainMaxBytes: size('drain-max-bytes', get('drain-max-bytes')!),
    drainTimeoutMs: duration('drain-timeout', get('drain-timeout')!),
    watchUnits: list('watch-unit'),
    kmsgPath: get('kmsg-path')!,
    warnings,
    nats: natsConfig(get),
    otlp: otlpConfig(values, env),
  }
}

function recordingConfig(get: (flag: string) => string | undefined, enabled: boolean): RecordingConfig {
  const quality = int('recording-quality', get('recording-quality')!, 1)
  if (quality > 100) throw new ConfigError(`--recording-quality: 1 to 100, got ${quality}`)
  const fps = int('recording-max-fps', get('recording-max-fps')!, 1)
  if (fps > 60) throw new ConfigError(`--recording-max-fps: 1 to 60, got ${fps}`)
  const sizeText = get('recording-max-size')!
  const m = /^\s*(\d{1,5})\s*x\s*(\d{1,5})\s*$/i.exec(sizeText)
  if (!m || Number(m[1]) < 16 || Number(m[2]) < 16)
    throw new ConfigError(`--recording-max-size: expected WIDTHxHEIGHT like 1280x720, got ${JSON.stringify(sizeText)}`)
  return {
    enabled,
    maxFps: fps,
    quality,
    maxWidth: Number(m[1]),
    maxHeight: Number(m[2]),
    maxBytes: minSize('recording-max-bytes', get('recording-max-bytes')!, 1024 * 1024),
  }
}

function otlpConfig(values: Record<string, OptionValue>, env: NodeJS.ProcessEnv): OtlpConfig | undefined {
  try {
    return parseOtlpConfig({
      explicit: flag => {
        const v = values[flag]
        if (typeof v === 'string') return v
        const e = env[envName(flag)]
        return e !== undefined && e !== '' ? e : undefined
      },
      default: flag => SERVE_OPTIONS[flag]!.default!,
      duration,
      env,
    })
  } catch (err) {
    if (err instanceof ConfigError) throw err
    throw new ConfigError((err as Error).message)
  }
}

function natsConfig(get: (flag: string) => string | undefined): NatsConfig | undefined {
  const url = get('nats-url')
  if (url === undefined) return undefined
  let servers: string[]
  try {
    servers = parseNatsServers(url)
  } catch (err) {
    throw new ConfigError(`--nats-url: ${(err as Error).message}`)
  }
  const { stream, subjectPrefix } = streamNames(get)
  const duplicateWindowMs = duration('nats-duplicate-window', get('nats-duplicate-window')!)
  if (duplicateWindowMs < MIN_NATS_DUPLICATE_WINDOW_MS)
    throw new ConfigError('--nats-duplicate-window: must be at least 2m (re-sends after a reconnect rely on it)')
  const maxBytesText = get('nats-max-bytes')!
  const replicas = int('nats-replicas', get('nats-replicas')!, 1)
  if (replicas > 5) throw new ConfigError('--nats-replicas: JetStream allows at most 5')
  return {
    servers,
    credsFile: get('nats-creds-file'),
    tokenFile: get('nats-token-file'),
    tlsCa: get('nats-tls-ca'),
    stream,
    subjectPrefix,
    duplicateWindowMs,
    maxAgeMs: duration('nats-max-age', get('nats-max-age')!),
    maxBytes: sizeOrOff('nats-max-bytes', maxBytesText),
    replicas,
    maxInFlight: int('nats-max-in-flight', get('nats-max-in-flight')!, 1),
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
  const { get } = readOptions(FLEET_SERVE_OPTIONS, argv, env)
  const url = get('nats-url')
  if (url === undefined) throw new ConfigError('--nats-url is required (or BROWSER_TELEMETRY_NATS_URL)')
  let servers: string[]
  try {
    servers = parseNatsServers(url)
  } catch (err) {
    throw new ConfigError(`--nats-url: ${(err as Error).message}`)
  }
  const token = get('token')
  const tokenFile = get('token-file')
  if (token === undefined && tokenFile === undefined)
    throw new ConfigError(
      '--token or --token-file is required (fleet serve has no data dir to keep a generated token in)',
    )
  const { stream, subjectPrefix } = streamNames(get)
  const requestTimeoutMs = duration('nats-timeout', get('nats-timeout')!)
  if (requestTimeoutMs < 100) throw new ConfigError('--nats-timeout: at least 100ms')
  const logLevel = get('log-level')!
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(logLevel))
    throw new ConfigError(`--log-level: unknown level ${JSON.stringify(logLevel)}`)
  return {
    listen: parseHostPort(get('listen')!, '--listen'),
    token,
    tokenFile,
    nats: { servers, credsFile: get('nats-creds-file'), tokenFile: get('nats-token-file'), tlsCa: get('nats-tls-ca') },
    stream,
    subjectPrefix,
    requestTimeoutMs,
    maxStreamClients: int('max-stream-clients', get('max-stream-clients')!, 1),
    logLevel,
  }
}
