// Which action the page's reports belong to, over hand-built sessions: a navigation's effects run
// until it settles whatever script calls come meanwhile (Playwright waiting for an element while
// the page loads), an input takes over only once it acts, and an input call that failed before it
// sent its input (a click that timed out: polls, then the step's error) is one failed action.
import t from 'tap'
import { deriveActions } from '../src/actions/index.js'
import { at, SessionBuilder } from './helpers/agent-session.js'

const req = (id: string) => ({ request_id: id, method: 'GET', url: `http://app/${id}`, headers: {} })
const failedResponse = (id: string) => ({
  request_id: id,
  status: 500,
  status_text: 'Internal Server Error',
  headers: {},
  mime_type: 'text/plain',
})

/** goto with waitUntil commit, then waitForSelector: polls while the app loads and fetches its spec (it settles at 1500). */
function loadingApp(s: SessionBuilder, step = 'S1'): void {
  s.event('agent_step_started', 1, { step_id: step, name: 'open the docs', via: 'cdp' })
  s.cmd(20, 'Page.navigate', { dur: 15, step_id: step }) // answered at commit
  s.page('page_navigation', 18, { url: 'http://app/swagger-mapped/?url=/openapi.json', frame_id: 'F1' })
  s.cmd(60, 'Runtime.evaluate', { dur: 40, step_id: step }) // the utility world, then the polls
  s.cmd(70, 'Runtime.callFunctionOn', { dur: 5, step_id: step })
  s.page('network_request', 80, req('bundle.js'))
  s.cmd(400, 'Runtime.callFunctionOn', { dur: 300, step_id: step }) // a poll waiting on the script
  s.page('console_error', 420, { text: 'Could not render: the page is still booting' })
  s.page('network_request', 450, req('openapi.json')) // the app fetches its spec
  s.page('network_response', 480, failedResponse('openapi.json'))
  s.cmd(500, 'Runtime.callFunctionOn', { dur: 10, step_id: step })
  s.cmd(502, 'Runtime.releaseObject', { dur: 1, step_id: step })
}

t.test('script calls while a navigation loads are part of it; its effects run until it settles', async t => {
  const s = new SessionBuilder()
  loadingApp(s)
  s.page('page_navigation_settled', 1500)
  s.page('network_request', 1600, req('after-settle')) // counts for nobody: the navigation settled
  // The agent thinks, then clicks.
  s.cmd(4000, 'Runtime.callFunctionOn', { dur: 2, step_id: 'S1' })
  s.cmd(4010, 'Input.dispatchMouseEvent', { input_type: 'mousePressed', step_id: 'S1' })
  s.cmd(4012, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased', step_id: 'S1' })
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.kind, a.title, a.command_seqs, a.effects_end_ts]),
    [
      ['navigate', 'go to /swagger-mapped/?url=/openapi.json', [2, 4, 5, 7, 11, 12], at(1500)],
      ['click', 'click', [15, 16, 17], undefined],
    ],
    'no evaluate actions: the polls are the navigation waiting',
  )
  t.match(actions[0]!.effects, { navigations: 1, requests: 2, failed_requests: 1, console_errors: 1 })
  t.match(actions[1]!.effects, { requests: 0, console_errors: 0 })
})

t.test('an input right after the load takes over once it acts, not with its checks', async t => {
  const s = new SessionBuilder()
  s.cmd(20, 'Page.navigate', { dur: 15 }) // 1
  s.page('page_navigation', 18, { url: 'http://app/', frame_id: 'F1' }) // 2
  s.page('page_load', 300, { cdp_timestamp: 1 }) // 3 (read by nobody)
  s.cmd(305, 'Runtime.callFunctionOn', { dur: 2 }) // 4: the click's checks
  s.page('console_error', 306, { text: 'late init failed' }) // 5: the page's, not the click's
  s.cmd(310, 'DOM.getContentQuads', { dur: 1 }) // 6
  s.cmd(312, 'Input.dispatchMouseEvent', { input_type: 'mousePressed', dur: 1 }) // 7
  s.cmd(313, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased', dur: 1 }) // 8
  s.page('interaction_click', 314, { x: 1, y: 1, selector: '#buy', tag: 'BUTTON', text: 'Buy' }) // 9
  s.page('network_request', 320, req('cart')) // 10: the click's
  s.page('page_navigation_settled', 1300) // 11
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.title, a.command_seqs, a.effects.console_errors, a.effects.requests, a.effects_end_ts]),
    [
      ['go to /', [1], 1, 0, at(311)],
      ['click #buy', [4, 6, 7, 8], 0, 1, undefined],
    ],
  )
})

t.test("another step's evaluate while the page loads stays an evaluate, with no effects", async t => {
  const s = new SessionBuilder()
  loadingApp(s)
  s.event('agent_step_finished', 600, {
    step_id: 'S1',
    name: 'open the docs',
    via: 'cdp',
    outcome: 'ok',
    duration_ms: 599,
  })
  s.cmd(700, 'Runtime.evaluate', { dur: 5, step_id: 'S2' }) // the agent reads the title, in its next step
  s.page('console_error', 800, { text: 'still loading' })
  s.page('page_navigation_settled', 1500)
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.kind, a.effects.console_errors, a.effects_end_ts]),
    [
      ['navigate', 2, at(1500)],
      ['evaluate', 0, at(695)],
    ],
  )
})

// Playwright's retries of an actionability check: right away, 20 ms, 100 ms, 100 ms, then every 500 ms.
const POLLS = [0, 20, 120, 220, 720, 1220, 1720, 2220, 2720, 3220, 3720, 4220, 4720, 5220, 5720, 6220]
const TIMEOUT_ERROR =
  'locator.click: Timeout 6500ms exceeded.\nCall log:\n  - waiting for locator(\'#save\')\n    - locator resolved to <button id="save" disabled>Save</button>\n  - attempting click action\n    - waiting for element to be visible, enabled and stable\n      - element is not enabled\n'

t.test("a click that timed out is one failed click carrying its step's error", async t => {
  const s = new SessionBuilder()
  s.event('agent_step_started', 990, { step_id: 'S1', name: 'save the form', via: 'cdp' }) // 1
  for (const ms of POLLS) s.cmd(1000 + ms, 'Runtime.callFunctionOn', { dur: 3, step_id: 'S1' }) // 2..17
  s.page('console_error', 3000, { text: 'validation failed' }) // 18
  s.event('agent_step_finished', 7500, {
    step_id: 'S1',
    name: 'save the form',
    via: 'cdp',
    outcome: 'error',
    error_message: TIMEOUT_ERROR,
    duration_ms: 6510,
  }) // 19
  const actions = deriveActions(s.envelopes)
  t.same(
    actions.map(a => [a.kind, a.title, a.outcome, a.error_message, a.command_seqs.length, a.effects.console_errors]),
    [['click', 'click #save', 'error', TIMEOUT_ERROR, 16, 1]],
  )
  t.equal(actions[0]!.start_ts, at(997))

  // The same polls in a step that ended well, or whose error names no input call: evaluates.
  const ok = new SessionBuilder()
  for (const ms of POLLS) ok.cmd(1000 + ms, 'Runtime.callFunctionOn', { dur: 3, step_id: 'S1' })
  ok.event('agent_step_finished', 7500, {
    step_id: 'S1',
    name: 'wait for the total',
    via: 'cdp',
    outcome: 'error',
    error_message: 'expected total 3, got 2',
    duration_ms: 6510,
  })
  t.same(
    [...new Set(deriveActions(ok.envelopes).map(a => a.kind))],
    ['evaluate'],
    'no input call named: the polls stay what they were',
  )
})

t.test("a failed call's title: the verb of the call and the element it waited for", async t => {
  const { attemptOf } = await import('../src/actions/attempts.js')
  const cases: [string, string | undefined, string | undefined][] = [
    ["page.click: Timeout 1500ms exceeded.\nCall log:\n  - waiting for locator('#b')\n", 'click', 'click #b'],
    [
      "TimeoutError: locator.fill: Timeout 500ms exceeded.\nCall log:\n  - waiting for getByRole('textbox', { name: 'Email' })\n",
      'type',
      "fill getByRole('textbox', { name: 'Email' })",
    ],
    ['step failed: page.dblclick: Target page, context or browser has been closed', 'click', 'double-click'],
    ["locator.press: Timeout 100ms exceeded.\n  - waiting for locator('#q')", 'press', 'press a key in #q'],
    [
      `page.click: Timeout 1ms exceeded.\n  - waiting for locator('${'x'.repeat(100)}')`,
      'click',
      `click ${'x'.repeat(79)}…`,
    ],
    ['page.evaluate: ReferenceError: x is not defined', undefined, undefined],
    ['could not log in', undefined, undefined],
  ]
  for (const [message, kind, title] of cases) {
    const a = attemptOf(message)
    t.same([a?.kind, a?.title], [kind, title], message.split('\n')[0]!)
  }
})
