// The viewer's pure model (src/viewer/model.ts): gaps, network joins, navigations with markers and
// summaries, click-to-frame matching, filters and the deep-link round trip.
import t from 'tap'
import { urlTitle } from '../src/util/url-title.js'
import {
  fmtRequestUrl,
  buildFrames,
  buildNavigations,
  LONG_FRAMES_DRAWN,
  vitalText,
  commandSummary,
  hasRedaction,
  isRedacted,
  decodeView,
  derive,
  encodeView,
  findGaps,
  gapLabel,
  joinNetwork,
  netSummary,
  panelRows,
  pngSize,
  rowIndexAtSeq,
  type Envelope,
  type AgentRow,
  type SocketRow,
  type ViewState,
  DEFAULT_VIEW,
  dataOf,
  agentRows,
  deriveAgent,
  effectBadges,
  inSpan,
  spanOf,
  typeOptions,
  type StepRow,
} from '../src/viewer/model.js'
import { at, tenStepSession } from './helpers/agent-session.js'

let ts = 1_700_000_000_000_000
const env = (
  seq: number,
  type: string,
  category: string,
  data: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Envelope =>
  ({ seq, event: { ts: (ts += 1000), type, category, source: { kind: 'cdp' }, data, ...extra } }) as unknown as Envelope
const ctx = (nav: number, target = 'T1') => ({ target_id: target, target_type: 'page', session_id: 'S1', nav_seq: nav })
// A 2x1 PNG header (signature + IHDR) is all pngSize reads.
const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.from([0, 0, 0, 2, 0, 0, 0, 1]),
  Buffer.alloc(8),
]).toString('base64')

function session(): Envelope[] {
  return [
    env(1, 'network_request', 'network', {
      ...ctx(0),
      request_id: 'doc',
      method: 'GET',
      url: 'http://a/',
      headers: {},
    }),
    env(2, 'page_navigation', 'page', { target_id: 'T1', target_type: 'page', url: 'http://a/', frame_id: 'T1' }),
    env(3, 'console_log', 'console', { ...ctx(1), level: 'log', text: 'hello world', args: ['hello', 'world'] }),
    env(4, 'network_request', 'network', {
      ...ctx(1),
      request_id: 'r1',
      method: 'POST',
      url: 'http://a/api',
      headers: { authorization: '[REDACTED]' },
      post_data: '{"a":1}',
    }),
    env(5, 'page_dom_content_loaded', 'page', { ...ctx(1), cdp_timestamp: 1 }),
    env(6, 'network_response', 'network', {
      ...ctx(1),
      request_id: 'r1',
      status: 500,
      status_text: 'x',
      headers: { 'content-length': '12' },
      mime_type: 'application/json',
      body: '{"err":true}',
    }),
    env(7, 'page_load', 'page', { ...ctx(1), cdp_timestamp: 2 }),
    env(8, 'monitor_screenshot', 'screenshot', { png: PNG }),
    env(9, 'interaction_click', 'interaction', { ...ctx(1), x: 1, y: 0, selector: '#buy', tag: 'button', text: 'Buy' }),
    // 10..12 dropped
    env(
      13,
      'console_error',
      'console',
      { ...ctx(1), text: 'Uncaught boom' },
      { source: { kind: 'cdp', event: 'Runtime.exceptionThrown' } },
    ),
    env(14, 'network_request', 'network', {
      ...ctx(1),
      request_id: 'r2',
      method: 'GET',
      url: 'http://down/',
      headers: {},
    }),
    env(15, 'network_loading_failed', 'network', {
      ...ctx(1),
      request_id: 'r2',
      error_text: 'net::ERR_CONNECTION_REFUSED',
      canceled: false,
    }),
    env(16, 'page_layout_shift', 'page', {
      ...ctx(1),
      time: 1,
      duration: 0,
      layout_shift_details: { value: 0.25, had_recent_input: false },
    }),
    env(17, 'page_layout_shift', 'page', {
      ...ctx(1),
      time: 1,
      duration: 0,
      layout_shift_details: { value: 0.5, had_recent_input: true },
    }),
    env(18, 'page_navigation_settled', 'page', { ...ctx(1) }),
    env(19, 'page_navigation', 'page', { target_id: 'T1', target_type: 'page', url: 'http://a/two', frame_id: 'T1' }),
    env(20, 'console_log', 'console', { ...ctx(2), level: 'warning', text: 'second' }),
    env(21, 'api_call', 'control', { request_id: 'q', operation_id: 'getX', status: 200, duration_ms: 1 }),
  ]
}

t.test('gaps', async t => {
  const gaps = findGaps(session())
  t.same(gaps, [{ from: 10, to: 12, count: 3 }])
  t.equal(gapLabel(gaps[0]!), '3 events dropped (seq 10–12)')
  t.equal(gapLabel({ from: 5, to: 5, count: 1 }), '1 event dropped (seq 5)')
  t.same(findGaps([]), [])
})

t.test('network rows: request joined with its response or failure', async t => {
  const rows = joinNetwork(session())
  t.same(
    rows.map(r => r.seq),
    [1, 4, 14],
  )
  const api = netSummary(rows[1]!)
  t.same(
    { ...api, durationMs: Math.round(api.durationMs!) },
    {
      url: 'http://a/api',
      method: 'POST',
      status: 500,
      mime: 'application/json',
      size: 12,
      durationMs: 2,
      error: undefined,
      resourceType: undefined,
    },
  )
  t.equal(netSummary(rows[2]!).error, 'net::ERR_CONNECTION_REFUSED')
  t.equal(netSummary(rows[0]!).status, undefined, 'no response: pending')
  // A redirect reuses the request id: the first hop is closed by the second request.
  const redirect = joinNetwork([
    env(1, 'network_request', 'network', {
      ...ctx(1),
      request_id: 'x',
      method: 'GET',
      url: 'http://a/old',
      headers: {},
    }),
    env(2, 'network_request', 'network', {
      ...ctx(1),
      request_id: 'x',
      method: 'GET',
      url: 'http://a/new',
      headers: {},
      is_redirect: true,
    }),
    env(3, 'network_response', 'network', {
      ...ctx(1),
      request_id: 'x',
      status: 200,
      status_text: 'OK',
      headers: {},
      mime_type: 'text/html',
    }),
    env(4, 'network_response', 'network', {
      ...ctx(1),
      request_id: 'orphan',
      status: 200,
      status_text: 'OK',
      headers: {},
      mime_type: 'text/html',
      url: 'http://a/o',
    }),
  ])
  t.same(
    redirect.map(r => [r.seq, r.redirectedTo, r.response?.seq]),
    [
      [1, 'http://a/new', undefined],
      [2, undefined, 3],
      [4, undefined, 4],
    ],
  )
})

t.test('navigations: one section per (target, nav_seq) with markers and summary', async t => {
  const navs = buildNavigations(session())
  t.same(
    navs.map(n => [n.key, n.url, n.started, n.seq]),
    [
      ['T1:0', 'http://a/', false, 1],
      ['T1:1', 'http://a/', true, 2],
      ['T1:2', 'http://a/two', true, 19],
    ],
  )
  const one = navs[1]!
  t.same(Object.keys(one.markers).sort(), ['dcl', 'load', 'settled'])
  t.equal(one.markers.dcl, 3, 'DCL 3 ms after the navigation (ts steps of 1 ms)')
  t.same(
    [one.requests, one.failures, one.consoleErrors, one.cls],
    [2, 2, 1, 0.25],
    'layout shifts after input do not count',
  )
  t.equal(one.endSeq, 18, 'the window ends where the next navigation starts')
  t.equal(navs[2]!.endSeq, 21)
})

t.test('navigations: the latest vital of each metric with its rating, long frames as marks (bounded)', async t => {
  const start = env(1, 'page_navigation', 'page', {
    target_id: 'T1',
    target_type: 'page',
    url: 'http://a/',
    frame_id: 'T1',
  })
  const startMs = start.event.ts / 1000
  const vital = (seq: number, name: string, value: number, rating: string, attribution = {}) =>
    env(seq, 'page_web_vital', 'page', { ...ctx(1), name, value, rating, delta: value, id: `v6-${name}`, attribution })
  const frame = (seq: number, at: number, fn?: string) =>
    env(seq, 'page_long_animation_frame', 'page', {
      ...ctx(1),
      start_time: startMs + at,
      duration: 80,
      blocking_duration: 30,
      scripts: fn
        ? [{ source_url: 'http://a/app.js', source_function_name: fn, invoker: 'BUTTON#b.onclick', duration: 75 }]
        : [],
    })
  const events = [
    start,
    vital(2, 'TTFB', 40, 'good'),
    vital(3, 'INP', 620, 'poor', { interaction_target: '#slow' }),
    frame(4, 100, 'onSlow'),
    frame(5, 300),
    vital(6, 'INP', 700, 'poor', { interaction_target: '#slower' }),
    ...Array.from({ length: 250 }, (_, i) => frame(7 + i, 400 + i)),
  ]
  const [nav] = buildNavigations(events)
  t.same(
    Object.entries(nav!.vitals).map(([k, v]) => [k, v!.value, v!.rating, v!.seq, v!.attribution]),
    [
      ['TTFB', 40, 'good', 2, {}],
      ['INP', 700, 'poor', 6, { interaction_target: '#slower' }],
    ],
    'the latest INP wins',
  )
  t.equal(nav!.longFrameCount, 252)
  t.equal(nav!.longFrames.length, LONG_FRAMES_DRAWN, 'at most 200 drawn')
  t.same(
    nav!.longFrames.slice(0, 2).map(f => [f.seq, Math.round(f.atMs), f.durationMs, f.label]),
    [
      [4, 100, 80, 'onSlow http://a/app.js'],
      [5, 300, 80, 'no script'],
    ],
    'offset from the navigation start, labelled by the longest script',
  )
  t.equal(vitalText('CLS', 0.12345), '0.123')
  t.equal(vitalText('LCP', 1234.56), '1235 ms')
})

t.test('frames: size from the PNG header, clicks on the nearest frame', async t => {
  t.same(pngSize(PNG), { width: 2, height: 1 })
  t.equal(pngSize('not a png at all, not a png at all'), undefined)
  const shot = (seq: number, at: number) =>
    ({
      seq,
      event: {
        ts: at,
        type: 'monitor_screenshot',
        category: 'screenshot',
        source: { kind: 'cdp' },
        data: { png: PNG },
      },
    }) as unknown as Envelope
  const click = (seq: number, at: number, x: number) =>
    ({
      seq,
      event: {
        ts: at,
        type: 'interaction_click',
        category: 'interaction',
        source: { kind: 'cdp' },
        data: { x, y: 6, selector: 's', tag: 'b', text: '' },
      },
    }) as unknown as Envelope
  const frames = buildFrames(
    [shot(1, 1000), shot(3, 2000)],
    [click(2, 1300, 1), click(4, 1700, 2), click(5, 9000, 3), click(0, 0, 4)],
  )
  t.same(
    frames.map(f => [f.seq, f.width, f.height, f.clicks.map(c => c.x)]),
    [
      [1, 2, 1, [1, 4]],
      [3, 2, 1, [2, 3]],
    ],
    '300 after frame 1 -> frame 1; 700 after -> frame 2; after the last -> the last; before the first -> the first',
  )
  t.same(buildFrames([], [click(1, 1, 1)]), [])
})

t.test('panel rows: filters narrow exactly; gaps placed by seq', async t => {
  const events = session()
  const d = derive(events)
  const rows = (
    panel: Parameters<typeof panelRows>[0],
    f: Partial<{ q: string; type: string; target: string; nav: string }> = {},
  ) =>
    panelRows(
      panel,
      events,
      { q: f.q ?? '', type: f.type ?? '', target: f.target ?? '', nav: d.navs.find(n => n.key === f.nav) },
      d,
    ).map(r => (r.kind === 'gap' ? `gap${r.gap.count}` : r.seq))
  t.same(rows('console'), [3, 'gap3', 13, 20])
  t.same(rows('console', { q: 'BOOM' }), ['gap3', 13], 'case-insensitive text; the gap still shows')
  t.same(rows('console', { type: 'console_log' }), [3, 'gap3', 20])
  t.same(rows('console', { nav: 'T1:2' }), ['gap3', 20])
  t.same(rows('network'), [1, 4, 'gap3', 14])
  t.same(rows('network', { type: 'failed' }), [4, 'gap3', 14], '500 and refused')
  t.same(rows('network', { q: 'post' }), [4, 'gap3'])
  t.same(rows('network', { target: 'T2' }), ['gap3'])
  t.same(rows('interactions'), [9, 'gap3'])
  t.same(rows('filmstrip'), [8, 'gap3'])
  t.same(rows('filmstrip', { q: '#buy' }), [8, 'gap3'], 'frames with a matching click')
  t.same(rows('lane'), ['gap3', 21])
  t.same(rows('timeline'), [1, 2, 'gap3', 19])
  t.same(rows('all').length, events.length + 1)
  const all = panelRows('all', events, { q: '', type: '', target: '' }, d)
  t.equal(all[rowIndexAtSeq(all, 11)]!.seq, 13, 'a seq inside a gap lands on the next row')
})

t.test('deep link round trip; hostile fragments are bounded', async t => {
  const v: ViewState = {
    panel: 'network',
    q: 'a b&c',
    type: 'failed',
    target: 'T1',
    nav: 'T1:2',
    seq: 42,
    sel: 'action:a12',
    from: 1_700_000_000_000_001,
    to: 1_700_000_000_500_000,
  }
  t.same(decodeView('#' + encodeView(v)), v)
  t.same(decodeView('#panel=evil&seq=-1&from=1e99&to=5&sel=' + 's'.repeat(1000) + '&q=' + 'x'.repeat(10_000)), {
    panel: 'timeline',
    q: 'x'.repeat(500),
    type: '',
    target: '',
    nav: '',
    seq: 0,
    sel: 's'.repeat(300),
    from: 0,
    to: 0,
  })
  t.same(decodeView('#to=5'), { ...DEFAULT_VIEW }, 'an end without a start is no span')
  t.notMatch(encodeView(v), /token/)
})

t.test('redactions are recognised whole or inside a value', async t => {
  t.same(
    ['[redacted:8]', '[redacted:1024]', '[REDACTED]', 'x[redacted:8]', 'redacted', '[redacted:]'].map(isRedacted),
    [true, true, true, false, false, false],
  )
  t.same(['a=1&token=[redacted:8]', 'plain', '{"password":"[redacted:16]"}'].map(hasRedaction), [true, false, true])
})

t.test('agent commands, incidents on their navigation, sockets as network rows', async t => {
  const cmd = (seq: number, method: string, outcome: string, duration_ms: number, extra = {}) =>
    env(seq, 'cdp_command', 'control', {
      connection_id: 'c',
      id: seq,
      method,
      outcome,
      duration_ms,
      request_bytes: 10,
      ...extra,
    })
  const events = [
    env(1, 'page_navigation', 'page', { ...ctx(1), url: 'http://a/', frame_id: 'F', loader_id: 'L' }),
    env(2, 'page_load', 'page', { ...ctx(1), cdp_timestamp: 1 }),
    cmd(3, 'Page.navigate', 'ok', 12),
    cmd(4, 'Target.attachToTarget', 'error', 1, { error_code: -32602, error_message: 'No target' }),
    // Sent first (the client's lowest id), recorded last: the connection's end gave up on it.
    cmd(5, 'Runtime.awaitPromise', 'no_answer', 2500, { id: 1 }),
    env(6, 'page_dialog_opened', 'page', { ...ctx(1), dialog_type: 'alert', message: 'hi', has_browser_handler: true }),
    env(7, 'network_websocket_created', 'network', { ...ctx(1), request_id: 'W', url: 'ws://a/s' }),
    env(8, 'network_websocket_frame', 'network', {
      ...ctx(1),
      request_id: 'W',
      url: 'ws://a/s',
      direction: 'sent',
      opcode: 1,
      payload: 'ping',
      payload_bytes: 4,
    }),
    env(9, 'network_websocket_closed', 'network', { ...ctx(1), request_id: 'W', url: 'ws://a/s' }),
    env(10, 'page_crashed', 'page', { ...ctx(1), status: 'crashed', error_code: 5 }),
  ]
  const d = derive(events)
  const rows = (open: string[]) =>
    panelRows('agent', events, { q: '', type: '', target: '', open: new Set(open) }, d) as AgentRow[]
  t.same(
    rows([]).map(r => [r.key, r.kind, r.seq]),
    [
      ['action:a5', 'action', 5],
      ['action:a3', 'action', 3],
      ['setup', 'setup', 4],
    ],
    'the agent panel by start (the unanswered helper was sent 2.5 s before its record), the setup group last',
  )
  const commands = rows(['action:a3', 'setup', 'action:a4', 'action:a5']).filter(r => r.kind === 'cmd')
  t.same(
    commands.map(r => r.seq),
    [5, 3, 4],
  )
  t.same(
    commands.map(r => {
      const s = commandSummary((r as { env: Envelope }).env)!
      return [s.failed, s.slow, s.error]
    }),
    [
      [true, true, undefined],
      [false, false, undefined],
      [true, false, '-32602 No target'],
    ],
  )
  t.same(
    d.navs[0]!.incidents.map(i => [i.kind, i.seq, i.label]),
    [
      ['dialog', 6, 'alert: hi'],
      ['crash', 10, 'renderer crashed (crashed)'],
    ],
  )
  const net = panelRows('network', events, { q: '', type: '', target: '' }, d)
  t.same(
    net.map(r => [r.kind, r.seq]),
    [['socket', 7]],
  )
  const sock = net[0] as SocketRow
  t.same(
    sock.envelopes.map(e => e.seq),
    [7, 8, 9],
  )
  t.same(sock.socket.messages, [{ type: 'send', time: events[7]!.event.ts / 1e6, opcode: 1, data: 'ping' }])
})

t.test('the Agent panel: ten steps first, setup last; opening, selection, filters, effects', async t => {
  const events = tenStepSession().envelopes
  const data = deriveAgent(events)
  const none = { q: '', kind: '', target: '' }
  const first = agentRows(data, new Set(), none)
  t.same(
    first.map(r => r.key),
    [...Array.from({ length: 10 }, (_, i) => `step:S${i}`), 'setup'],
    'the first screen: the ten steps, then the setup group',
  )
  t.same(
    (first.slice(0, 10) as StepRow[]).map(r => [r.actions, r.failed, r.open, r.parent, r.effects.console_errors]),
    [
      [1, false, false, true, 0],
      [1, false, false, true, 0],
      [1, false, false, true, 0],
      [1, false, false, true, 1],
      [1, false, false, true, 0],
      [2, true, false, true, 0],
      [1, false, false, true, 0],
      [1, false, false, true, 0],
      [1, false, false, true, 0],
      [1, false, false, true, 0],
    ],
    'actions under each (step 5 with its nested step, failed), effects summed',
  )
  const setup = first[10]!
  t.same(
    setup.kind === 'setup' && [setup.actions.map(a => a.command_seqs), setup.commands, setup.open],
    [[[1, 2, 38]], 3, false],
    'the late setup command folded into the one setup action, collapsed',
  )
  t.same(effectBadges((first[5] as StepRow).effects), [{ kind: 'failed', label: '1 failed request' }])
  t.same(
    effectBadges({
      navigations: 1,
      requests: 9,
      failed_requests: 2,
      console_errors: 1,
      dialogs: 1,
      downloads: 2,
      crashed: true,
    }),
    [
      { kind: 'failed', label: '2 failed requests' },
      { kind: 'console', label: '1 console error' },
      { kind: 'dialog', label: '1 dialog' },
      { kind: 'download', label: '2 downloads' },
      { kind: 'crash', label: 'crashed' },
    ],
  )

  const opened = agentRows(data, new Set(['step:S5', 'step:S5a']), none)
  const five = opened.findIndex(r => r.key === 'step:S5')
  t.same(
    opened.slice(five, five + 4).map(r => [r.key, r.depth, r.kind === 'action' ? r.action.title : '']),
    [
      ['step:S5', 0, ''],
      ['action:a' + String(data.actions.find(a => a.step_id === 'S5')!.command_seqs[0]), 1, 'click #b5'],
      ['step:S5a', 1, ''],
      ['action:a' + String(data.actions.find(a => a.step_id === 'S5a')!.command_seqs[0]), 2, 'type 5 characters'],
    ],
    "a step's actions and nested steps, by start",
  )
  t.equal(opened.length, 14)

  // A deep link to a command opens everything above it.
  const typed = data.actions.find(a => a.kind === 'type')!
  const selected = agentRows(data, new Set(), none, `cmd:${typed.command_seqs[1]}`)
  t.same(
    selected.filter(r => r.open).map(r => r.key),
    ['step:S5', 'step:S5a', `action:${typed.action_id}`],
  )
  t.same(
    selected.filter(r => r.kind === 'cmd').map(r => r.seq),
    typed.command_seqs,
  )

  // Filters: by kind (the steps that hold such an action stay, with only it), by text (a step's name).
  t.same(
    agentRows(data, new Set(['step:S5', 'step:S5a']), { ...none, kind: 'type' }).map(r => r.key),
    ['step:S5', 'step:S5a', `action:${typed.action_id}`],
  )
  t.same(
    agentRows(data, new Set(), { ...none, q: 'STEP 7' }).map(r => r.key),
    ['step:S7'],
  )
  t.same(
    agentRows(data, new Set(), { ...none, q: 'insertText' }).map(r => r.key),
    ['step:S5'],
    'a command method matches its action, and so its steps',
  )
  t.same(typeOptions('agent', events, data), ['click', 'setup', 'type'])

  // The span of a step and of an action; the other panels narrowed to it.
  const s3 = first[3] as StepRow
  t.same(spanOf(s3), { from: at(4000), to: at(4900) })
  t.same(spanOf(first[9]!), { from: at(10_000), to: 0 }, 'an open step runs to the end')
  const click3 = data.actions.find(a => a.step_id === 'S3')!
  t.same(
    spanOf({ kind: 'action', action: click3 } as AgentRow),
    { from: click3.start_ts, to: data.actions.find(a => a.step_id === 'S4')!.start_ts },
    "an action's span runs to the end of its effects window",
  )
  t.equal(spanOf(setup), undefined)
  t.equal(spanOf({ kind: 'action', action: data.actions[0]! } as AgentRow), undefined, 'nor a setup action')
  const d = derive(events)
  const consoleIn = (span?: { from: number; to: number }) =>
    panelRows('console', events, { q: '', type: '', target: '', ...(span ? { span } : {}) }, d).map(r => r.seq)
  const lines = (span?: { from: number; to: number }) =>
    consoleIn(span).map(seq => String(dataOf(events.find(e => e.seq === seq)!).text))
  t.equal(consoleIn().length, 11, 'a line per step and the error')
  t.same(lines(spanOf(s3)), ['step 3 log', 'boom'], 'the lines of step 3 (its error too)')
  t.same(lines(spanOf(first[4]!)), ['step 4 log'], 'not the error in step 4’s')
  t.same(
    panelRows('interactions', events, { q: '', type: '', target: '', span: spanOf(s3)! }, d).map(r => r.seq),
    events
      .filter(e => e.event.type === 'interaction_click' && e.event.ts >= at(4000) && e.event.ts <= at(4900))
      .map(e => e.seq),
  )
  t.same(
    [inSpan(5, { span: { from: 5, to: 0 } }), inSpan(4, { span: { from: 5, to: 0 } }), inSpan(9, {})],
    [true, false, true],
  )
})

t.test("the network list's URL column: the path and query on the page's own origin", async t => {
  const page = 'http://127.0.0.1:8080/swagger/'
  t.equal(fmtRequestUrl('http://127.0.0.1:8080/swagger/dist/app.js?v=2', page), '/swagger/dist/app.js?v=2')
  t.equal(fmtRequestUrl('https://cdn.example/lib.js', page), 'cdn.example/lib.js', 'another origin keeps its host')
  t.equal(fmtRequestUrl('http://127.0.0.1:8080/a', undefined), '127.0.0.1:8080/a', 'no document: the host too')
  const data = `data:image/svg+xml;charset=utf-8,${'<svg>'.repeat(100)}`
  t.equal(fmtRequestUrl(data, page), `${data.slice(0, 48)}…`, 'a data: URL cut to its start')
  t.equal(fmtRequestUrl('blob:http://127.0.0.1:8080/1234', page), 'blob:http://127.0.0.1:8080/1234')
})

t.test('urlTitle: URLs cut to 120 characters, data: URLs to their header and 40 characters of data', async t => {
  t.equal(urlTitle('https://h/a'), 'https://h/a')
  t.equal(urlTitle(`https://h/${'a'.repeat(200)}`), `https://h/${'a'.repeat(109)}…`)
  t.equal(urlTitle(`https://h/${'a'.repeat(200)}`).length, 120)
  const data = `data:text/javascript,${'x'.repeat(10_000)}`
  t.equal(urlTitle(data), `data:text/javascript,${'x'.repeat(39)}…`)
  t.equal(urlTitle('data:text/plain,short'), 'data:text/plain,short')
  t.equal(urlTitle(`data:${'m'.repeat(300)}`), `data:${'m'.repeat(114)}…`, 'no comma: the plain bound')
  t.equal(urlTitle(`https://h/${'a'.repeat(108)}😀😀`), `https://h/${'a'.repeat(108)}…`, 'never half a surrogate pair')
})
