// Every `browser-telemetry serve` flag: type, default and help, each with a BROWSER_TELEMETRY_<NAME>
// env twin. Numeric defaults are formatted from DEFAULT_SETTINGS, so --help, the README's
// configuration table and the env example state the values the modules use. config.ts parses them.
import { DEFAULT_CATEGORIES } from '../pipeline/pipeline.js'
import { DEFAULT_REDACTED_HEADERS, DEFAULT_REDACTED_PARAMS } from '../events/redact.js'
import { DEFAULT_SETTINGS as D } from '../defaults.js'
import { formatDuration } from '../util/duration.js'
import { formatSize } from '../util/size.js'
import type { OptionSpec } from '../util/options.js'

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
  'capture-command-params': {
    type: 'boolean',
    help: 'Store the parameters and results of CDP proxy commands in cdp_command events (redacted, 4 KiB each; typed text, cookie and header values always masked)',
  },
  'upload-root': {
    type: 'string',
    multiple: true,
    help: 'Directory upload_zip may write under (repeatable; default: <data-dir>/uploads)',
  },
  'reconnect-attempts': {
    type: 'string',
    default: String(D.reconnectAttempts),
    help: 'Reconnect attempts before giving up',
  },
  'reconnect-initial-backoff': {
    type: 'string',
    default: formatDuration(D.reconnectInitialBackoffMs),
    help: 'First reconnect delay (doubles each attempt)',
  },
  'reconnect-max-backoff': {
    type: 'string',
    default: formatDuration(D.reconnectMaxBackoffMs),
    help: 'Reconnect delay cap (below the initial backoff it lowers that too, with a warning)',
  },
  'stream-keepalive': {
    type: 'string',
    default: formatDuration(D.streamKeepaliveMs),
    help: 'SSE keepalive comment interval',
  },
  'stream-buffer-events': {
    type: 'string',
    default: String(D.streamBufferEvents),
    help: 'Per-SSE-client buffer before a slow client is disconnected',
  },
  'stream-buffer-bytes': {
    type: 'string',
    default: formatSize(D.streamBufferBytes),
    help: 'Per-SSE-client buffer in bytes; a client further behind gets a final ": lagging" comment, is closed, and resumes with Last-Event-ID',
  },
  'stream-ring-bytes': {
    type: 'string',
    default: formatSize(D.streamRingBytes),
    help: 'SSE frames of the most recent events kept in memory (shared by all streams); a stream resuming (Last-Event-ID) within them is served without reading the store (0 = off)',
  },
  'max-stream-clients': {
    type: 'string',
    default: String(D.maxStreamClients),
    help: 'Open SSE streams at most (429 too_many_streams beyond)',
  },
  'proxy-max-connections': {
    type: 'string',
    default: String(D.proxyMaxConnections),
    help: 'Open CDP proxy connections at most (503 too_many_connections beyond)',
  },
  'max-targets': {
    type: 'string',
    default: String(D.maxTargets),
    help: 'Attached CDP targets at most; more are left unwatched, counted and logged',
  },
  'max-url-bytes': {
    type: 'string',
    default: formatSize(D.maxUrlBytes),
    help: 'URLs in events and per-target state are cut to this (event marked truncated)',
  },
  'max-header-bytes': {
    type: 'string',
    default: formatSize(D.maxHeaderBytes),
    help: 'One header set in an event (names + values); further headers are dropped (event marked truncated)',
  },
  'request-table-bytes': {
    type: 'string',
    default: formatSize(D.requestTableBytes),
    help: 'Per-target table of in-flight requests; oldest evicted first (counted)',
  },
  'log-level': { type: 'string', default: 'info', help: 'trace, debug, info, warn, error, fatal, silent' },
  'max-envelope-bytes': {
    type: 'string',
    default: formatSize(D.maxEnvelopeBytes),
    help: 'Envelope size cap; larger events are cut and marked truncated',
  },
  'shed-backlog-bytes': {
    type: 'string',
    default: formatSize(D.shedBacklogBytes),
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
    default: formatSize(D.diskReserveBytes),
    help: 'Space held in <data-dir>/.disk-reserve; when the disk fills it is released so the daemon stays up read-only (reads work, writes get 507) until space returns (0 disables the reserve)',
  },
  'retention-bytes': {
    type: 'string',
    default: formatSize(D.retentionBytes),
    help: 'Keep at most this many bytes of events',
  },
  'retention-age': { type: 'string', default: formatDuration(D.retentionAgeMs), help: 'Drop events older than this' },
  'network-body-max-bytes': {
    type: 'string',
    default: formatSize(D.networkBodyMaxBytes),
    help: 'Cap on captured text response bodies and request post data (0 = no bodies: none fetched, none inlined)',
  },
  'screenshot-interval': {
    type: 'string',
    default: formatDuration(D.screenshotIntervalMs),
    help: 'Periodic screenshot cadence (screenshot category)',
  },
  recording: {
    type: 'boolean',
    help: 'Record the screen of the visible pages from the start (JPEG frames in <data-dir>/recording, not in the event log; the capture config toggles it at runtime)',
  },
  'recording-max-fps': {
    type: 'string',
    default: String(D.recordingMaxFps),
    help: 'Recording: frames kept per second per page at most (repeated frames are never kept)',
  },
  'recording-quality': {
    type: 'string',
    default: String(D.recordingQuality),
    help: 'Recording: JPEG quality, 1-100',
  },
  'recording-max-size': {
    type: 'string',
    default: `${D.recordingMaxWidth}x${D.recordingMaxHeight}`,
    help: 'Recording: largest frame in pixels, WIDTHxHEIGHT (the viewport is scaled down to fit)',
  },
  'recording-max-bytes': {
    type: 'string',
    default: formatSize(D.recordingMaxBytes),
    help: 'Recording: JPEG bytes kept at most; the oldest frames are removed first (a recording gap)',
  },
  'upload-max-bytes': {
    type: 'string',
    default: formatSize(D.uploadMaxBytes),
    help: 'Largest accepted upload (413 above)',
  },
  'zip-max-entries': {
    type: 'string',
    default: String(D.zipMaxEntries),
    help: 'Most paths an uploaded zip may create (entries plus the directories they imply)',
  },
  'zip-max-total-bytes': {
    type: 'string',
    default: formatSize(D.zipMaxTotalBytes),
    help: 'Largest total uncompressed size of an uploaded zip',
  },
  'zip-max-ratio': {
    type: 'string',
    default: String(D.zipMaxRatio),
    help: 'Largest compression ratio of any zip entry and of the whole archive (zip-bomb guard)',
  },
  'upload-max-concurrent': {
    type: 'string',
    default: String(D.uploadMaxConcurrent),
    help: 'Uploads (upload_zip, extensions) in progress at once; 429 above',
  },
  'drain-max-bytes': {
    type: 'string',
    default: formatSize(D.drainMaxBytes),
    help: 'Body bytes read and discarded after a refusal so the client sees the status; the connection is closed beyond',
  },
  'drain-timeout': {
    type: 'string',
    default: formatDuration(D.drainTimeoutMs),
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
    default: formatDuration(D.natsDuplicateWindowMs),
    help: 'Duplicate window of a stream the daemon creates (at least 2m)',
  },
  'nats-max-age': {
    type: 'string',
    default: formatDuration(D.natsMaxAgeMs),
    help: 'Max age of a stream the daemon creates (0 = unlimited)',
  },
  'nats-max-bytes': {
    type: 'string',
    default: formatSize(D.natsMaxBytes),
    help: 'Max bytes of a stream the daemon creates (0 = unlimited)',
  },
  'nats-replicas': {
    type: 'string',
    default: String(D.natsReplicas),
    help: 'Replicas of a stream the daemon creates (3 on a 3-node cluster)',
  },
  'nats-max-in-flight': {
    type: 'string',
    default: String(D.natsMaxInFlight),
    help: 'Unacknowledged publishes at most',
  },
  'otlp-endpoint': {
    type: 'string',
    help: 'Export logs, traces and metrics over OTLP/HTTP to this base URL (e.g. http://127.0.0.1:4318; /v1/logs, /v1/traces, /v1/metrics appended; also OTEL_EXPORTER_OTLP_ENDPOINT; export is off when unset)',
  },
  'otlp-protocol': {
    type: 'string',
    default: 'http/protobuf',
    help: 'http/protobuf or http/json (also OTEL_EXPORTER_OTLP_PROTOCOL)',
  },
  'otlp-headers-file': {
    type: 'string',
    help: 'File of extra request headers, one "Name: value" per line, read at startup (OTEL_EXPORTER_OTLP_HEADERS adds name=value pairs)',
  },
  'otlp-tls-ca': {
    type: 'string',
    help: 'CA bundle that signs the collector certificate for an https endpoint (also OTEL_EXPORTER_OTLP_CERTIFICATE)',
  },
  'otlp-timeout': {
    type: 'string',
    default: formatDuration(D.otlpTimeoutMs),
    help: 'Timeout of one export request (also OTEL_EXPORTER_OTLP_TIMEOUT, in ms)',
  },
  'otlp-signals': {
    type: 'string',
    default: 'logs,traces,metrics',
    help: 'Signals to export, comma-separated: logs, traces, metrics',
  },
  'otlp-metrics-interval': {
    type: 'string',
    default: formatDuration(D.otlpMetricsIntervalMs),
    help: 'How often the daemon metrics are exported (also OTEL_METRIC_EXPORT_INTERVAL, in ms)',
  },
}

export function envName(flag: string): string {
  return 'BROWSER_TELEMETRY_' + flag.toUpperCase().replace(/-/g, '_')
}

/** `browser-telemetry fleet serve` flags (same env twins as serve); the shared ones keep serve's text. */
export const FLEET_SERVE_OPTIONS: Record<string, OptionSpec> = {
  listen: { type: 'string', default: '127.0.0.1:10223', help: 'API listen address host:port' },
  token: { type: 'string', help: 'API bearer token with every scope (this or --token-file is required)' },
  'token-file': SERVE_OPTIONS['token-file']!,
  'nats-url': {
    type: 'string',
    help: "The fleet stream's NATS server(s): nats://host:port, comma-separated (required)",
  },
  'nats-creds-file': SERVE_OPTIONS['nats-creds-file']!,
  'nats-token-file': SERVE_OPTIONS['nats-token-file']!,
  'nats-tls-ca': SERVE_OPTIONS['nats-tls-ca']!,
  'nats-stream': { type: 'string', default: 'BROWSER_TELEMETRY', help: 'JetStream stream the daemons ship to' },
  'nats-subject-prefix': SERVE_OPTIONS['nats-subject-prefix']!,
  'nats-timeout': {
    type: 'string',
    default: formatDuration(D.fleetServeRequestTimeoutMs),
    help: 'Timeout of one JetStream request; a read that hits it answers 503',
  },
  'max-stream-clients': SERVE_OPTIONS['max-stream-clients']!,
  'log-level': SERVE_OPTIONS['log-level']!,
}
