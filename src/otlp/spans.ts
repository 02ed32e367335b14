// One idea: spans from the committed envelopes, in seq order: one trace per page navigation (target + nav_seq)
// with a root span from page_navigation to page_navigation_settled (or the next navigation), a child
// span per request hop (network_request -> network_response / network_loading_failed), page
// milestones, console errors, layout shifts and LCP as span events on the root, each long animation
// frame as a child span of the root (its scripts as attributes); CDP proxy commands
// as spans under one span per connection, or, when the agent gave a trace context, under its
// innermost step (or the agent's span); the agent's steps as spans of that trace. A span is
// produced when it ends. A request that carried a W3C traceparent header links to that trace.
//
// State is bounded (open navigations and requests are capped; the oldest is ended early, marked
// `browser.telemetry.incomplete`). Ids are deterministic, so spans produced again after a restart
// or a re-send are the same spans.
import { SpanKind, SpanStatusCode, type Attributes, type HrTime, type Link } from '@opentelemetry/api'
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base'
import {
  attributesOf,
  commandSpanId,
  connectionSpanId,
  connectionTraceId,
  formatStack,
  headerOf,
  hrTimeOf,
  longFrameSpanId,
  navRootSpanId,
  navTraceId,
  parseTraceparent,
  requestSpanId,
  type Envelope,
  type OtlpShared,
} from './model.js'
import type { SpanContext } from '@opentelemetry/api'

const MAX_OPEN_NAVS = 1000
const MAX_OPEN_REQUESTS = 10_000
const MAX_EVENTS_PER_NAV = 1000

interface OpenNav {
  traceId: string
  spanId: string
  navSeq: number
  startTs: number
  url?: string
  events: TimedEvent[]
  droppedEvents: number
  attributes: Attributes
}

interface OpenRequest {
  traceId: string
  spanId: string
  parentSpanId: string
  startTs: number
  attributes: Attributes
  links: Link[]
  name: string
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined)

export class SpanBuilder {
  private readonly navs = new Map<string, OpenNav>()
  private readonly requests = new Map<string, OpenRequest>()
  /** The newest nav_seq each target's events named (bounded: cleared when it grows past its cap). */
  private readonly lastNavSeq = new Map<string, number>()
  /** Ended early to stay within the bounds. */
  evicted = 0

  constructor(private readonly shared: OtlpShared) {}

  get openSpans(): number {
    return this.navs.size + this.requests.size
  }

  /** The span an event belongs to, for log correlation: its request hop, else its navigation's root. */
  spanOf(env: Envelope): SpanContext | undefined {
    const d = env.event.data
    const target = str(d.target_id)
    if (!target) return undefined
    const rid = str(d.request_id)
    const req = rid ? this.requests.get(`${target}\u0000${rid}`) : undefined
    if (req) return { traceId: req.traceId, spanId: req.spanId, traceFlags: 1 }
    const navSeq = num(d.nav_seq) ?? this.navs.get(target)?.navSeq
    if (navSeq === undefined) return undefined
    const b = this.shared.browserId
    return { traceId: navTraceId(b, target, navSeq), spanId: navRootSpanId(b, target, navSeq), traceFlags: 1 }
  }

  /** What each event type adds; a Map, so a type named like an Object.prototype key finds nothing. */
  private readonly feeders = new Map<string, (env: Envelope, out: ReadableSpan[]) => void>([
    ['page_navigation', (e, o) => this.onNavigation(e, o)],
    ['page_navigation_settled', (e, o) => this.onNavigationSettled(e, o)],
    ['page_dom_content_loaded', e => this.onMilestone(e)],
    ['page_load', e => this.onMilestone(e)],
    ['console_error', e => this.onConsoleError(e)],
    ['page_layout_shift', e => this.onLayoutShift(e)],
    ['page_lcp', e => this.onLcp(e)],
    ['page_long_animation_frame', (e, o) => this.onLongAnimationFrame(e, o)],
    ['network_request', (e, o) => this.onRequest(e, o)],
    ['network_response', (e, o) => this.onRequestEnd(e, o)],
    ['network_loading_failed', (e, o) => this.onRequestEnd(e, o)],
    ['cdp_command', (e, o) => this.onCdpCommand(e, o)],
    ['agent_step_finished', (e, o) => this.onStepFinished(e, o)],
    ['cdp_disconnect', (e, o) => this.onCdpDisconnect(e, o)],
  ])

  /** Feeds one envelope (in seq order); returns the spans it ended. */
  feed(env: Envelope): ReadableSpan[] {
    const out: ReadableSpan[] = []
    const d = env.event.data
    const target = str(d.target_id)
    const named = num(d.nav_seq)
    if (target && named !== undefined && named > (this.lastNavSeq.get(target) ?? -1)) {
      if (this.lastNavSeq.size >= MAX_OPEN_NAVS * 4 && !this.lastNavSeq.has(target)) this.lastNavSeq.clear()
      this.lastNavSeq.set(target, named)
    }
    this.feeders.get(env.event.type)?.(env, out)
    return out
  }

  private onNavigation(env: Envelope, out: ReadableSpan[]): void {
    const { ts, data: d } = env.event
    const target = str(d.target_id)
    if (!target || d.parent_frame_id !== undefined) return
    const prev = this.navs.get(target)
    // page_navigation carries no nav_seq: it starts the epoch after the last one this target's events named.
    const navSeq = num(d.nav_seq) ?? (this.lastNavSeq.get(target) ?? 0) + 1
    this.lastNavSeq.set(target, navSeq)
    if (prev) {
      if (prev.navSeq === navSeq) return
      out.push(this.endNav(target, prev, ts, 'next_navigation'))
    }
    this.openNav(target, navSeq, ts, env)
  }

  private onNavigationSettled(env: Envelope, out: ReadableSpan[]): void {
    const { ts, data: d } = env.event
    const target = str(d.target_id)
    const nav = target ? this.navs.get(target) : undefined
    if (target && nav && (num(d.nav_seq) ?? nav.navSeq) === nav.navSeq)
      out.push(this.endNav(target, nav, ts, 'settled'))
  }

  private onMilestone(env: Envelope): void {
    this.navEvent(env, env.event.type === 'page_load' ? 'load' : 'DOMContentLoaded', {
      'browser.telemetry.seq': env.seq,
    })
  }

  private onConsoleError(env: Envelope): void {
    const d = env.event.data
    this.navEvent(env, 'exception', {
      'exception.message': str(d.text) ?? '',
      ...(formatStack(d.stack_trace) ? { 'exception.stacktrace': formatStack(d.stack_trace)! } : {}),
      'browser.telemetry.seq': env.seq,
    })
  }

  private onLayoutShift(env: Envelope): void {
    const d = env.event.data
    this.navEvent(env, 'layout_shift', {
      ...(num(d.time) !== undefined ? { 'browser.layout_shift.time': num(d.time)! } : {}),
      ...(num(d.duration) !== undefined ? { 'browser.layout_shift.duration': num(d.duration)! } : {}),
      ...(d.layout_shift_details !== undefined
        ? { 'browser.layout_shift.details': JSON.stringify(d.layout_shift_details) }
        : {}),
      'browser.telemetry.seq': env.seq,
    })
  }

  private onLcp(env: Envelope): void {
    const d = env.event.data
    this.navEvent(env, 'largest_contentful_paint', {
      ...(num(d.time) !== undefined ? { 'browser.lcp.time': num(d.time)! } : {}),
      ...(d.lcp_details !== undefined ? { 'browser.lcp.details': JSON.stringify(d.lcp_details) } : {}),
      'browser.telemetry.seq': env.seq,
    })
  }

  private onLongAnimationFrame(env: Envelope, out: ReadableSpan[]): void {
    const d = env.event.data
    const target = str(d.target_id)
    const navSeq = num(d.nav_seq)
    const start = num(d.start_time)
    const duration = num(d.duration)
    if (!target || navSeq === undefined || start === undefined || duration === undefined) return
    out.push(this.longFrameSpan(env, target, navSeq, start, duration))
  }

  private onRequest(env: Envelope, out: ReadableSpan[]): void {
    const { ts, data: d } = env.event
    const target = str(d.target_id)
    const b = this.shared.browserId
    const rid = str(d.request_id)
    if (!target || !rid) return
    const key = `${target}\u0000${rid}`
    const prev = this.requests.get(key)
    // A redirect re-uses the request id: the previous hop ends where the next one starts.
    if (prev) out.push(this.endRequest(key, prev, ts, { 'browser.request.redirected': true }, undefined))
    const navSeq = num(d.nav_seq) ?? this.navs.get(target)?.navSeq ?? 0
    const links: Link[] = []
    const parent = parseTraceparent(headerOf(d.headers, 'traceparent'))
    if (parent) links.push({ context: parent, attributes: { 'browser.link.source': 'traceparent' } })
    const method = str(d.method) ?? 'GET'
    if (this.requests.size >= MAX_OPEN_REQUESTS) {
      const [oldKey, old] = this.requests.entries().next().value as [string, OpenRequest]
      this.evicted++
      out.push(this.endRequest(oldKey, old, ts, { 'browser.telemetry.incomplete': true }, undefined))
    }
    this.requests.set(key, {
      traceId: navTraceId(b, target, navSeq),
      spanId: requestSpanId(b, env.seq),
      parentSpanId: navRootSpanId(b, target, navSeq),
      startTs: ts,
      attributes: attributesOf(env),
      links,
      name: method,
    })
  }

  /** network_response and network_loading_failed end the hop. */
  private onRequestEnd(env: Envelope, out: ReadableSpan[]): void {
    const { type, ts, data: d } = env.event
    const target = str(d.target_id)
    const rid = str(d.request_id)
    const key = `${target}\u0000${rid}`
    const req = target && rid ? this.requests.get(key) : undefined
    if (!req) return
    const extra: Attributes = {}
    const status = num(d.status)
    if (type === 'network_response' && status !== undefined) extra['http.response.status_code'] = status
    if (type === 'network_response' && typeof d.body === 'string')
      extra['http.response.body.size'] = Buffer.byteLength(d.body)
    if (typeof d.mime_type === 'string') extra['browser.response.mime_type'] = d.mime_type
    if (type === 'network_loading_failed') {
      extra['error.type'] = str(d.error_text) ?? 'failed'
      if (d.canceled === true) extra['browser.request.canceled'] = true
    }
    const failed = type === 'network_loading_failed' || (status !== undefined && status >= 500)
    out.push(this.endRequest(key, req, ts, extra, failed ? (str(d.error_text) ?? `HTTP ${status}`) : undefined))
  }

  private onCdpCommand(env: Envelope, out: ReadableSpan[]): void {
    const { ts, data: d } = env.event
    const b = this.shared.browserId
    const conn = str(d.connection_id)
    if (!conn) return
    const duration = Math.max(0, Math.round((num(d.duration_ms) ?? 0) * 1000))
    const attrs = attributesOf(env)
    for (const k of ['outcome', 'error_code', 'error_message', 'count', 'request_bytes', 'response_bytes'])
      if (typeof d[k] === 'string' || typeof d[k] === 'number') attrs[`browser.cdp.${k}`] = d[k]
    if (typeof d.step_id === 'string') attrs['browser.step.id'] = d.step_id
    // In the agent's trace (under its innermost step, or the agent's span) when the proxy knew one.
    const traced = typeof d.trace_id === 'string' && typeof d.parent_span_id === 'string'
    out.push(
      this.span({
        name: str(d.method) ?? 'cdp_command',
        kind: SpanKind.CLIENT,
        traceId: traced ? (d.trace_id as string) : connectionTraceId(b, conn),
        spanId: commandSpanId(b, env.seq),
        parentSpanId: traced ? (d.parent_span_id as string) : connectionSpanId(b, conn),
        start: ts - duration,
        end: ts,
        attributes: attrs,
        error: d.outcome === 'ok' ? undefined : (str(d.error_message) ?? str(d.outcome)),
      }),
    )
  }

  private onStepFinished(env: Envelope, out: ReadableSpan[]): void {
    const { ts, data: d } = env.event
    const traceId = str(d.trace_id)
    const spanId = str(d.span_id)
    if (!traceId || !spanId) return
    const duration = Math.max(0, Math.round((num(d.duration_ms) ?? 0) * 1000))
    const attrs = attributesOf(env)
    for (const k of ['step_id', 'parent_step_id', 'connection_id', 'via', 'outcome', 'abandoned_reason'])
      if (typeof d[k] === 'string') attrs[`browser.step.${k === 'step_id' ? 'id' : k}`] = d[k]
    const own = d.attributes as Record<string, string | number | boolean> | undefined
    if (own) for (const [k, v] of Object.entries(own)) attrs[`browser.step.attributes.${k}`] = v
    out.push(
      this.span({
        name: str(d.name) ?? 'agent_step',
        kind: SpanKind.INTERNAL,
        traceId,
        spanId,
        parentSpanId: str(d.parent_span_id),
        start: ts - duration,
        end: ts,
        attributes: attrs,
        error:
          d.outcome === 'error'
            ? (str(d.error_message) ?? 'error')
            : d.outcome === 'abandoned'
              ? `abandoned (${str(d.abandoned_reason) ?? 'unknown'})`
              : undefined,
      }),
    )
  }

  private onCdpDisconnect(env: Envelope, out: ReadableSpan[]): void {
    const { ts, data: d } = env.event
    const conn = str(d.connection_id)
    if (!conn) return
    const b = this.shared.browserId
    const duration = Math.max(0, Math.round((num(d.duration_ms) ?? 0) * 1000))
    const attrs = attributesOf(env)
    if (typeof d.message_count === 'number') attrs['browser.cdp.message_count'] = d.message_count
    if (typeof d.reason === 'string') attrs['browser.cdp.reason'] = d.reason
    out.push(
      this.span({
        name: 'cdp_connection',
        kind: SpanKind.SERVER,
        traceId: connectionTraceId(b, conn),
        spanId: connectionSpanId(b, conn),
        start: ts - duration,
        end: ts,
        attributes: attrs,
      }),
    )
  }

  /** A long animation frame: a child of its navigation's root, timed by the frame (epoch ms in the event). */
  private longFrameSpan(
    env: Envelope,
    target: string,
    navSeq: number,
    startMs: number,
    durationMs: number,
  ): ReadableSpan {
    const b = this.shared.browserId
    const d = env.event.data
    const attrs = attributesOf(env)
    attrs['browser.long_animation_frame.blocking_duration'] = num(d.blocking_duration) ?? 0
    const scripts = Array.isArray(d.scripts) ? (d.scripts as Record<string, unknown>[]) : []
    const top = scripts[0]
    if (top) {
      if (typeof top.source_url === 'string') attrs['code.filepath'] = top.source_url
      if (typeof top.source_function_name === 'string') attrs['code.function'] = top.source_function_name
      if (typeof top.invoker === 'string') attrs['browser.long_animation_frame.invoker'] = top.invoker
      if (typeof top.invoker_type === 'string') attrs['browser.long_animation_frame.invoker_type'] = top.invoker_type
    }
    if (scripts.length > 0) attrs['browser.long_animation_frame.scripts'] = JSON.stringify(scripts)
    const start = Math.round(startMs * 1000)
    return this.span({
      name: 'long_animation_frame',
      kind: SpanKind.INTERNAL,
      traceId: navTraceId(b, target, navSeq),
      spanId: longFrameSpanId(b, env.seq),
      parentSpanId: navRootSpanId(b, target, navSeq),
      start,
      end: start + Math.round(durationMs * 1000),
      attributes: attrs,
    })
  }

  private openNav(target: string, navSeq: number, ts: number, env: Envelope): void {
    const b = this.shared.browserId
    if (this.navs.size >= MAX_OPEN_NAVS) {
      // Never grows past the bound: the oldest open navigation is dropped without a span.
      const oldest = this.navs.keys().next().value as string
      this.navs.delete(oldest)
      this.evicted++
    }
    this.navs.set(target, {
      traceId: navTraceId(b, target, navSeq),
      spanId: navRootSpanId(b, target, navSeq),
      navSeq,
      startTs: ts,
      url: str(env.event.data.url),
      events: [],
      droppedEvents: 0,
      attributes: { ...attributesOf(env), 'browser.telemetry.nav_seq': navSeq },
    })
  }

  private navEvent(env: Envelope, name: string, attributes: Attributes): void {
    const target = str(env.event.data.target_id)
    const nav = target ? this.navs.get(target) : undefined
    if (!nav) return
    const navSeq = num(env.event.data.nav_seq)
    if (navSeq !== undefined && navSeq !== nav.navSeq) return
    if (nav.events.length >= MAX_EVENTS_PER_NAV) {
      nav.droppedEvents++
      return
    }
    nav.events.push({ name, time: hrTimeOf(env.event.ts), attributes })
  }

  private endNav(target: string, nav: OpenNav, ts: number, endedBy: string): ReadableSpan {
    this.navs.delete(target)
    return this.span({
      name: 'page_navigation',
      kind: SpanKind.INTERNAL,
      traceId: nav.traceId,
      spanId: nav.spanId,
      start: nav.startTs,
      end: ts,
      attributes: { ...nav.attributes, 'browser.navigation.ended_by': endedBy },
      events: nav.events,
      droppedEvents: nav.droppedEvents,
    })
  }

  private endRequest(
    key: string,
    req: OpenRequest,
    ts: number,
    extra: Attributes,
    error: string | undefined,
  ): ReadableSpan {
    this.requests.delete(key)
    return this.span({
      name: req.name,
      kind: SpanKind.CLIENT,
      traceId: req.traceId,
      spanId: req.spanId,
      parentSpanId: req.parentSpanId,
      start: req.startTs,
      end: ts,
      attributes: { ...req.attributes, ...extra },
      links: req.links,
      error,
    })
  }

  private span(s: {
    name: string
    kind: SpanKind
    traceId: string
    spanId: string
    parentSpanId?: string
    start: number
    end: number
    attributes: Attributes
    events?: TimedEvent[]
    droppedEvents?: number
    links?: Link[]
    error?: string
  }): ReadableSpan {
    const ctx = { traceId: s.traceId, spanId: s.spanId, traceFlags: 1 }
    const end = Math.max(s.end, s.start)
    const durationUs = end - s.start
    const duration: HrTime = [Math.floor(durationUs / 1e6), (durationUs % 1e6) * 1000]
    return {
      name: s.name,
      kind: s.kind,
      spanContext: () => ctx,
      ...(s.parentSpanId ? { parentSpanContext: { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: 1 } } : {}),
      startTime: hrTimeOf(s.start),
      endTime: hrTimeOf(end),
      status: s.error ? { code: SpanStatusCode.ERROR, message: s.error } : { code: SpanStatusCode.UNSET },
      attributes: s.attributes,
      links: s.links ?? [],
      events: s.events ?? [],
      duration,
      ended: true,
      resource: this.shared.resource,
      instrumentationScope: this.shared.scope,
      droppedAttributesCount: 0,
      droppedEventsCount: s.droppedEvents ?? 0,
      droppedLinksCount: 0,
    }
  }
}
