// Console arguments cut in the raw CDP frame (src/monitor/console-frame-cut.ts): the event the
// console collector builds from the cut frame is identical to the one built from the whole frame.
import t from 'tap'
import { cutConsoleFrame, isConsoleEventFrame } from '../src/monitor/console-frame-cut.js'
import { renderArgs } from '../collectors/console-format.js'

const MAX = 1000

/** Deterministic strings mixing ASCII, escapes, 2- and 3-byte characters and surrogate pairs. */
function mixed(seed: number, units: number): string {
  const pieces = ['a', 'Z', '"', '\\', '\n', '\u0001', 'é', 'ß', '€', '中', '😀', '𝄞', ' ']
  let s = ''
  let x = seed
  while (s.length < units) {
    x = (x * 1103515245 + 12345) >>> 0
    s += pieces[x % pieces.length]
  }
  return s
}

function frame(args: unknown[], extra: Record<string, unknown> = {}): Buffer {
  // Chromium's order: method first, then params, then sessionId.
  return Buffer.from(
    JSON.stringify({
      method: 'Runtime.consoleAPICalled',
      params: { type: 'log', args, executionContextId: 3, timestamp: 1.5, ...extra },
      sessionId: 'S1',
    }),
  )
}

type Parsed = {
  method: string
  params: { args: Parameters<typeof renderArgs>[0]; stackTrace?: unknown; executionContextId: number }
  sessionId: string
}

t.test('the event built from the cut frame is the one built from the whole frame', async t => {
  const args = [
    { type: 'string', value: 'y'.repeat(50_000) }, // plain ASCII: the fast path
    { type: 'string', value: 'short' },
    { type: 'number', value: 7, description: '7' },
    ...Array.from({ length: 30 }, (_, i) => ({ type: 'string', value: mixed(i + 1, MAX - 5 + i) })), // around the bound
    { type: 'string', value: mixed(99, 20_000) },
    { type: 'string', value: '😀'.repeat(3000) }, // a pair may straddle the cut
    { type: 'string', value: '\\"'.repeat(2000) }, // escapes and escaped quotes
    {
      type: 'object',
      className: 'Object',
      description: 'Object',
      preview: {
        type: 'object',
        description: 'Object',
        overflow: false,
        properties: [{ name: 'value', type: 'string', value: 'v'.repeat(MAX + 50) }],
      },
    },
    { type: 'string', value: '' },
  ]
  const stackTrace = {
    callFrames: [
      { functionName: 'f', scriptId: '1', url: 'http://a/' + 'u'.repeat(5000), lineNumber: 1, columnNumber: 2 },
    ],
  }
  const whole = frame(args, { stackTrace })
  t.equal(isConsoleEventFrame(whole), true)
  const cut = cutConsoleFrame(whole, MAX)
  t.ok(cut, 'cut')
  t.ok(cut!.length < whole.length / 2, `shorter: ${cut!.length} of ${whole.length} bytes`)
  const a = JSON.parse(whole.toString()) as Parsed
  const b = JSON.parse(cut!.toString()) as Parsed
  t.same(
    renderArgs(b.params.args, MAX),
    renderArgs(a.params.args, MAX),
    'rendered arguments and the cut flag identical',
  )
  t.same(b.params.stackTrace, a.params.stackTrace, 'stack (URLs included) untouched')
  t.equal(b.sessionId, 'S1')
  t.equal(b.params.executionContextId, 3)
  // Every long value keeps more than MAX units (still seen as cut), short ones are untouched.
  b.params.args.forEach((arg, i) => {
    const before = String(a.params.args[i]!.value ?? '')
    const after = String(arg.value ?? '')
    if (before.length > MAX + 1)
      t.ok(
        after.length >= MAX + 1 && after.length <= MAX + 2 && before.startsWith(after.slice(0, MAX)),
        `arg ${i}: ${before.length} -> ${after.length} units`,
      )
    else t.equal(after, before, `arg ${i} untouched`)
  })
})

t.test('nothing to cut, other events and pathological frames: parsed as they are', async t => {
  t.equal(
    cutConsoleFrame(frame([{ type: 'string', value: 'x'.repeat(MAX) }]), MAX),
    undefined,
    'at the bound: untouched',
  )
  const network = Buffer.from(
    JSON.stringify({
      method: 'Network.requestWillBeSent',
      params: { request: { url: 'u'.repeat(5000) } },
      sessionId: 'S',
    }),
  )
  t.equal(isConsoleEventFrame(network), false)
  // Escaped quotes make every string end a search step: past the step budget the cut gives up.
  const quotes = frame([{ type: 'string', value: '"'.repeat(200_000) }])
  t.equal(cutConsoleFrame(quotes, MAX), undefined)
})
