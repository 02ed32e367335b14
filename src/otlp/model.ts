// From stored envelopes to OpenTelemetry data: the resource, deterministic trace/span ids, times, and
// one LogRecord per envelope (semantic-convention keys where they exist). Ids are derived from the
// browser id and what the events say (target, nav_seq, request, seq), so a re-send after a crash or
// an outage carries the same identity and the traces of logs and spans agree without shared state.
import { createHash } from 'node:crypto'
import { hostname } from 'node:os'
import type { Attributes, HrTime, SpanContext } from '@opentelemetry/api'
import type { LogBody } from '@opentelemetry/api-logs'
import type { InstrumentationScope } from '@opentelemetry/core'
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources'
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs'
import type { StoredRecord } from '../store/event-log.js'

/** The envelope as stored. */
export interface Envelope {
  seq: number
  event: {
    ts: number
    type: string
    category: string
    source?: { kind?: string }
    data: Record<string, unknown>
    truncated?: boolean
  }
}

export function parseEnvelope(rec: StoredRecord): Envelope {
  return JSON.parse(rec.json) as Envelope
}

/** Categories never exported as logs (image payloads; a log backend is no place for them). */
export const NOT_LOGGED = new Set(['screenshot'])

export interface OtlpIdentity {
  browserId: string
  version: string
  serviceName?: string
  resourceAttributes?: Record<string, string>
}

/** One resource and one scope per daemon: the serializers group records by these objects' identity. */
export interface OtlpShared {
  resource: Resource
  scope: InstrumentationScope
  browserId: string
}

export function sharedOf(id: OtlpIdentity): OtlpShared {
  return {
    resource: resourceFromAttributes({
      ...id.resourceAttributes,
      'service.name': id.serviceName ?? 'browser-telemetry',
      'service.version': id.version,
      'host.name': hostname(),
      'browser.id': id.browserId,
    }),
    scope: { name: 'browser-telemetry', version: id.version },
    browserId: id.browserId,
  }
}

export function hrTimeOf(tsMicros: number): HrTime {
  return [Math.floor(tsMicros / 1e6), (tsMicros % 1e6) * 1000]
}

function hexId(bytes: number, ...parts: (string | number | undefined)[]): string {
  return createHash('sha256')
    .update(parts.map(p => String(p ?? '')).join('\u0000'))
    .digest('hex')
    .slice(0, bytes * 2)
}

/** The trace of one page navigation: (browser, target, nav_seq). */
export function navTraceId(browserId: string, targetId: string, navSeq: number): string {
  return hexId(16, 'nav', browserId, targetId, navSeq)
}
export function navRootSpanId(browserId: string, targetId: string, navSeq: number): string {
  return hexId(8, 'nav-root', browserId, targetId, navSeq)
}
/** A request hop's span: keyed by the seq of its network_request (Chromium reuses request ids across redirects). */
export function requestSpanId(browserId: string, requestSeq: number): string {
  return hexId(8, 'request', browserId, requestSeq)
}
/** A long animation frame's span: keyed by the seq of its page_long_animation_frame. */
export function longFrameSpanId(browserId: string, seq: number): string {
  return hexId(8, 'long-frame', browserId, seq)
}
export function connectionTraceId(browserId: string, connectionId: string): string {
  return hexId(16, 'cdp', browserId, connectionId)
}
export function connectionSpanId(browserId: string, connectionId: string): string {
  return hexId(8, 'cdp-conn', browserId, connectionId)
}
export function commandSpanId(browserId: string, seq: number): string {
  return hexId(8, 'cdp-cmd', browserId, seq)
}

/** W3C traceparent `00-<32 hex>-<16 hex>-<2 hex>`; undefined when malformed or all-zero. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string') return undefined
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value.trim().toLowerCase())
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return undefined
  return { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) & 1, isRemote: true }
}

/** A header value by case-insensitive name from a stored header set. */
export function headerOf(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined
  for (const [k, v] of Object.entries(headers as Record<string, unknown>))
    if (k.toLowerCase() === name && typeof v === 'string') return v
  return undefined
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined)

/** A stack trace as one text, like a console shows it. */
export function formatStack(stack: unknown): string | undefined {
  const lines: string[] = []
  let s = stack as { description?: string; callFrames?: unknown[]; parent?: unknown } | undefined
  for (let depth = 0; s && typeof s === 'object' && depth < 8; depth++) {
    if (s.description) lines.push(`-- ${s.description} --`)
    for (const f of (s.callFrames ?? []) as {
      functionName?: string
      url?: string
      lineNumber?: number
      columnNumber?: number
      original?: { source: string; line: number; column: number; name?: string }
    }[]) {
      // A source-mapped frame is shown where the code was written, under its original name.
      const o = f.original
      lines.push(
        o
          ? `    at ${o.name || f.functionName || '<anonymous>'} (${o.source}:${o.line}:${o.column})`
          : `    at ${f.functionName || '<anonymous>'} (${f.url ?? ''}:${(f.lineNumber ?? 0) + 1}:${(f.columnNumber ?? 0) + 1})`,
      )
    }
    s = s.parent as typeof s
  }
  return lines.length > 0 ? lines.join('\n') : undefined
}

/** OpenTelemetry severity numbers (log data model). */
const SEVERITY = { DEBUG: 5, INFO: 9, WARN: 13, ERROR: 17 } as const
function severityOf(env: Envelope): keyof typeof SEVERITY {
  const { type, data } = env.event
  if (type === 'console_error' || type === 'page_crashed' || type === 'network_websocket_error') return 'ERROR'
  if (type === 'console_log') {
    const level = str(data.level)
    if (level === 'error' || level === 'assert') return 'ERROR'
    if (level === 'warning' || level === 'warn') return 'WARN'
    if (level === 'debug' || level === 'verbose' || level === 'trace') return 'DEBUG'
    return 'INFO'
  }
  if (type === 'network_loading_failed' || type === 'monitor_disconnected' || type === 'system_oom_kill') return 'WARN'
  if (type === 'monitor_reconnect_failed' || type === 'monitor_init_failed' || type === 'service_crashed')
    return 'ERROR'
  return 'INFO'
}

/**
 * The attributes of one envelope: our own keys (`browser.telemetry.*`, `browser.target.*`) and the
 * semantic-convention keys where the event carries the same thing. Also used for span attributes.
 */
export function attributesOf(env: Envelope): Attributes {
  const { type, category, data } = env.event
  const a: Attributes = {
    'browser.telemetry.seq': env.seq,
    'browser.telemetry.category': category,
  }
  if (env.event.truncated) a['browser.telemetry.truncated'] = true
  if (env.event.source?.kind) a['browser.telemetry.source'] = env.event.source.kind
  const set = (key: string, v: unknown) => {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') a[key] = v
  }
  set('browser.target.id', data.target_id)
  set('browser.target.type', data.target_type)
  set('browser.frame.id', data.frame_id)
  set('browser.telemetry.nav_seq', data.nav_seq)
  set('session.id', data.session_id)
  set('url.full', data.url)
  if (category === 'network') {
    set('http.request.method', data.method)
    set('browser.request.id', data.request_id)
    if (type.startsWith('network_websocket')) set('network.protocol.name', 'websocket')
    else if (type.startsWith('network_eventsource')) set('network.protocol.name', 'http')
    else if (type === 'network_request' || type === 'network_response' || type === 'network_loading_failed')
      set('network.protocol.name', 'http')
    if (type === 'network_response' || type === 'network_websocket_handshake')
      set('http.response.status_code', data.status)
    if (type === 'network_response' && typeof data.body === 'string')
      set('http.response.body.size', Buffer.byteLength(data.body))
    if (type === 'network_request' && typeof data.post_data === 'string')
      set('http.request.body.size', Buffer.byteLength(data.post_data))
    if (type === 'network_loading_failed') set('error.type', data.error_text)
  }
  if (type === 'console_error') {
    set('exception.message', data.text)
    set('exception.stacktrace', formatStack(data.stack_trace))
    set('code.filepath', data.source_url)
    // 1-based, as the semantic conventions and every reader count lines (the event is CDP's 0-based).
    const line = num(data.line)
    set('code.lineno', line === undefined ? undefined : line + 1)
  }
  if (type === 'console_log') set('log.level', data.level)
  if (type === 'cdp_command' || type === 'cdp_connect' || type === 'cdp_disconnect') {
    set('browser.cdp.connection_id', data.connection_id)
    if (type === 'cdp_command') {
      set('rpc.system', 'cdp')
      set('rpc.method', data.method)
    }
  }
  return a
}

/** The span a log record belongs to: the request's hop or the navigation's root (when the event names them). */
export type SpanOfRecord = (env: Envelope) => SpanContext | undefined

/** Navigations remembered by `navigationSpanOf` (a tab's events mostly name its current one). */
const NAV_CONTEXTS_KEPT = 256

/**
 * The navigation root span of an event that names a target and nav_seq. Ids are hashes; the last few
 * navigations' contexts are kept, since nearly every record of a page names the same one.
 */
export function navigationSpanOf(browserId: string): SpanOfRecord {
  const kept = new Map<string, SpanContext>()
  return env => {
    const d = env.event.data
    if (typeof d.target_id !== 'string' || typeof d.nav_seq !== 'number') return undefined
    const key = `${d.target_id}\u0000${d.nav_seq}`
    let ctx = kept.get(key)
    if (!ctx) {
      if (kept.size >= NAV_CONTEXTS_KEPT) kept.clear()
      ctx = {
        traceId: navTraceId(browserId, d.target_id, d.nav_seq),
        spanId: navRootSpanId(browserId, d.target_id, d.nav_seq),
        traceFlags: 1,
      }
      kept.set(key, ctx)
    }
    return ctx
  }
}

/** Event names of the OpenTelemetry browser conventions, where one of ours is the same thing. */
const SEMCONV_EVENT_NAMES: Record<string, string> = { page_web_vital: 'browser.web_vital' }

/**
 * One LogRecord per envelope: body = data, event.name = type (or the semantic-convention name:
 * `browser.web_vital` with its attributes `name`, `value`, `delta`, `id`, `rating`), time = ts.
 */
export function logRecordOf(env: Envelope, shared: OtlpShared, spanOf?: SpanOfRecord): ReadableLogRecord {
  const time = hrTimeOf(env.event.ts)
  const severity = severityOf(env)
  const spanContext = spanOf?.(env)
  const attributes = attributesOf(env)
  const eventName = SEMCONV_EVENT_NAMES[env.event.type] ?? env.event.type
  if (env.event.type === 'page_web_vital') {
    const d = env.event.data
    for (const k of ['name', 'value', 'delta', 'id', 'rating'])
      if (typeof d[k] === 'string' || typeof d[k] === 'number') attributes[k] = d[k] as string | number
  }
  return {
    hrTime: time,
    hrTimeObserved: time,
    severityText: severity,
    severityNumber: SEVERITY[severity],
    body: env.event.data as LogBody,
    eventName,
    resource: shared.resource,
    instrumentationScope: shared.scope,
    attributes,
    droppedAttributesCount: 0,
    ...(spanContext ? { spanContext } : {}),
  }
}
