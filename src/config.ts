// The configuration surface of `browser-telemetry serve`: flags, each with a BROWSER_TELEMETRY_<NAME>
// env twin, defaults, validated once. Pure: parseServeConfig(argv, env) throws ConfigError.
import { CONFIGURABLE_CATEGORIES } from './events/index.js'
import { DEFAULT_CATEGORIES, type ConfigurableCategory } from './pipeline.js'
import { DEFAULT_REDACTED_HEADERS, DEFAULT_REDACTED_PARAMS } from './redact.js'
import { MIN_ENVELOPE_BYTES } from './envelope-fit.js'
import { defaultShedding, type ShedOptions } from './shedding.js'
import type { StateBounds } from './bounds.js'
import { parseDuration } from './util/duration.js'
import { parseSize } from './util/size.js'
import { OptionsError, parseOptions, type OptionSpec, type OptionValue } from './util/options.js'
import { parseNatsServers } from './ship/connect.js'
import { isValidSubjectPrefix } from './ship/subject.js'

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
}

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

/** JetStream's duplicate window must cover a reconnect plus re-sends; the contract says at least 2 minutes. */
export const MIN_NATS_DUPLICATE_WINDOW_MS = 120_000

/** Every serve flag. The README's configuration table and the env example are written from this. */
export const SERVE_OPTIONS: Record<string, OptionSpec> = {
  listen: { type: 'string', default: '127.0.0.1:10222', help: 'API listen address host:port' },
  'data-dir': { type: 'string', default: './data', help: 'Where the event log, token, browser id and extensions live' },
  'browser-id': {
    type: 'string',
    help: 'Browser session id served under /browsers/{id} (default: generated once, kept in the data dir)',
  },
  'cdp-url': { type: 'string', help: 'Attach to a running browser: http://host:port or a ws:// DevTools URL' },
  launch: { type: 'boolean', help: 'Launch a local headless Chromium (default when --cdp-url is not given)' },
  'no-browser': { type: 'boolean', help: 'Run without any browser (API and store only)' },
  'chromium-path': { type: 'string', default: '/usr/bin/chromium', help: 'Chromium binary for --launch' },
  'chromium-arg': { type: 'string', multiple: true, help: 'Extra Chromium flag for --launch (repeatable)' },
  'chromium-user': {
    type: 'string',
    default: 'nobody',
    help: 'When the daemon runs as root, the launched Chromium runs as this user (name or uid; must exist in /etc/passwd, nobody falls back to 65534), sandboxed where the kernel allows',
  },
  open: { type: 'string', help: 'Demo: navigate the launched browser to this URL at startup' },
  token: { type: 'string', help: 'API bearer token with every scope' },
  'token-file': {
    type: 'string',
    help: 'File of tokens, one per line: "<token> <scope>[,<scope>...] [<name>]" (scopes: read, write, publish, cdp; the name is what audit events show)',
  },
  categories: {
    type: 'string',
    default: DEFAULT_CATEGORIES.join(','),
    help: 'Enabled categories, comma-separated (monitor follows the capture rule; screenshot is opt-in)',
  },
  'proxy-listen': {
    type: 'string',
    default: '127.0.0.1:9222',
    help: 'CDP WebSocket proxy listen address ("off" disables)',
  },
  'proxy-auth': {
    type: 'boolean',
    help: 'Require a bearer token with scope cdp on the CDP proxy (always on when not bound to loopback)',
  },
  'upload-root': {
    type: 'string',
    multiple: true,
    help: 'Directory upload_zip may write under (repeatable; default: <data-dir>/uploads)',
  },
  'reconnect-attempts': { type: 'string', default: '10', help: 'Reconnect attempts before giving up' },
  'reconnect-initial-backoff': {
    type: 'string',
    default: '250ms',
    help: 'First reconnect delay (doubles each attempt)',
  },
  'reconnect-max-backoff': {
    type: 'string',
    default: '2s',
    help: 'Reconnect delay cap (below the initial backoff it lowers that too, with a warning)',
  },
  'stream-keepalive': { type: 'string', default: '15s', help: 'SSE keepalive comment interval' },
  'stream-buffer-events': {
    type: 'string',
    default: '10000',
    help: 'Per-SSE-client buffer before a slow client is disconnected',
  },
  'stream-buffer-bytes': {
    type: 'string',
    default: '8MiB',
    help: 'Per-SSE-client buffer in bytes; a client further behind gets a final ": lagging" comment, is closed, and resumes with Last-Event-ID',
  },
  'stream-ring-bytes': {
    type: 'string',
    default: '16MiB',
    help: 'SSE frames of the most recent events kept in memory (shared by all streams); a stream resuming (Last-Event-ID) within them is served without reading the store (0 = off)',
  },
  'max-stream-clients': {
    type: 'string',
    default: '64',
    help: 'Open SSE streams at most (429 too_many_streams beyond)',
  },
  'proxy-max-connections': {
    type: 'string',
    default: '32',
    help: 'Open CDP proxy connections at most (503 too_many_connections beyond)',
  },
  'max-targets': {
    type: 'string',
    default: '500',
    help: 'Attached CDP targets at most; more are left unwatched, counted and logged',
  },
  'max-url-bytes': {
    type: 'string',
    default: '8KiB',
    help: 'URLs in events and per-target state are cut to this (event marked truncated)',
  },
  'max-header-bytes': {
    type: 'string',
    default: '32KiB',
    help: 'One header set in an event (names + values); further headers are dropped (event marked truncated)',
  },
  'request-table-bytes': {
    type: 'string',
    default: '4MiB',
    help: 'Per-target table of in-flight requests; oldest evicted first (counted)',
  },
  'log-level': { type: 'string', default: 'info', help: 'trace, debug, info, warn, error, fatal, silent' },
  'max-envelope-bytes': {
    type: 'string',
    default: '1MiB',
    help: 'Envelope size cap; larger events are cut and marked truncated',
  },
  'shed-backlog-bytes': {
    type: 'string',
    default: '16MiB',
    help: 'Load shedding: store backlog (bytes not yet committed) above which the loudest page and category are shed (their seqs skipped: a gap) and counted; every event is kept below it',
  },
  'redact-headers': {
    type: 'string',
    help: `Extra header names whose values are masked, comma-separated (always masked: ${DEFAULT_REDACTED_HEADERS.join(', ')})`,
  },
  'redact-params': {
    type: 'string',
    help: `Extra URL query/fragment parameter and form/JSON field names to mask, comma-separated (always masked: names containing ${DEFAULT_REDACTED_PARAMS.filter(p => p.length >= 5).join(', ')}; words ${DEFAULT_REDACTED_PARAMS.filter(p => p.length < 5).join(', ')})`,
  },
  'disk-reserve': {
    type: 'string',
    default: '8MiB',
    help: 'Space held in <data-dir>/.disk-reserve; when the disk fills it is released so the daemon stays up read-only (reads work, writes get 507) until space returns (0 disables the reserve)',
  },
  'retention-bytes': { type: 'string', default: '512MiB', help: 'Keep at most this many bytes of events' },
  'retention-age': { type: 'string', default: '7d', help: 'Drop events older than this' },
  'network-body-max-bytes': {
    type: 'string',
    default: '64KiB',
    help: 'Cap on captured text response bodies and request post data (0 = no bodies: none fetched, none inlined)',
  },
  'screenshot-interval': { type: 'string', default: '5s', help: 'Periodic screenshot cadence (screenshot category)' },
  'upload-max-bytes': { type: 'string', default: '1GiB', help: 'Largest accepted upload (413 above)' },
  'zip-max-entries': {
    type: 'string',
    default: '100000',
    help: 'Most paths an uploaded zip may create (entries plus the directories they imply)',
  },
  'zip-max-total-bytes': {
    type: 'string',
    default: '4GiB',
    help: 'Largest total uncompressed size of an uploaded zip',
  },
  'zip-max-ratio': {
    type: 'string',
    default: '200',
    help: 'Largest compression ratio of any zip entry and of the whole archive (zip-bomb guard)',
  },
  'upload-max-concurrent': {
    type: 'string',
    default: '4',
    help: 'Uploads (upload_zip, extensions) in progress at once; 429 above',
  },
  'drain-max-bytes': {
    type: 'string',
    default: '64MiB',
    help: 'Body bytes read and discarded after a refusal so the client sees the status; the connection is closed beyond',
  },
  'drain-timeout': {
    type: 'string',
    default: '10s',
    help: 'How long a refused request body is drained before the connection is closed',
  },
  'watch-unit': { type: 'string', multiple: true, help: 'systemd unit to watch for service_crashed (repeatable)' },
  'kmsg-path': { type: 'string', default: '/dev/kmsg', help: 'Kernel log to read OOM-kill reports from' },
  'nats-url': {
    type: 'string',
    help: 'Ship every committed event to NATS JetStream: nats://host:port, comma-separated for a cluster (shipping is off when unset)',
  },
  'nats-creds-file': { type: 'string', help: 'NATS credentials file (user JWT + NKey seed, .creds)' },
  'nats-token-file': { type: 'string', help: 'File holding a NATS auth token' },
  'nats-tls-ca': { type: 'string', help: 'CA bundle that signs the NATS server certificate (turns TLS on)' },
  'nats-stream': {
    type: 'string',
    default: 'BROWSER_TELEMETRY',
    help: 'JetStream stream to publish to (created when missing; an existing one is used as is)',
  },
  'nats-subject-prefix': {
    type: 'string',
    default: 'telemetry',
    help: 'Subjects are <prefix>.<browser_id>.<category>',
  },
  'nats-duplicate-window': {
    type: 'string',
    default: '2m',
    help: 'Duplicate window of a stream the daemon creates (at least 2m)',
  },
  'nats-max-age': { type: 'string', default: '7d', help: 'Max age of a stream the daemon creates (0 = unlimited)' },
  'nats-max-bytes': { type: 'string', default: '0', help: 'Max bytes of a stream the daemon creates (0 = unlimited)' },
  'nats-replicas': {
    type: 'string',
    default: '1',
    help: 'Replicas of a stream the daemon creates (3 on a 3-node cluster)',
  },
  'nats-max-in-flight': { type: 'string', default: '256', help: 'Unacknowledged publishes at most' },
}

export function envName(flag: string): string {
  return 'BROWSER_TELEMETRY_' + flag.toUpperCase().replace(/-/g, '_')
}

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
  // The page cap follows the retention: a share of it (src/shedding.ts, README "Limits").
  return {
    ...defaultShedding(size('retention-bytes', get('retention-bytes')!)),
    backlogBytes: minSize('shed-backlog-bytes', get('shed-backlog-bytes')!, 1024 * 1024),
  }
}

export function parseServeConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  let values: Record<string, OptionValue>
  try {
    values = parseOptions(SERVE_OPTIONS, argv).values
  } catch (err) {
    if (err instanceof OptionsError) throw new ConfigError(err.message)
    throw err
  }
  const get = (flag: string): string | undefined => {
    const v = values[flag]
    if (typeof v === 'string') return v
    const e = env[envName(flag)]
    if (e !== undefined && e !== '') return e
    return SERVE_OPTIONS[flag]!.default
  }
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
  const stream = get('nats-stream')!
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(stream))
    throw new ConfigError(`--nats-stream: letters, digits, "_" and "-" only, got ${JSON.stringify(stream)}`)
  const subjectPrefix = get('nats-subject-prefix')!
  if (!isValidSubjectPrefix(subjectPrefix))
    throw new ConfigError(
      `--nats-subject-prefix: dot-separated tokens without spaces, "*" or ">", got ${JSON.stringify(subjectPrefix)}`,
    )
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
