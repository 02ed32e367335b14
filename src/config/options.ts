// One idea: every option of every command, once: flag, env twin (BROWSER_TELEMETRY_<NAME>), default, parser
// and help. `serve`, `fleet serve`, `fleet tail/read` and the client commands pick their flags from
// OPTIONS; --help, docs/configuration.md and the env example are written from it. Numeric defaults
// come from DEFAULT_SETTINGS, so what is shown is what the modules use.
import { DEFAULT_CATEGORIES } from '../pipeline/pipeline.js'
import { MIN_ENVELOPE_BYTES } from '../pipeline/envelope-fit.js'
import {
  DEFAULT_REDACTED_HEADERS,
  DEFAULT_REDACTED_PARAMS,
  DEFAULT_REDACTED_URL_FORM_PARAMS,
} from '../events/redact.js'
import { BROWSER_ID_SYNTAX } from '../identity/browser-id.js'
import { parseNatsServers } from '../nats/connect.js'
import { isValidSubjectPrefix } from '../nats/subject.js'
import { DEFAULT_SETTINGS as D } from '../defaults.js'
import { LOG_LEVELS } from '../log.js'
import { formatDuration } from '../util/duration.js'
import { formatSize } from '../util/size.js'
import { duration, flag, hostPort, int, list, matching, names, parsed, pick, size, text } from './resolve.js'
import type { OptionTable } from './resolve.js'

const KiB = 1024
const MiB = 1024 * KiB
const LOG_LEVEL_SYNTAX = new RegExp(`^(${LOG_LEVELS.join('|')})$`)

function parseSubjectPrefix(v: string): string {
  if (!isValidSubjectPrefix(v))
    throw new Error(`dot-separated tokens without spaces, "*" or ">", got ${JSON.stringify(v)}`)
  return v
}

/**
 * The components the serve options configure, in table order, with their heading in
 * docs/configuration.md. Each but `daemon` (ServeConfig's top-level fields) is the ServeConfig
 * group of that name, built from its rows.
 */
export const COMPONENTS = {
  daemon: 'Daemon',
  browser: 'Browser',
  auth: 'API tokens',
  traceLinks: 'Trace links',
  capture: 'Capture',
  proxy: 'CDP proxy',
  streams: 'SSE streams',
  bounds: 'Per-target bounds',
  shedding: 'Load shedding',
  redaction: 'Redaction',
  store: 'Event store',
  sourcemaps: 'Source maps',
  recording: 'Screen recording',
  perfTraces: 'Performance traces',
  uploads: 'Uploads',
  drain: 'Refused request bodies',
  system: 'System events',
  nats: 'NATS shipping',
  otlp: 'OTLP export',
} as const
export type Component = keyof typeof COMPONENTS

/** One component's rows, each marked with it. */
function rows<T extends OptionTable>(component: Component, table: T): T {
  for (const option of Object.values(table)) option.component = component
  return table
}

/** Every option. A command's flags are a pick of these (below), with its own wording where it differs. */
export const OPTIONS = {
  ...rows('daemon', {
    listen: hostPort({ default: '127.0.0.1:10222', help: 'API listen address host:port' }),
    'data-dir': text({ default: './data', help: 'Where the event log, token, browser id and extensions live' }),
    'browser-id': matching(
      { help: 'Browser session id served under /browsers/{id} (default: generated once, kept in the data dir)' },
      BROWSER_ID_SYNTAX,
      '1-128 characters of letters, digits, ".", "_", "-"',
    ),
    'log-level': matching(
      { default: 'info', help: 'trace, debug, info, warn, error, fatal, silent' },
      LOG_LEVEL_SYNTAX,
      'one of trace, debug, info, warn, error, fatal, silent',
    ),
    'export-max-concurrent': int(
      {
        default: String(D.exportMaxConcurrent),
        help: 'Trace and bundle exports (trace.zip, bundle) built at once, shared; 429 above',
      },
      1,
    ),
  }),
  ...rows('browser', {
    'cdp-url': matching(
      { help: 'Attach to a running browser: http://host:port or a ws:// DevTools URL' },
      /^(https?|wss?):\/\//,
      'expected http://host:port or ws://...',
    ),
    launch: flag({ help: 'Launch a local headless Chromium (default when --cdp-url is not given)' }),
    'no-browser': flag({ help: 'Run without any browser (API and store only)' }),
    'chromium-path': text({ default: '/usr/bin/chromium', help: 'Chromium binary for --launch' }),
    'chromium-arg': list({ help: 'Extra Chromium flag for --launch (repeatable)' }),
    'chromium-user': text({
      default: 'nobody',
      help: 'When the daemon runs as root, the launched Chromium runs as this user (name or uid; must exist in /etc/passwd, nobody falls back to 65534), sandboxed where the kernel allows',
    }),
    open: text({ help: 'Demo: navigate the launched browser to this URL at startup' }),
    'max-targets': int(
      {
        default: String(D.maxTargets),
        help: 'Attached CDP targets at most; more are left unwatched, counted and logged',
      },
      1,
    ),
    'reconnect-attempts': int({ default: String(D.reconnectAttempts), help: 'Reconnect attempts before giving up' }, 0),
    'reconnect-initial-backoff': duration({
      default: formatDuration(D.reconnectInitialBackoffMs),
      help: 'First reconnect delay (doubles each attempt)',
    }),
    'reconnect-max-backoff': duration({
      default: formatDuration(D.reconnectMaxBackoffMs),
      help: 'Reconnect delay cap (below the initial backoff it lowers that too, with a warning)',
    }),
  }),
  ...rows('auth', {
    token: text({ help: 'API bearer token with every scope' }),
    'token-file': text({
      help: 'File of tokens, one per line: "<token> <scope>[,<scope>...] [<name>]" (scopes: read, write, publish, cdp; the name is what audit events show)',
    }),
  }),
  ...rows('traceLinks', {
    'trace-link-key-file': text({
      help: 'File holding the key (32+ bytes of text) that signs trace links; links then survive restarts until the key changes (default: a key made at each start, so a restart ends every link)',
    }),
    'trace-link-origins': text({
      default: 'https://trace.playwright.dev',
      help: 'Origins allowed to fetch a trace through a signed link (CORS), comma-separated',
    }),
  }),
  ...rows('capture', {
    categories: text({
      default: DEFAULT_CATEGORIES.join(','),
      help: 'Enabled categories, comma-separated (monitor follows the capture rule; screenshot is opt-in)',
    }),
    'mask-typed-keys': flag({
      help: 'Store printable keys in interaction_key without their value (key [redacted:8]); named keys (Enter, Tab, Backspace), modifiers and shortcuts (Control+A) stay; the capture config toggles it at runtime',
    }),
    'network-body-max-bytes': size(
      {
        default: formatSize(D.networkBodyMaxBytes),
        help: 'Cap on captured text response bodies and request post data (0 = no bodies: none fetched, none inlined)',
      },
      { off: true },
    ),
    'screenshot-interval': duration({
      default: formatDuration(D.screenshotIntervalMs),
      help: 'Periodic screenshot cadence (screenshot category)',
    }),
    'max-envelope-bytes': size(
      {
        default: formatSize(D.maxEnvelopeBytes),
        help: 'Envelope size cap; larger events are cut and marked truncated',
      },
      { min: MIN_ENVELOPE_BYTES },
    ),
  }),
  ...rows('proxy', {
    'proxy-listen': text({ default: '127.0.0.1:9222', help: 'CDP WebSocket proxy listen address ("off" disables)' }),
    'proxy-auth': flag({
      help: 'Require a bearer token with scope cdp on the CDP proxy (always on when not bound to loopback)',
    }),
    'proxy-max-connections': int(
      {
        default: String(D.proxyMaxConnections),
        help: 'Open CDP proxy connections at most (503 too_many_connections beyond)',
      },
      1,
    ),
    'capture-command-params': flag({
      help: 'Store the parameters and results of CDP proxy commands in cdp_command events (redacted, 4 KiB each; typed text, cookie and header values always masked)',
    }),
  }),
  ...rows('streams', {
    'stream-keepalive': duration({
      default: formatDuration(D.streamKeepaliveMs),
      help: 'SSE keepalive comment interval',
    }),
    'stream-buffer-events': int(
      { default: String(D.streamBufferEvents), help: 'Per-SSE-client buffer before a slow client is disconnected' },
      1,
    ),
    'stream-buffer-bytes': size({
      default: formatSize(D.streamBufferBytes),
      help: 'Per-SSE-client buffer in bytes; a client further behind gets a final ": lagging" comment, is closed, and resumes with Last-Event-ID',
    }),
    'stream-ring-bytes': size(
      {
        default: formatSize(D.streamRingBytes),
        help: 'SSE frames of the most recent events kept in memory (shared by all streams); a stream resuming (Last-Event-ID) within them is served without reading the store (0 = off)',
      },
      { off: true },
    ),
    'max-stream-clients': int(
      { default: String(D.maxStreamClients), help: 'Open SSE streams at most (429 too_many_streams beyond)' },
      1,
    ),
  }),
  ...rows('bounds', {
    'max-url-bytes': size(
      {
        default: formatSize(D.maxUrlBytes),
        help: 'URLs in events and per-target state are cut to this (event marked truncated)',
      },
      { min: 256 },
    ),
    'max-header-bytes': size(
      {
        default: formatSize(D.maxHeaderBytes),
        help: 'One header set in an event (names + values); further headers are dropped (event marked truncated)',
      },
      { min: 1024 },
    ),
    'request-table-bytes': size(
      {
        default: formatSize(D.requestTableBytes),
        help: 'Per-target table of in-flight requests; oldest evicted first (counted)',
      },
      { min: 64 * KiB },
    ),
  }),
  ...rows('shedding', {
    'shed-backlog-bytes': size(
      {
        default: formatSize(D.shedBacklogBytes),
        help: 'Load shedding: store backlog (bytes not yet committed) above which the loudest page and category are shed (their seqs skipped: a gap) and counted; every event is kept below it',
      },
      { min: MiB },
    ),
  }),
  ...rows('redaction', {
    'redact-headers': names({
      help: `Extra header names whose values are masked, comma-separated (always masked: ${DEFAULT_REDACTED_HEADERS.join(', ')})`,
    }),
    'redact-params': names({
      help: `Extra URL query/fragment parameter and form/JSON/YAML field names to mask, comma-separated (always masked: names containing ${DEFAULT_REDACTED_PARAMS.filter(p => p.length >= 5).join(', ')}; words ${DEFAULT_REDACTED_PARAMS.filter(p => p.length < 5).join(', ')}; in URLs and forms only, the word ${DEFAULT_REDACTED_URL_FORM_PARAMS.join(', ')})`,
    }),
  }),
  ...rows('store', {
    'retention-bytes': size({ default: formatSize(D.retentionBytes), help: 'Keep at most this many bytes of events' }),
    'retention-age': duration({ default: formatDuration(D.retentionAgeMs), help: 'Drop events older than this' }),
    'disk-reserve': size(
      {
        default: formatSize(D.diskReserveBytes),
        help: 'Space held in <data-dir>/.disk-reserve; when the disk fills it is released so the daemon stays up read-only (reads work, writes get 507) until space returns (0 disables the reserve)',
      },
      { off: true },
    ),
  }),
  ...rows('sourcemaps', {
    'sourcemap-max-bytes': size(
      { default: formatSize(D.sourcemapMaxBytes), help: 'Largest source map fetched, inlined or uploaded (413 above)' },
      { min: KiB },
    ),
    'sourcemap-store-bytes': size(
      {
        default: formatSize(D.sourcemapStoreBytes),
        help: 'Source maps kept in <data-dir>/sourcemaps, uploaded and fetched: fetched ones are removed oldest first; an upload that does not fit gets 507',
      },
      { min: MiB },
    ),
    'sourcemap-cache-bytes': size(
      {
        default: formatSize(D.sourcemapCacheBytes),
        help: 'Parsed source maps kept in memory (estimated heap; least recently used go first); a map that alone needs more is refused',
      },
      { min: MiB },
    ),
    'no-sourcemap-fetch': flag({
      help: 'Never load scripts or source maps (through the browser or by the daemon) to map stack frames (uploaded maps still apply)',
    }),
  }),
  ...rows('recording', {
    recording: flag({
      help: 'Record the screen of the visible pages from the start (JPEG frames in <data-dir>/recording, not in the event log; the capture config toggles it at runtime)',
    }),
    'recording-max-fps': int(
      {
        default: String(D.recordingMaxFps),
        help: 'Recording: frames kept per second per page at most (repeated frames are never kept); Chromium is acknowledged at this pace, so it encodes about as many',
      },
      1,
    ),
    'recording-quality': int({ default: String(D.recordingQuality), help: 'Recording: JPEG quality, 1-100' }, 1),
    'recording-max-size': text({
      default: `${D.recordingMaxWidth}x${D.recordingMaxHeight}`,
      help: 'Recording: largest frame in pixels, WIDTHxHEIGHT (the viewport is scaled down to fit; 960 keeps the text of a 1280-wide page readable, raise it for wider windows)',
    }),
    'recording-max-bytes': size(
      {
        default: formatSize(D.recordingMaxBytes),
        help: 'Recording: JPEG bytes kept at most; the oldest frames are removed first (a recording gap)',
      },
      { min: MiB },
    ),
  }),
  ...rows('perfTraces', {
    'perf-trace-max-bytes': size(
      {
        default: formatSize(D.perfTraceMaxBytes),
        help: 'Performance traces: the largest trace file (gzip); a trace growing past it fails and is not kept',
      },
      { min: MiB },
    ),
    'perf-trace-store-bytes': size(
      {
        default: formatSize(D.perfTraceStoreBytes),
        help: 'Performance traces kept in <data-dir>/perf-traces at most, in bytes; the oldest are removed first',
      },
      { min: MiB },
    ),
    'perf-trace-keep': int(
      { default: String(D.perfTraceKeep), help: 'Performance traces kept at most; the oldest are removed first' },
      1,
    ),
  }),
  ...rows('uploads', {
    'upload-root': list({
      help: "Directory upload_zip may write under (repeatable; default: <data-dir>/uploads, the browser user's home and its Downloads, /tmp)",
    }),
    'upload-max-bytes': size({ default: formatSize(D.uploadMaxBytes), help: 'Largest accepted upload (413 above)' }),
    'upload-max-concurrent': int(
      {
        default: String(D.uploadMaxConcurrent),
        help: 'Uploads (upload_zip, extensions) in progress at once; 429 above',
      },
      1,
    ),
    'zip-max-entries': int(
      {
        default: String(D.zipMaxEntries),
        help: 'Most paths an uploaded zip may create (entries plus the directories they imply)',
      },
      1,
    ),
    'zip-max-total-bytes': size({
      default: formatSize(D.zipMaxTotalBytes),
      help: 'Largest total uncompressed size of an uploaded zip',
    }),
    'zip-max-ratio': int(
      {
        default: String(D.zipMaxRatio),
        help: 'Largest compression ratio of any zip entry and of the whole archive (zip-bomb guard)',
      },
      1,
    ),
  }),
  ...rows('drain', {
    'drain-max-bytes': size({
      default: formatSize(D.drainMaxBytes),
      help: 'Body bytes read and discarded after a refusal so the client sees the status; the connection is closed beyond',
    }),
    'drain-timeout': duration({
      default: formatDuration(D.drainTimeoutMs),
      help: 'How long a refused request body is drained before the connection is closed',
    }),
  }),
  ...rows('system', {
    'watch-unit': list({ help: 'systemd unit to watch for service_crashed (repeatable)' }),
    'kmsg-path': text({ default: '/dev/kmsg', help: 'Kernel log to read OOM-kill reports from' }),
  }),
  ...rows('nats', {
    'nats-url': parsed(
      {
        help: 'Ship every committed event to NATS JetStream: nats://host:port, comma-separated for a cluster (shipping is off when unset)',
      },
      parseNatsServers,
    ),
    'nats-creds-file': text({ help: 'NATS credentials file (user JWT + NKey seed, .creds)' }),
    'nats-token-file': text({ help: 'File holding a NATS auth token' }),
    'nats-tls-ca': text({ help: 'CA bundle that signs the NATS server certificate (turns TLS on)' }),
    'nats-stream': matching(
      {
        default: 'BROWSER_TELEMETRY',
        help: 'JetStream stream to publish to (created when missing; an existing one is used as is)',
      },
      /^[A-Za-z0-9_-]{1,255}$/,
      'letters, digits, "_" and "-" only',
    ),
    'nats-subject-prefix': parsed(
      { default: 'telemetry', help: 'Subjects are <prefix>.<browser_id>.<category>' },
      parseSubjectPrefix,
    ),
    'nats-duplicate-window': duration({
      default: formatDuration(D.natsDuplicateWindowMs),
      help: 'Duplicate window of a stream the daemon creates (at least 2m)',
    }),
    'nats-max-age': duration({
      default: formatDuration(D.natsMaxAgeMs),
      help: 'Max age of a stream the daemon creates (0 = unlimited)',
    }),
    'nats-max-bytes': size(
      { default: formatSize(D.natsMaxBytes), help: 'Max bytes of a stream the daemon creates (0 = unlimited)' },
      { off: true },
    ),
    'nats-replicas': int(
      { default: String(D.natsReplicas), help: 'Replicas of a stream the daemon creates (3 on a 3-node cluster)' },
      1,
    ),
    'nats-max-in-flight': int({ default: String(D.natsMaxInFlight), help: 'Unacknowledged publishes at most' }, 1),
  }),
  ...rows('otlp', {
    'otlp-endpoint': text({
      help: 'Export logs, traces and metrics over OTLP/HTTP to this base URL (e.g. http://127.0.0.1:4318; /v1/logs, /v1/traces, /v1/metrics appended; also OTEL_EXPORTER_OTLP_ENDPOINT; export is off when unset)',
    }),
    'otlp-protocol': text({
      default: 'http/protobuf',
      help: 'http/protobuf or http/json (also OTEL_EXPORTER_OTLP_PROTOCOL)',
    }),
    'otlp-headers-file': text({
      help: 'File of extra request headers, one "Name: value" per line, read at startup (OTEL_EXPORTER_OTLP_HEADERS adds name=value pairs)',
    }),
    'otlp-tls-ca': text({
      help: 'CA bundle that signs the collector certificate for an https endpoint (also OTEL_EXPORTER_OTLP_CERTIFICATE)',
    }),
    'otlp-timeout': text({
      default: formatDuration(D.otlpTimeoutMs),
      help: 'Timeout of one export request (also OTEL_EXPORTER_OTLP_TIMEOUT, in ms)',
    }),
    'otlp-signals': text({
      default: 'logs,traces,metrics',
      help: 'Signals to export, comma-separated: logs, traces, metrics',
    }),
    'otlp-metrics-interval': text({
      default: formatDuration(D.otlpMetricsIntervalMs),
      help: 'How often the daemon metrics are exported (also OTEL_METRIC_EXPORT_INTERVAL, in ms)',
    }),
  }),
  // Only other commands take these: no serve component.
  'nats-timeout': duration({
    default: formatDuration(D.fleetServeRequestTimeoutMs),
    help: 'fleet serve: timeout of one JetStream request; a read that hits it answers 503',
  }),
  url: parsed({ arg: 'URL', default: 'http://127.0.0.1:10222', help: 'Daemon API base URL' }, parseApiUrl),
  help: flag({ short: 'h', env: '', help: 'Show this help' }),
}

function parseApiUrl(v: string): string {
  const url = v.replace(/\/+$/, '')
  if (!/^https?:\/\/[^/]/.test(url)) throw new Error(`expected http://host:port, got ${JSON.stringify(v)}`)
  return url
}

export type Flag = keyof typeof OPTIONS

/** Options only other commands take; `serve` takes every other one, in the table's order. */
const NOT_SERVE = ['nats-timeout', 'url', 'help'] as const
type ServeFlag = Exclude<Flag, (typeof NOT_SERVE)[number]>

/** `browser-telemetry serve`. */
export const SERVE_OPTIONS = pick(
  OPTIONS,
  (Object.keys(OPTIONS) as Flag[]).filter((f): f is ServeFlag => !(NOT_SERVE as readonly string[]).includes(f)),
)

/** The NATS connection and stream: serve (shipping), fleet serve and fleet tail/read (reading). */
export const NATS_FLAGS = [
  'nats-url',
  'nats-creds-file',
  'nats-token-file',
  'nats-tls-ca',
  'nats-stream',
  'nats-subject-prefix',
] as const

/** `browser-telemetry fleet serve`. */
export const FLEET_SERVE_OPTIONS = pick(
  OPTIONS,
  ['listen', 'token', 'token-file', ...NATS_FLAGS, 'nats-timeout', 'max-stream-clients', 'log-level'],
  {
    listen: { default: '127.0.0.1:10223' },
    token: { help: 'API bearer token with every scope (this or --token-file is required)' },
    'nats-url': { help: "The fleet stream's NATS server(s): nats://host:port, comma-separated (required)" },
    'nats-stream': { help: 'JetStream stream the daemons ship to' },
    'nats-timeout': { help: 'Timeout of one JetStream request; a read that hits it answers 503' },
  },
)

/** `browser-telemetry fleet tail|read`: the stream, read directly. */
export const FLEET_READ_OPTIONS = pick(OPTIONS, [...NATS_FLAGS, 'browser-id'], {
  'nats-url': { arg: 'URL', help: "The fleet stream's NATS server(s): nats://host:port, comma-separated (required)" },
  'nats-stream': { arg: 'NAME', help: 'JetStream stream the daemons ship to' },
  'browser-id': { arg: 'ID', help: "Only this VM's browser (default: every browser in the stream)" },
})

/** The client commands' connection to a daemon (tail, read, har, bundle, ...). */
export const CONNECTION_OPTIONS = pick(OPTIONS, ['url', 'token', 'browser-id', 'help'], {
  token: { arg: 'TOKEN', help: 'Bearer token (default: <data dir>/token when readable)' },
  'browser-id': { arg: 'ID', help: 'Browser session id (default: asked from the daemon)' },
})
