// The actions module (src/actions) over hand-built sessions: every kind, setup folded with a late
// setup command, effects windows (a navigate's ends at its settle), folded commands, failures,
// older recordings without input fields, and steps with nesting.
import t from 'tap'
import { deriveActions, ActionBuilder, noEffects, roleOf, stepsOf, pathOf, type Action } from '../src/actions/index.js'
import { at, SessionBuilder, shopSession as shop } from './helpers/agent-session.js'
import { LOAD_MAX_US } from '../src/actions/page.js'

const none = noEffects()
const fx = (o: Partial<Action['effects']>) => ({ ...none, ...o })

t.test('a Playwright-like session: every kind, titles, times, seqs and effects', async t => {
  const actions = deriveActions(shop().envelopes)
  const base = { connection_id: 'C1', outcome: 'ok' }
  t.same(actions, [
    {
      ...base,
      action_id: 'a1',
      kind: 'setup',
      title: 'set up (2 commands)',
      start_ts: at(9),
      end_ts: at(12),
      command_seqs: [1, 2],
      effects: none,
    },
    {
      ...base,
      action_id: 'a3',
      kind: 'setup',
      title: 'set up (4 commands)',
      target_id: 'T1',
      start_ts: at(18),
      end_ts: at(150),
      command_seqs: [3, 4, 5, 11],
      effects: none,
      effects_end_ts: at(95),
    },
    {
      ...base,
      action_id: 'a7',
      kind: 'navigate',
      title: 'go to /checkout?step=1',
      target_id: 'T1',
      start_ts: at(95),
      end_ts: at(105),
      command_seqs: [7],
      effects: fx({ navigations: 1, requests: 1 }),
      effects_end_ts: at(130),
    },
    {
      ...base,
      action_id: 'a12',
      kind: 'click',
      title: 'click #buy',
      target_id: 'T1',
      start_ts: at(200),
      end_ts: at(217),
      command_seqs: [12, 13, 14, 15, 16, 18],
      effects: fx({ requests: 1, failed_requests: 1, console_errors: 1 }),
      effects_end_ts: at(297),
    },
    {
      ...base,
      action_id: 'a22',
      kind: 'type',
      title: 'type 12 characters',
      target_id: 'T1',
      start_ts: at(297),
      end_ts: at(305),
      command_seqs: [22, 23],
      effects: none,
      effects_end_ts: at(399),
    },
    {
      ...base,
      action_id: 'a24',
      kind: 'press',
      title: 'press Enter',
      target_id: 'T1',
      start_ts: at(399),
      end_ts: at(402),
      command_seqs: [24, 26],
      effects: fx({ failed_requests: 1, dialogs: 1 }),
      effects_end_ts: at(495),
    },
    {
      ...base,
      action_id: 'a29',
      kind: 'evaluate',
      title: 'evaluate',
      target_id: 'T1',
      start_ts: at(495),
      end_ts: at(501),
      command_seqs: [29, 30],
      effects: none,
      effects_end_ts: at(1980),
    },
    {
      ...base,
      action_id: 'a31',
      kind: 'screenshot',
      title: 'take a screenshot',
      target_id: 'T1',
      start_ts: at(1980),
      end_ts: at(2000),
      command_seqs: [31],
      effects: none,
      effects_end_ts: at(2099),
    },
    {
      ...base,
      action_id: 'a32',
      kind: 'other',
      title: 'Network.getResponseBody',
      target_id: 'T1',
      outcome: 'error',
      start_ts: at(2099),
      end_ts: at(2100),
      command_seqs: [32],
      effects: none,
      effects_end_ts: at(2999),
    },
    {
      ...base,
      action_id: 'a33',
      kind: 'scroll',
      title: 'scroll html',
      target_id: 'T1',
      start_ts: at(2999),
      end_ts: at(3000),
      command_seqs: [33],
      effects: fx({ downloads: 1, crashed: true }),
    },
  ])
})

t.test('the builder fed one envelope at a time equals deriveActions, and keeps a small record of each', async t => {
  const envs = shop().envelopes
  const b = new ActionBuilder()
  for (const e of envs) b.add(e)
  t.equal(b.size, envs.length, 'every envelope of this session matters to actions')
  t.same(b.finish(), deriveActions(envs))
  const b2 = new ActionBuilder()
  b2.add({
    seq: 1,
    event: {
      ts: at(0),
      type: 'api_call',
      category: 'control',
      source: { kind: 'kernel_api' },
      data: { request_id: 'r', operation_id: 'x', status: 200, duration_ms: 1 },
    },
  })
  b2.add({
    seq: 2,
    event: {
      ts: at(1),
      type: 'console_log',
      category: 'console',
      source: { kind: 'cdp' },
      data: { level: 'error', text: 'no target', args: [] },
    },
  })
  t.equal(b2.size, 0, 'events actions never read, and reports without a target, are not kept')
  t.same(b2.finish(), [])
})

t.test('folded commands are one command; a helper after an action stays with it', async t => {
  const s = new SessionBuilder()
  s.cmd(1000, 'Runtime.callFunctionOn') // 1
  s.cmd(1100, 'Input.dispatchMouseEvent', { input_type: 'mousePressed' }) // 2
  s.cmd(1102, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased' }) // 3
  // The proxy folded 25 answers of one second into one record, emitted when the second was over.
  s.cmd(1900, 'DOM.getContentQuads', { count: 25, dur: 2, duration_ms_p50: 1, duration_ms_p90: 2 }) // 4
  s.cmd(5000, 'Runtime.callFunctionOn', { count: 30, dur: 4 }) // 5: no input follows within 1 s
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.kind, a.title, a.command_seqs, a.start_ts, a.end_ts]),
    [
      ['click', 'click', [1, 2, 3, 4], at(999), at(1900)],
      ['evaluate', 'evaluate', [5], at(4996), at(5000)],
    ],
  )
})

t.test("script calls between two inputs: the click's tail, the next input's checks, evaluates between", async t => {
  const click = (s: SessionBuilder, ms: number) => {
    s.cmd(ms, 'Input.dispatchMouseEvent', { input_type: 'mousePressed' })
    s.cmd(ms + 1, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased' })
  }
  // A script that goes straight on: the hit-target check and its release right after the click,
  // a pause, then the fill's checks.
  const tight = new SessionBuilder()
  click(tight, 100) // 1 2
  tight.cmd(103, 'Runtime.callFunctionOn', { dur: 1 }) // 3
  tight.cmd(105, 'Runtime.releaseObject', { dur: 1 }) // 4
  tight.cmd(150, 'Runtime.callFunctionOn', { dur: 1 }) // 5
  tight.cmd(152, 'Runtime.callFunctionOn', { dur: 1 }) // 6
  tight.cmd(154, 'Input.insertText', { input_chars: 3 }) // 7
  tight.cmd(156, 'Runtime.releaseObject', { dur: 1 }) // 8: the fill's own tail
  tight.cmd(158, 'Runtime.callFunctionOn', { dur: 1 }) // 9
  tight.cmd(160, 'Input.dispatchKeyEvent', { input_type: 'keyDown', input_key: 'Tab' }) // 10
  t.same(
    deriveActions(tight.envelopes).map(a => [a.kind, a.command_seqs]),
    [
      ['click', [1, 2, 3, 4]],
      ['type', [5, 6, 7, 8]],
      ['press', [9, 10]],
    ],
  )
  // An agent that thinks between actions: tails and checks are apart, an evaluate sits between.
  const slow = new SessionBuilder()
  click(slow, 100) // 1 2
  slow.cmd(103, 'Runtime.callFunctionOn', { dur: 1 }) // 3
  slow.cmd(104, 'Runtime.releaseObject', { dur: 0.5 }) // 4
  slow.cmd(3000, 'Runtime.evaluate', { dur: 2 }) // 5
  slow.cmd(3001, 'Runtime.releaseObject', { dur: 0.5 }) // 6
  slow.cmd(6000, 'Runtime.callFunctionOn', { dur: 1 }) // 7
  click(slow, 6002) // 8 9
  t.same(
    deriveActions(slow.envelopes).map(a => [a.kind, a.command_seqs]),
    [
      ['click', [1, 2, 3, 4]],
      ['evaluate', [5, 6]],
      ['click', [7, 8, 9]],
    ],
  )
})

t.test('failures: an error or an unanswered command makes the action an error', async t => {
  const s = new SessionBuilder()
  s.cmd(10, 'Runtime.callFunctionOn', { outcome: 'error', error_code: -32000, error_message: 'Node is detached' }) // 1
  s.cmd(12, 'Input.dispatchMouseEvent', { input_type: 'mousePressed' }) // 2
  s.cmd(13, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased' }) // 3
  s.cmd(5000, 'Page.navigate', { outcome: 'no_answer', dur: 3000 }) // 4
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.kind, a.title, a.outcome, a.command_seqs]),
    [
      ['click', 'click', 'error', [1, 2, 3]],
      ['navigate', 'navigate', 'error', [4]],
    ],
  )
})

t.test('keys: typing strokes, a double-click, modifiers, and strokes split by steps and pauses', async t => {
  const s = new SessionBuilder()
  s.event('agent_step_started', 4990, { step_id: 'S1', name: 'fill form', via: 'http' }) // 1
  for (const [i, ms] of [5010, 5020, 5030].entries()) {
    s.cmd(ms, 'Input.dispatchKeyEvent', { input_type: 'keyDown', input_chars: 1, step_id: 'S1' }) // 2 5 8
    s.page('interaction_key', ms + 1, { key: 'abc'[i], selector: '#q', tag: 'INPUT' }) // 3 6 9
    s.cmd(ms + 2, 'Input.dispatchKeyEvent', { input_type: 'keyUp', step_id: 'S1' }) // 4 7 10
  }
  s.event('agent_step_started', 5040, { step_id: 'S2', name: 'submit', parent_step_id: 'S1', via: 'http' }) // 11
  s.cmd(5050, 'Input.dispatchKeyEvent', { input_type: 'keyDown', input_chars: 1, step_id: 'S2' }) // 12
  s.page('interaction_key', 5051, { key: 'x', selector: '#q', tag: 'INPUT' }) // 13
  s.cmd(5052, 'Input.dispatchKeyEvent', { input_type: 'keyUp', step_id: 'S2' }) // 14
  // Three seconds later, the same step: another action.
  s.cmd(8052, 'Input.insertText', { input_chars: 4, step_id: 'S2' }) // 15
  s.cmd(8060, 'Input.dispatchKeyEvent', { input_type: 'keyDown', input_key: 'Control', step_id: 'S2' }) // 16
  s.cmd(8061, 'Input.dispatchKeyEvent', { input_type: 'keyDown', input_chars: 1, step_id: 'S2' }) // 17
  s.cmd(8062, 'Input.dispatchKeyEvent', { input_type: 'keyUp', step_id: 'S2' }) // 18
  s.cmd(8063, 'Input.dispatchKeyEvent', { input_type: 'keyUp', input_key: 'Control', step_id: 'S2' }) // 19
  s.cmd(8070, 'Input.dispatchKeyEvent', { input_type: 'rawKeyDown', input_key: 'Tab', step_id: 'S2' }) // 20
  s.cmd(8071, 'Input.dispatchKeyEvent', { input_type: 'keyUp', input_key: 'Tab', step_id: 'S2' }) // 21
  s.event('agent_step_finished', 8080, {
    step_id: 'S2',
    name: 'submit',
    parent_step_id: 'S1',
    via: 'http',
    outcome: 'ok',
    duration_ms: 3040,
  }) // 22
  s.cmd(9000, 'Input.dispatchMouseEvent', { input_type: 'mouseMoved' }) // 23
  s.cmd(9001, 'Input.dispatchMouseEvent', { input_type: 'mousePressed' }) // 24
  s.cmd(9002, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased' }) // 25
  s.page('interaction_click', 9003, { x: 1, y: 1, selector: '#d', tag: 'DIV', text: '' }) // 26
  s.cmd(9004, 'Input.dispatchMouseEvent', { input_type: 'mousePressed' }) // 27
  s.cmd(9005, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased' }) // 28
  s.page('interaction_click', 9006, { x: 1, y: 1, selector: '#d', tag: 'DIV', text: '' }) // 29
  s.cmd(9500, 'Input.dispatchMouseEvent', { input_type: 'mouseMoved' }) // 30: a hover
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.kind, a.title, a.step_id ?? null, a.command_seqs]),
    [
      ['type', 'type 3 characters into #q', 'S1', [2, 4, 5, 7, 8, 10]],
      ['type', 'type 1 character into #q', 'S2', [12, 14]],
      ['type', 'type 4 characters', 'S2', [15]],
      ['press', 'press Control+character', 'S2', [16, 17, 18, 19]],
      ['press', 'press Tab', 'S2', [20, 21]],
      ['click', 'double-click #d', null, [23, 24, 25, 27, 28]],
      ['other', 'move the mouse', null, [30]],
    ],
  )
  const text = JSON.stringify(actions)
  t.notOk(/"abc"|"a"|"b"|"x"/.test(text.replace(/"a\d+"/g, '')), 'no typed character appears anywhere')
})

t.test('recordings without input fields: the page reports decide the kind', async t => {
  const s = new SessionBuilder()
  s.cmd(10, 'Input.dispatchMouseEvent') // 1
  s.cmd(11, 'Input.dispatchMouseEvent') // 2
  s.cmd(12, 'Input.dispatchMouseEvent') // 3
  s.page('interaction_click', 13, { x: 1, y: 1, selector: '#ok', tag: 'BUTTON', text: 'OK' }) // 4
  s.cmd(100, 'Runtime.callFunctionOn') // 5
  s.cmd(101, 'Input.insertText') // 6
  s.cmd(200, 'Input.dispatchKeyEvent') // 7
  s.page('interaction_key', 200.5, { key: 'Enter', selector: '#q', tag: 'INPUT' }) // 8
  s.cmd(201, 'Input.dispatchKeyEvent') // 9
  // Untyped key events run together until something else comes between (Playwright's press
  // with a selector first checks the element).
  s.cmd(299, 'Runtime.callFunctionOn') // 10
  s.cmd(300, 'Input.dispatchKeyEvent') // 11
  s.page('interaction_key', 300.5, { key: 'z', selector: '#q', tag: 'INPUT' }) // 12
  s.cmd(301, 'Input.dispatchKeyEvent') // 13
  s.cmd(4000, 'Input.dispatchMouseEvent') // 14
  s.page('interaction_scroll_settled', 4200, { from_x: 0, from_y: 0, to_x: 0, to_y: 5, target_selector: '#list' }) // 15
  s.cmd(6000, 'Input.dispatchKeyEvent') // 16: the page saw nothing
  t.same(
    deriveActions(s.envelopes).map(a => [a.kind, a.title, a.command_seqs]),
    [
      ['click', 'click #ok', [1, 2, 3]],
      ['type', 'type text', [5, 6]],
      ['press', 'press Enter', [7, 9]],
      ['type', 'type 1 character into #q', [10, 11, 13]],
      ['scroll', 'scroll #list', [14]],
      ['press', 'press a key', [16]],
    ],
  )
})

t.test('two clients, two targets: streams are separate, effects stay on their target', async t => {
  const s = new SessionBuilder()
  s.cmd(10, 'Page.navigate', { connection_id: 'C1', target_id: 'T1', dur: 5 }) // 1
  s.cmd(11, 'Page.navigate', { connection_id: 'C2', target_id: 'T2', dur: 5 }) // 2
  s.page('page_navigation', 12, { target_id: 'T2', url: 'http://b/two' }) // 3
  s.page('page_navigation', 13, { target_id: 'T1', url: 'http://a/one', parent_frame_id: 'X' }) // 4: a subframe
  s.page('page_navigation', 14, { target_id: 'T1', url: 'http://a/one' }) // 5
  s.page('console_error', 15, { target_id: 'T2', text: 'on two' }) // 6
  s.cmd(20, 'Page.enable', { connection_id: 'C2', target_id: 'T1' }) // 7: the second client sets up T1 too
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [
      a.connection_id,
      a.target_id,
      a.kind,
      a.title,
      a.end_ts,
      a.effects.navigations,
      a.effects.console_errors,
    ]),
    [
      ['C1', 'T1', 'navigate', 'go to /one', at(14), 1, 0],
      ['C2', 'T2', 'navigate', 'go to /two', at(12), 1, 1],
      ['C2', 'T1', 'setup', 'set up (1 command)', at(20), 0, 0],
    ],
  )
  t.equal(
    actions[0]!.effects_end_ts,
    at(14) + LOAD_MAX_US,
    "the second client's setup of T1 does not end the first client's navigate while it loads (no settle: 30 s)",
  )
  t.equal(actions[2]!.effects_end_ts, at(19), 'the setup has no window of its own then')
})

t.test('roles and titles of methods and URLs', async t => {
  const roles = Object.fromEntries(
    [
      'Network.enable',
      'Fetch.disable',
      'Target.attachToTarget',
      'Browser.getWindowForTarget',
      'Emulation.setDeviceMetricsOverride',
      'Network.setUserAgentOverride',
      'Page.getFrameTree',
      'Page.setLifecycleEventsEnabled',
      'Network.setExtraHTTPHeaders',
      'Runtime.getProperties',
      'DOM.scrollIntoViewIfNeeded',
      'Runtime.evaluate',
      'Page.reload',
      'Input.insertText',
      'Page.captureScreenshot',
      'Storage.getCookies',
      'Nonsense',
    ].map(m => [m, roleOf(m)]),
  )
  t.same(roles, {
    'Network.enable': 'setup',
    'Fetch.disable': 'setup',
    'Target.attachToTarget': 'setup',
    'Browser.getWindowForTarget': 'setup',
    'Emulation.setDeviceMetricsOverride': 'setup',
    'Network.setUserAgentOverride': 'setup',
    'Page.getFrameTree': 'setup',
    'Page.setLifecycleEventsEnabled': 'setup',
    'Network.setExtraHTTPHeaders': 'setup',
    'Runtime.getProperties': 'prep',
    'DOM.scrollIntoViewIfNeeded': 'prep',
    'Runtime.evaluate': 'eval',
    'Page.reload': 'navigate',
    'Input.insertText': 'text',
    'Page.captureScreenshot': 'screenshot',
    'Storage.getCookies': 'other',
    Nonsense: 'other',
  })
  t.same(
    ['https://a.example/x/y?token=1#f', 'about:blank', 'data:text/html,hi', 'file:///tmp/a.html', 'not a url'].map(
      pathOf,
    ),
    ['/x/y?token=[redacted:8]', 'about:blank', 'data:…', '/tmp/a.html', '(unknown page)'],
  )
})

t.test('navigation titles: the path and the query, secrets masked, bounded', async t => {
  // One single-page app opened four ways: four titles. The URLs are as a page_navigation stores
  // them (masked by the pipeline) and as an older bundle may hold them (not masked).
  const urls = [
    'http://app.test/swagger-mapped/',
    'http://app.test/swagger-mapped/?url=/openapi.json',
    'http://app.test/swagger-mapped/?url=/other.json&api_key=[redacted:16]#/pets',
    'http://app.test/swagger-mapped/?url=/other.json&api_key=s3cr3t-value-here&deepLinking=true',
    `http://app.test/swagger-mapped/?q=${'x'.repeat(200)}`,
  ]
  const s = new SessionBuilder()
  urls.forEach((url, i) => {
    s.cmd(1000 * i + 10, 'Page.navigate', { dur: 10 })
    s.page('page_navigation', 1000 * i + 5, { url, frame_id: 'F1' })
  })
  const titles = deriveActions(s.envelopes).map(a => a.title)
  t.same(titles.slice(0, 4), [
    'go to /swagger-mapped/',
    'go to /swagger-mapped/?url=/openapi.json',
    'go to /swagger-mapped/?url=/other.json&api_key=[redacted:16]',
    'go to /swagger-mapped/?url=/other.json&api_key=[redacted:32]&deepLinking=true',
  ])
  t.equal(titles[4], `go to /swagger-mapped/?q=${'x'.repeat(120 - '/swagger-mapped/?q='.length - 1)}…`)
  t.equal([...titles[4]!].length, 'go to '.length + 120, 'the URL part is cut to 120 characters')
  t.notOk(titles.join(' ').includes('s3cr3t'), 'a secret in the query never reaches a title')
})

t.test('steps: started joined with finished, nesting, open steps, a start before the window', async t => {
  const s = new SessionBuilder()
  s.event('agent_step_finished', 4000, {
    step_id: 'S0',
    name: 'log in',
    via: 'cdp',
    connection_id: 'C1',
    outcome: 'ok',
    duration_ms: 500,
  })
  s.event('agent_step_started', 5000, { step_id: 'S1', name: 'checkout', via: 'http' })
  s.event('agent_step_started', 5100, { step_id: 'S2', name: 'pay', parent_step_id: 'S1', via: 'http' })
  s.event('agent_step_finished', 5300, {
    step_id: 'S2',
    name: 'pay',
    parent_step_id: 'S1',
    via: 'http',
    outcome: 'error',
    error_message: 'card declined',
    duration_ms: 200,
  })
  s.event('agent_step_started', 5400, { step_id: 'S3', name: 'retry', parent_step_id: 'S1', via: 'http' })
  t.same(stepsOf(s.envelopes), [
    {
      step_id: 'S0',
      name: 'log in',
      connection_id: 'C1',
      start_ts: at(3500),
      end_ts: at(4000),
      outcome: 'ok',
      duration_ms: 500,
    },
    { step_id: 'S1', name: 'checkout', start_ts: at(5000) },
    {
      step_id: 'S2',
      name: 'pay',
      parent_step_id: 'S1',
      start_ts: at(5100),
      end_ts: at(5300),
      outcome: 'error',
      duration_ms: 200,
      error_message: 'card declined',
    },
    { step_id: 'S3', name: 'retry', parent_step_id: 'S1', start_ts: at(5400) },
  ])
})
