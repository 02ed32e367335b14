// The trace lines made of single events (src/trace/format.ts, actions.ts), pure: console levels and
// locations, uncaught errors with their source-mapped stacks, page events, steps and actions.
import t from 'tap'
import type { Envelope } from '../src/events/index.js'
import { consoleLineOf, pageEventOf } from '../src/trace/format.js'
import { actionLines } from '../src/trace/actions.js'
import { noEffects, type Action, type Step } from '../src/actions/index.js'

const clock = { originUs: 1_000_000 }
const ctx = { target_id: 'T1', session_id: 'S1', url: 'https://shop.test/cart' }
const env = (type: string, data: object, extra: object = {}): Envelope =>
  ({
    seq: 1,
    event: { ts: 1_250_500, type, category: 'page', source: { kind: 'cdp' }, data: { ...ctx, ...data }, ...extra },
  }) as unknown as Envelope

t.test('console: levels as Playwright names them, the location of the top frame (mapped when it is)', async t => {
  const warn = consoleLineOf(
    clock,
    env('console_log', {
      level: 'warn',
      text: 'careful',
      args: ['careful'],
      stack_trace: {
        callFrames: [
          {
            functionName: 'a',
            url: 'https://shop.test/app.min.js',
            lineNumber: 0,
            columnNumber: 1234,
            original: { source: 'src/cart.ts', line: 42, column: 7, name: 'checkout' },
          },
        ],
      },
    }),
  )
  t.same(warn, {
    type: 'console',
    time: 250.5,
    pageId: 'page@T1',
    messageType: 'warning',
    text: 'careful',
    location: { url: 'src/cart.ts', lineNumber: 41, columnNumber: 6 },
  })
  const logged = consoleLineOf(
    clock,
    env(
      'console_error',
      { text: 'oops', level: 'error', args: ['oops'] },
      { source: { kind: 'cdp', event: 'Runtime.consoleAPICalled' } },
    ),
  )
  t.match(logged, { type: 'console', messageType: 'error', text: 'oops' }, 'console.error stays a console message')
})

t.test('an uncaught exception is a pageError with its stack, mapped frames at their original place', async t => {
  const line = consoleLineOf(
    clock,
    env(
      'console_error',
      {
        text: 'Uncaught TypeError: x is not a function\n    at a (https://shop.test/app.min.js:1:1235)',
        line: 0,
        column: 1234,
        source_url: 'https://shop.test/app.min.js',
        stack_trace: {
          callFrames: [
            {
              functionName: 'a',
              url: 'https://shop.test/app.min.js',
              lineNumber: 0,
              columnNumber: 1234,
              original: { source: 'src/cart.ts', line: 42, column: 7, name: 'checkout' },
            },
            { functionName: '', url: 'https://shop.test/vendor.js', lineNumber: 9, columnNumber: 2 },
          ],
          parent: {
            description: 'cause: network down',
            callFrames: [{ functionName: 'f', url: 'https://shop.test/net.js', lineNumber: 1, columnNumber: 0 }],
          },
        },
      },
      { source: { kind: 'cdp', event: 'Runtime.exceptionThrown' } },
    ),
  )
  t.same(line, {
    type: 'event',
    time: 250.5,
    class: 'BrowserContext',
    method: 'pageError',
    params: {
      error: {
        error: {
          name: 'TypeError',
          message: 'x is not a function',
          stack: [
            'TypeError: x is not a function',
            '    at checkout (src/cart.ts:42:7)',
            '    at https://shop.test/vendor.js:10:3',
            '    --- cause: network down ---',
            '    at f (https://shop.test/net.js:2:1)',
          ].join('\n'),
        },
      },
    },
    pageId: 'page@T1',
  })
})

t.test('navigations, dialogs, downloads and crashes are events of their page', async t => {
  const ev = (type: string, data: object) => {
    const l = pageEventOf(clock, env(type, data))!
    return [l.class, l.method, l.params, l.pageId, l.time]
  }
  t.same(ev('page_navigation', { frame_id: 'T1' }), [
    'Frame',
    'navigated',
    { url: 'https://shop.test/cart', name: '', frameId: 'T1', mainFrame: true },
    'page@T1',
    250.5,
  ])
  t.same(
    ev('page_dialog_opened', { dialog_type: 'confirm', message: 'Sure?', has_browser_handler: false }).slice(0, 3),
    ['Page', 'dialog', { type: 'confirm', message: 'Sure?' }],
  )
  t.same(ev('page_download_started', { guid: 'g', suggested_filename: 'a.pdf' }).slice(0, 3), [
    'Page',
    'download',
    { url: 'https://shop.test/cart', suggestedFilename: 'a.pdf' },
  ])
  t.same(ev('page_crashed', { status: 'oom', error_code: 9 }).slice(0, 3), [
    'Page',
    'crash',
    { status: 'oom', code: 9 },
  ])
  t.equal(pageEventOf(clock, env('network_idle', {})), undefined)
})

t.test('steps hold their actions; setup is left out; failures carry an error', async t => {
  const step: Step = {
    step_id: 's1',
    name: 'pay',
    start_ts: 1_000_000,
    end_ts: 3_000_000,
    outcome: 'error',
    error_message: 'declined',
  }
  const open: Step = { step_id: 's2', name: 'wait {forever}', start_ts: 2_000_000 }
  const action = (id: string, kind: Action['kind'], outcome: Action['outcome']): Action => ({
    action_id: id,
    kind,
    title: `${kind} {x}`,
    step_id: 's1',
    connection_id: 'c',
    target_id: 'T1',
    start_ts: 1_100_000,
    end_ts: 1_200_000,
    outcome,
    command_seqs: [1, 2],
    effects: noEffects(),
  })
  const lines = actionLines(
    clock,
    [step, open],
    [action('a1', 'setup', 'ok'), action('a2', 'click', 'error')],
    5_000_000,
  )
  t.same(lines, [
    { type: 'before', callId: 'step@s1', startTime: 0, title: 'pay', class: 'Step', method: 'step', params: {} },
    { type: 'after', callId: 'step@s1', endTime: 2000, error: { name: 'Error', message: 'declined' } },
    {
      type: 'before',
      callId: 'step@s2',
      startTime: 1000,
      title: 'wait {forever}',
      class: 'Step',
      method: 'step',
      params: {},
    },
    { type: 'after', callId: 'step@s2', endTime: 4000 },
    {
      type: 'before',
      callId: 'a2',
      startTime: 100,
      title: 'click {x}',
      class: 'Action',
      method: 'click',
      params: { commands: 2 },
      pageId: 'page@T1',
      parentId: 'step@s1',
    },
    {
      type: 'after',
      callId: 'a2',
      endTime: 200,
      error: { name: 'Error', message: 'click {x}: a command failed or went unanswered' },
    },
  ])
})
