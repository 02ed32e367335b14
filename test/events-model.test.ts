import t from 'tap'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import {
  EVENT_DEFS,
  EVENT_TYPES,
  categoryOf,
  validateEvent,
  validateAssembledEvent,
  envelopeIssues,
  TelemetryEventSchema,
  EnvelopeSchema,
  compileCheck,
  SourceSchema,
} from '../src/events/index.js'

// The documented event types (type -> category), the system types included.
const SPEC_TABLE: Record<string, string> = {
  console_log: 'console',
  console_error: 'console',
  sourcemap_failed: 'console',
  network_request: 'network',
  network_response: 'network',
  network_loading_failed: 'network',
  network_idle: 'network',
  proxy_error: 'network', // the browser's proxy failures, beside the failure they explain
  page_navigation: 'page',
  page_dom_content_loaded: 'page',
  page_load: 'page',
  page_tab_opened: 'page',
  page_layout_shift: 'page',
  page_lcp: 'page',
  page_web_vital: 'page',
  page_long_animation_frame: 'page',
  page_layout_settled: 'page',
  page_navigation_settled: 'page',
  interaction_click: 'interaction',
  interaction_key: 'interaction',
  interaction_input: 'interaction',
  interaction_scroll_settled: 'interaction',
  monitor_screenshot: 'screenshot',
  monitor_disconnected: 'monitor',
  monitor_reconnected: 'monitor',
  monitor_reconnect_failed: 'monitor',
  monitor_init_failed: 'monitor',
  api_call: 'control',
  cdp_command: 'control',
  agent_step_started: 'control',
  agent_step_finished: 'control',
  perf_trace_recorded: 'control',
  page_crashed: 'page',
  page_dialog_opened: 'page',
  page_dialog_closed: 'page',
  page_download_started: 'page',
  page_download_finished: 'page',
  network_websocket_created: 'network',
  network_websocket_handshake: 'network',
  network_websocket_frame: 'network',
  network_websocket_closed: 'network',
  network_websocket_error: 'network',
  network_eventsource_message: 'network',
  network_response_incomplete: 'network', // the headers of a body that never completed
  cdp_connect: 'connection',
  cdp_disconnect: 'connection',
  live_view_connect: 'connection',
  live_view_disconnect: 'connection',
  captcha_solve_result: 'captcha',
  captcha_solve_started: 'captcha', // the solver's task events, as upstream has them
  captcha_challenge_result: 'captcha',
  system_oom_kill: 'system',
  service_crashed: 'system',
  capture_config_changed: 'control', // audit of capture-config changes
}

t.test('every documented type is defined with its category, and nothing else', async t => {
  t.same([...EVENT_TYPES].sort(), Object.keys(SPEC_TABLE).sort())
  for (const [type, cat] of Object.entries(SPEC_TABLE)) t.equal(categoryOf(type as never), cat, type)
  t.equal(EVENT_DEFS.page_tab_opened.category, 'page')
})

const ev = (type: string, data: unknown, extra: Record<string, unknown> = {}) => ({
  ts: 1,
  type,
  category: SPEC_TABLE[type],
  source: { kind: 'cdp' },
  data,
  ...extra,
})

t.test('schemas accept spec-shaped events and reject wrong ones', async t => {
  t.same(validateEvent(ev('console_log', { level: 'log', text: 'a', args: ['a'], nav_seq: 0, session_id: 's' })), [])
  t.not(
    validateEvent(ev('console_log', { level: 'log', text: 'a', args: ['a'], bogus: 1 })).length,
    0,
    'unknown data key',
  )
  t.not(
    validateEvent(ev('console_log', { level: 'log', text: 'a', args: ['a'] }, { category: 'network' })).length,
    0,
    'wrong category',
  )
  t.not(validateEvent(ev('page_navigation', { url: 'u', nav_seq: 1 })).length, 0, 'page_navigation carries no nav_seq')
  t.same(validateEvent(ev('page_tab_opened', { target_id: 't', target_type: 'page', url: 'about:blank' })), [])
  t.not(
    validateEvent(ev('page_tab_opened', { target_id: 't', target_type: 'page', session_id: 's' })).length,
    0,
    'tab_opened is no-context',
  )
  t.not(
    validateEvent(ev('console_log', { level: 'log', text: 'a', args: [], target_type: 'tab' })).length,
    0,
    'target_type enum',
  )
  t.same(validateEvent(ev('monitor_disconnected', { reason: 'browser_restarted' })), [])
  t.not(validateEvent(ev('monitor_disconnected', { reason: 'other' })).length, 0)
  t.same(validateEvent(ev('cdp_connect', {})), [])
  t.same(
    validateEvent(
      ev('system_oom_kill', {
        pid: 1,
        process_name: 'chromium',
        rss_kb: 10,
        constraint: 'memcg',
        top_tasks: [{ name: 'a', pid: 2, rss_kb: 3 }],
      }),
    ),
    [],
  )
  t.not(
    validateEvent(ev('system_oom_kill', { pid: 1, process_name: 'a-very-long-process-name', rss_kb: 10 })).length,
    0,
    'comm max 15',
  )
  t.same(validateEvent(ev('service_crashed', { phase: 'gave_up', service_name: 'chromium' })), [])
  t.not(
    validateEvent(
      ev('captcha_solve_result', {
        captcha_type: 'turnstile',
        status: 'success',
        duration_ms: 1,
        website_path: '/a?b=1',
      }),
    ).length,
    0,
    'no query in website_path',
  )
  t.not(
    validateEvent(ev('console_log', { level: 'log', text: 'a', args: [] }, { source: { kind: 'browser' } })).length,
    0,
    'source kind enum',
  )
  t.not(validateEvent({ ...ev('cdp_connect', {}), extra: 1 }).length, 0, 'no extra event keys')
  t.same(validateEvent(ev('nope', {})), [{ path: '/type', message: 'unknown event type "nope"' }])
})

t.test(
  "validateAssembledEvent (the pipeline's shortcut) answers exactly as validateEvent for assembled events",
  async t => {
    const cases = [
      ev('console_log', { level: 'log', text: 'a', args: ['a'], nav_seq: 0, session_id: 's' }),
      ev('console_log', { level: 'log', text: 'a', args: ['a'] }, { truncated: true }),
      ev('console_log', { level: 'log', text: 'a', args: ['a'], bogus: 1 }),
      ev('console_log', { level: 'log', text: 'a', args: [1] }),
      ev('console_log', { level: 'log', text: 'a', args: [] }, { source: { kind: 'browser' } }),
      ev('console_log', { level: 'log', text: 'a', args: [] }, { source: { kind: 'cdp', metadata: { a: 1 } } }),
      ev('console_log', { level: 'log', text: 'a', args: [] }, { ts: Number.NaN }),
      ev('console_log', { level: 'log', text: 'a', args: [] }, { ts: 1.5 }),
      ev('network_request', { request_id: 'r', method: 'GET', url: 'u', headers: { a: 'b' } }),
      ev('network_request', { request_id: 'r', method: 'GET', url: 'u', headers: { a: 2 } }),
      ev('system_oom_kill', { pid: 1, process_name: 'a-very-long-process-name', rss_kb: 10 }),
      ev('cdp_connect', {}),
    ] as Parameters<typeof validateAssembledEvent>[0][]
    let invalid = 0
    for (const e of cases) {
      const full = validateEvent(e)
      if (full.length > 0) invalid++
      t.same(validateAssembledEvent(e), full, JSON.stringify(e))
    }
    t.equal(invalid, 8, 'the invalid cases are invalid')
  },
)

t.test('compileCheck (Set for the closed-object test) answers exactly as TypeBox for every schema', async t => {
  // Per schema: a default value and mutations of it (extra keys, prototype names, each key removed or
  // given each wrong type). Each answer must equal TypeBox's own compiled check.
  const wrong: unknown[] = [null, undefined, 1, 1.5, -1, 'x', true, [], {}, ['x'], { a: 'b' }]
  let cases = 0
  let rejectedExtra = 0
  let accepted = 0
  const schemas: [string, TSchema][] = [
    ['source', SourceSchema as TSchema],
    ['envelope', EnvelopeSchema as TSchema],
  ]
  for (const [type, d] of Object.entries(EVENT_DEFS))
    schemas.push([`${type}.data`, d.data as TSchema], [`${type}.event`, d.event as TSchema])
  for (const [name, schema] of schemas) {
    const ours = compileCheck(schema)
    const typebox = TypeCompiler.Compile(schema)
    const base = Value.Create(schema) as Record<string, unknown>
    const values: unknown[] = [
      base,
      null,
      [],
      'x',
      { ...base, bogus: 1 },
      { ...base, constructor: 'x' },
      { ...base, toString: 'x' },
      Object.defineProperty({ ...base }, '__proto__', { value: 1, enumerable: true }),
    ]
    const keys = [...Object.keys(base), ...Object.keys((schema as { properties?: object }).properties ?? {})]
    for (const k of keys) {
      const { [k]: _drop, ...without } = base
      values.push(without)
      for (const w of wrong) values.push({ ...base, [k]: w })
    }
    for (const v of values) {
      cases++
      const expected = typebox.Check(v)
      if (ours(v) !== expected) t.fail(`${name}: ${JSON.stringify(v)} -> ${!expected}, TypeBox says ${expected}`)
      if (expected) accepted++
    }
    if (
      typebox.Check(base) &&
      !ours({ ...base, bogus: 1 }) &&
      (schema as { additionalProperties?: boolean }).additionalProperties === false
    )
      rejectedExtra++
  }
  t.ok(cases > 1000, `${cases} values compared`)
  t.ok(accepted > 100, `${accepted} of them valid`)
  t.ok(rejectedExtra >= EVENT_TYPES.length, `${rejectedExtra} closed schemas reject an extra key`)
})

t.test('envelope is exactly {seq, event}', async t => {
  const event = ev('cdp_connect', {})
  t.same(envelopeIssues({ seq: 1, event }), [])
  t.not(envelopeIssues({ seq: 1, event, extra: true }).length, 0)
  t.not(envelopeIssues({ seq: 0, event }).length, 0, 'seq minimum 1')
  t.same(Object.keys(EnvelopeSchema.properties).sort(), ['event', 'seq'])
  t.equal(TelemetryEventSchema.anyOf.length, EVENT_TYPES.length)
})
