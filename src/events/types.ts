// One idea: one definition per documented event type. From each we derive the TS type,
// the JSON Schema and the category, so none of them can drift apart.
import {
  Type,
  type Static,
  type TSchema,
  type StringOptions,
  type IntegerOptions,
  type NumberOptions,
} from '@sinclair/typebox'
import {
  type Category,
  SourceSchema,
  HeadersSchema,
  StackTraceSchema,
  SOURCEMAP_FAILURES,
  PROXY_ERROR_CODES,
  STEP_ABANDON_REASONS,
  STEP_OUTCOMES,
  TRACEPARENT_PATTERN,
  InputFactsProps,
  StepProps,
  TraceParentProps,
  NavigationContextProps,
  TargetTypeSchema,
  withContext,
  plain,
} from './common.js'
// The page's performance events (layout shift, LCP, Web Vitals, long animation frames).
import { PageLayoutShiftData, PageLcpData, PageLongAnimationFrameData, PageWebVitalData } from './vitals.js'
// The captcha solver's events.
import { CaptchaChallengeResultData, CaptchaSolveResultData, CaptchaSolveStartedData } from './captcha.js'

const Str = (o?: StringOptions) => Type.String(o)
const OptStr = () => Type.Optional(Type.String())
const Int = (o?: IntegerOptions) => Type.Integer(o)
const Num = (o?: NumberOptions) => Type.Number(o)

function def<T extends string, C extends Category, D extends TSchema>(type: T, category: C, data: D) {
  const event = Type.Object(
    {
      ts: Type.Integer({ description: 'Unix time in microseconds' }),
      type: Type.Literal(type),
      category: Type.Literal(category),
      source: SourceSchema,
      data,
      truncated: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false, $id: `Event_${type}` },
  )
  return { type, category, data, event }
}

/** A response's status and headers: network_response (body received) and network_response_incomplete. */
const RESPONSE_HEAD = {
  request_id: Str(),
  method: OptStr(),
  status: Int(),
  status_text: Str(),
  headers: HeadersSchema,
  mime_type: Str(),
  resource_type: OptStr(),
}

export const EVENT_DEFS = {
  // console
  console_log: def(
    'console_log',
    'console',
    withContext({
      level: Str(),
      text: Str(),
      args: Type.Array(Str()),
      stack_trace: Type.Optional(StackTraceSchema),
    }),
  ),
  console_error: def(
    'console_error',
    'console',
    withContext({
      text: Str(),
      stack_trace: Type.Optional(StackTraceSchema),
      level: Type.Optional(Type.Literal('error')),
      args: Type.Optional(Type.Array(Str())),
      line: Type.Optional(Int()),
      column: Type.Optional(Int()),
      source_url: OptStr(),
    }),
  ),
  // A script's source map could not be loaded or used, with why; once per script (src/symbols).
  sourcemap_failed: def(
    'sourcemap_failed',
    'console',
    withContext({
      script_url: Str(),
      map_url: OptStr(),
      reason: Type.Union(SOURCEMAP_FAILURES.map(r => Type.Literal(r))),
      message: Str(),
    }),
  ),
  // network
  network_request: def(
    'network_request',
    'network',
    withContext({
      request_id: Str(),
      method: Str(),
      document_url: OptStr(),
      headers: HeadersSchema,
      resource_type: OptStr(),
      initiator_type: OptStr(),
      post_data: OptStr(),
      is_redirect: Type.Optional(Type.Boolean()),
      redirect_url: OptStr(),
      redirect_status: Type.Optional(Int({ description: 'The status of the redirect response (the previous hop)' })),
    }),
  ),
  network_response: def('network_response', 'network', withContext({ ...RESPONSE_HEAD, body: OptStr() })),
  // Headers of a response whose body never completed, once, when its request ended otherwise (events.md).
  network_response_incomplete: def(
    'network_response_incomplete',
    'network',
    withContext({
      ...RESPONSE_HEAD,
      reason: Type.Union(['failed', 'navigated', 'detached', 'timeout'].map(v => Type.Literal(v))),
    }),
  ),
  network_loading_failed: def(
    'network_loading_failed',
    'network',
    withContext({
      request_id: Str(),
      error_text: Str(),
      canceled: Type.Boolean(),
      resource_type: OptStr(),
    }),
  ),
  // A proxy failure of the browser's, beside the network_loading_failed it explains (events.md).
  proxy_error: def(
    'proxy_error',
    'network',
    withContext({
      request_id: Str(),
      code: Type.Union(PROXY_ERROR_CODES.map(c => Type.Literal(c))),
      raw_code: Str(),
      status: Int({ minimum: 100, maximum: 599 }),
      method: OptStr(),
      resource_type: OptStr(),
    }),
  ),
  network_idle: def('network_idle', 'network', withContext({})),
  // WebSocket and EventSource traffic of a page (Network domain), joined by request_id; `url` is the
  // socket's (or stream's) URL, as a request's is on network_request.
  network_websocket_created: def(
    'network_websocket_created',
    'network',
    withContext({ request_id: Str(), initiator_type: OptStr() }),
  ),
  network_websocket_handshake: def(
    'network_websocket_handshake',
    'network',
    withContext({
      request_id: Str(),
      status: Int(),
      status_text: OptStr(),
      request_headers: HeadersSchema,
      response_headers: HeadersSchema,
    }),
  ),
  network_websocket_frame: def(
    'network_websocket_frame',
    'network',
    withContext({
      request_id: Str(),
      direction: Type.Union([Type.Literal('sent'), Type.Literal('received')]),
      opcode: Int({ description: '1 text, 2 binary, 8 close, 9 ping, 10 pong' }),
      payload: Str({ description: 'Text cut to the body cap; binary frames as "[binary, N bytes]"' }),
      payload_bytes: Int({ minimum: 0, description: 'Size of the whole payload' }),
      truncated: Type.Optional(Type.Boolean({ description: 'The payload was cut to the body cap' })),
    }),
  ),
  network_websocket_closed: def('network_websocket_closed', 'network', withContext({ request_id: Str() })),
  network_websocket_error: def(
    'network_websocket_error',
    'network',
    withContext({ request_id: Str(), error_message: Str() }),
  ),
  network_eventsource_message: def(
    'network_eventsource_message',
    'network',
    withContext({
      request_id: Str(),
      event_name: Str(),
      event_id: OptStr(),
      data: Str({ description: 'Cut to the body cap' }),
      truncated: Type.Optional(Type.Boolean()),
    }),
  ),
  // page
  page_navigation: def('page_navigation', 'page', plain({ ...NavigationContextProps, parent_frame_id: OptStr() })),
  page_dom_content_loaded: def('page_dom_content_loaded', 'page', withContext({ cdp_timestamp: Num() })),
  page_load: def('page_load', 'page', withContext({ cdp_timestamp: Num() })),
  page_tab_opened: def(
    'page_tab_opened',
    'page',
    plain({
      target_id: Str(),
      target_type: TargetTypeSchema,
      url: OptStr(),
      title: OptStr(),
      opener_id: OptStr(),
    }),
  ),
  page_layout_shift: def('page_layout_shift', 'page', PageLayoutShiftData),
  page_lcp: def('page_lcp', 'page', PageLcpData),
  page_web_vital: def('page_web_vital', 'page', PageWebVitalData),
  page_long_animation_frame: def('page_long_animation_frame', 'page', PageLongAnimationFrameData),
  // The renderer of a watched page or frame crashed (Page.crash, out of memory, a kill): its context
  // as it was, and Chromium's termination status and code when the browser reports them.
  page_crashed: def(
    'page_crashed',
    'page',
    withContext({
      status: Type.Optional(Str({ description: 'Chromium termination status, e.g. crashed, oom, killed' })),
      error_code: Type.Optional(Int({ description: 'Chromium termination code' })),
    }),
  ),
  // Dialogs and downloads are only observed: the daemon never answers a dialog or moves a download.
  // A dialog's `url` is its frame's; a download's is the downloaded resource's.
  page_dialog_opened: def(
    'page_dialog_opened',
    'page',
    withContext({
      dialog_type: Type.Union(['alert', 'confirm', 'prompt', 'beforeunload'].map(v => Type.Literal(v))),
      message: Str({ description: 'Cut to 4 KiB' }),
      has_browser_handler: Type.Boolean(),
    }),
  ),
  page_dialog_closed: def(
    'page_dialog_closed',
    'page',
    withContext({
      result: Type.Boolean({ description: 'true when accepted (OK), false when dismissed' }),
      user_input: Type.Optional(Str({ description: 'What was typed into a prompt, always masked' })),
    }),
  ),
  page_download_started: def('page_download_started', 'page', withContext({ guid: Str(), suggested_filename: Str() })),
  page_download_finished: def(
    'page_download_finished',
    'page',
    withContext({
      guid: Str(),
      state: Type.Union(['completed', 'canceled'].map(v => Type.Literal(v))),
      total_bytes: Int({ minimum: 0 }),
    }),
  ),
  page_layout_settled: def('page_layout_settled', 'page', withContext({})),
  page_navigation_settled: def('page_navigation_settled', 'page', withContext({})),
  // interaction
  interaction_click: def(
    'interaction_click',
    'interaction',
    withContext({
      x: Int(),
      y: Int(),
      selector: Str(),
      tag: Str(),
      text: Str({ maxLength: 100 }),
    }),
  ),
  interaction_key: def('interaction_key', 'interaction', withContext({ key: Str(), selector: Str(), tag: Str() })),
  // Text put into a field without a key (Input.insertText, a paste, a drop): where it went, never what.
  interaction_input: def(
    'interaction_input',
    'interaction',
    withContext({ input_type: Str({ maxLength: 64 }), selector: Str(), tag: Str() }),
  ),
  interaction_scroll_settled: def(
    'interaction_scroll_settled',
    'interaction',
    withContext({
      from_x: Int(),
      from_y: Int(),
      to_x: Int(),
      to_y: Int(),
      target_selector: Str(),
    }),
  ),
  // screenshot
  monitor_screenshot: def('monitor_screenshot', 'screenshot', plain({ png: Str() })),
  // monitor
  monitor_disconnected: def('monitor_disconnected', 'monitor', plain({ reason: Type.Literal('browser_restarted') })),
  monitor_reconnected: def('monitor_reconnected', 'monitor', plain({ reconnect_duration_ms: Int() })),
  monitor_reconnect_failed: def(
    'monitor_reconnect_failed',
    'monitor',
    plain({ reason: Type.Literal('reconnect_exhausted') }),
  ),
  monitor_init_failed: def('monitor_init_failed', 'monitor', plain({ step: Str() })),
  // control
  api_call: def(
    'api_call',
    'control',
    plain({
      request_id: Str(),
      operation_id: Str(),
      status: Int(),
      duration_ms: Num(),
    }),
  ),
  // Audit: who changed the capture configuration, from what to what. Emitted (and committed) before
  // the change takes effect, so switching control itself off is never silent.
  capture_config_changed: def(
    'capture_config_changed',
    'control',
    plain({
      request_id: Str(),
      operation_id: Str(),
      token_name: Str({
        description: 'Name of the token that made the change (token-file name or sha256:<id>; never the token)',
      }),
      token_scopes: Type.Array(Str()),
      old_categories: Type.Array(Str()),
      new_categories: Type.Array(Str()),
      old_recording: Type.Optional(Type.Boolean({ description: 'Screen recording before the change' })),
      new_recording: Type.Optional(Type.Boolean({ description: 'Screen recording after the change' })),
      old_mask_typed_keys: Type.Optional(Type.Boolean({ description: 'Typed keys masked before the change' })),
      new_mask_typed_keys: Type.Optional(Type.Boolean({ description: 'Typed keys masked after the change' })),
    }),
  ),
  // connection
  // connection_id joins a disconnect to its connect when clients overlap (optional: events ingested
  // from older producers have none; the daemon's proxy always sets it).
  cdp_connect: def(
    'cdp_connect',
    'connection',
    plain({
      connection_id: Type.Optional(Str({ minLength: 1, maxLength: 128 })),
      traceparent: Type.Optional(
        Str({
          pattern: TRACEPARENT_PATTERN,
          description: "The W3C traceparent the client sent on its upgrade (the agent's span)",
        }),
      ),
    }),
  ),
  cdp_disconnect: def(
    'cdp_disconnect',
    'connection',
    plain({
      connection_id: Type.Optional(Str({ minLength: 1, maxLength: 128 })),
      duration_ms: Num(),
      message_count: Int({ minimum: 0 }),
      reason: Type.Union(
        ['client_close', 'upstream_changed', 'upstream_error', 'context_cancelled'].map(r => Type.Literal(r)),
      ),
      // Commands of the connection without a cdp_command (optional: older producers have none).
      telemetry_excluded: Type.Optional(
        Int({ minimum: 0, description: 'Not recorded by rule: the capture configuration leaves control off' }),
      ),
      telemetry_dropped: Type.Optional(
        Int({
          minimum: 0,
          description: 'Not recorded under pressure: past the unanswered-command bound, shed or over a cap',
        }),
      ),
    }),
  ),
  // One command an automation client sent through the CDP proxy, recorded when its answer came back
  // or its connection ended first. Parameters and results only with --capture-command-params.
  cdp_command: def(
    'cdp_command',
    'control',
    plain({
      connection_id: Str({ minLength: 1, maxLength: 128 }),
      id: Int(),
      method: Str({ maxLength: 256 }),
      session_id: OptStr(),
      target_id: OptStr(),
      duration_ms: Num({ minimum: 0, description: 'From the command relayed to its answer (or the connection end)' }),
      outcome: Type.Union(['ok', 'error', 'no_answer'].map(v => Type.Literal(v))),
      error_code: Type.Optional(Int()),
      error_message: OptStr(),
      request_bytes: Int({ minimum: 0 }),
      response_bytes: Type.Optional(Int({ minimum: 0 })),
      params: Type.Optional(Str({ description: 'The parameters as JSON text, redacted and cut to the cap' })),
      params_truncated: Type.Optional(Type.Boolean()),
      result: Type.Optional(Str({ description: 'The result as JSON text, redacted and cut to the cap' })),
      result_truncated: Type.Optional(Type.Boolean()),
      count: Type.Optional(
        Int({ minimum: 1, description: 'A fold of repeated ok commands of one method in one second: how many' }),
      ),
      duration_ms_p50: Type.Optional(Num({ minimum: 0 })),
      duration_ms_p90: Type.Optional(Num({ minimum: 0 })),
      // A fold's times (from its first command sent to its last answered; from then to this event).
      span_ms: Type.Optional(Num({ minimum: 0 })),
      flush_delay_ms: Type.Optional(Num({ minimum: 0 })),
      step_id: Type.Optional(Str({ description: 'The innermost agent step open when the command was sent' })),
      ...InputFactsProps,
      ...TraceParentProps,
    }),
  ),
  // An agent's own step ("log in", "open the cart"), started over HTTP or the agent's CDP socket.
  agent_step_started: def('agent_step_started', 'control', plain(StepProps)),
  agent_step_finished: def(
    'agent_step_finished',
    'control',
    plain({
      ...StepProps,
      outcome: Type.Union(STEP_OUTCOMES.map(v => Type.Literal(v))),
      error_message: OptStr(),
      abandoned_reason: Type.Optional(Type.Union(STEP_ABANDON_REASONS.map(v => Type.Literal(v)))),
      duration_ms: Num({ minimum: 0 }),
    }),
  ),
  // A performance trace taken on demand (POST /browsers/{id}/telemetry/perf-traces) ended.
  perf_trace_recorded: def(
    'perf_trace_recorded',
    'control',
    plain({
      trace_id: Str({ minLength: 1 }),
      outcome: Type.Union([Type.Literal('recorded'), Type.Literal('failed')]),
      duration_ms: Num({ minimum: 0 }),
      bytes: Int({ minimum: 0 }),
      data_loss: Type.Boolean(),
      categories: Type.Array(Type.String(), { maxItems: 100 }),
      target_id: OptStr(),
      error_message: OptStr(),
    }),
  ),
  live_view_connect: def('live_view_connect', 'connection', plain({ session_id: Str({ minLength: 1 }) })),
  live_view_disconnect: def(
    'live_view_disconnect',
    'connection',
    plain({ session_id: Str({ minLength: 1 }), duration_ms: Num({ minimum: 0 }) }),
  ),
  // captcha (published by the in-VM solver): tasks join on task_id, a visible challenge's on challenge_id.
  captcha_solve_started: def('captcha_solve_started', 'captcha', CaptchaSolveStartedData),
  captcha_solve_result: def('captcha_solve_result', 'captcha', CaptchaSolveResultData),
  captcha_challenge_result: def('captcha_challenge_result', 'captcha', CaptchaChallengeResultData),
  // system
  system_oom_kill: def(
    'system_oom_kill',
    'system',
    plain({
      pid: Int(),
      process_name: Str({ maxLength: 15 }),
      rss_kb: Int({ minimum: 0 }),
      constraint: Type.Optional(Type.Union(['none', 'memcg', 'cpuset', 'memory_policy'].map(v => Type.Literal(v)))),
      mem_free_kb: Type.Optional(Int()),
      mem_total_kb: Type.Optional(Int()),
      top_tasks: Type.Optional(
        Type.Array(plain({ name: Str(), pid: Int(), rss_kb: Int({ minimum: 0 }) }), { maxItems: 5 }),
      ),
      trigger_pid: Type.Optional(Int()),
      trigger_process_name: OptStr(),
    }),
  ),
  service_crashed: def(
    'service_crashed',
    'system',
    plain({
      phase: Type.Union(['startup', 'running', 'gave_up'].map(v => Type.Literal(v))),
      service_name: Str(),
      pid: Type.Optional(Int()),
    }),
  ),
} as const

export type EventDefs = typeof EVENT_DEFS
export type EventType = keyof EventDefs
export const EVENT_TYPES = Object.keys(EVENT_DEFS) as EventType[]

/** The data object of a given event type. */
export type EventData<T extends EventType> = Static<EventDefs[T]['data']>
/** A full stored event of one type. */
export type EventOf<T extends EventType> = Static<EventDefs[T]['event']>
/** The discriminated union of every event. */
export type TelemetryEvent = { [T in EventType]: EventOf<T> }[EventType]

export function categoryOf(type: EventType): Category {
  return EVENT_DEFS[type].category
}
export function isEventType(type: unknown): type is EventType {
  return typeof type === 'string' && Object.prototype.hasOwnProperty.call(EVENT_DEFS, type)
}

export const TelemetryEventSchema = Type.Union(
  EVENT_TYPES.map(t => EVENT_DEFS[t].event),
  { $id: 'TelemetryEvent' },
)
export const EnvelopeSchema = Type.Object(
  { seq: Type.Integer({ minimum: 1 }), event: TelemetryEventSchema },
  { additionalProperties: false, $id: 'TelemetryEventEnvelope' },
)
export interface Envelope {
  seq: number
  event: TelemetryEvent
}
