// Error.cause chains for console stacks (collectors/console-cause.ts): which errors cost a CDP call,
// V8 stack text parsed into CDP-shaped frames, and the chain appended after the stack's own parents.
import t from 'tap'
import {
  causeChain,
  mayHaveCause,
  parseV8Stack,
  ScriptIds,
  withCauses,
  MAX_CAUSES,
} from '../collectors/console-cause.js'

t.test('only an error whose preview shows (or may hide) a cause is read', async t => {
  const base = { type: 'object' as const, subtype: 'error' as const, objectId: '1.2.3' }
  const preview = (names: string[], overflow = false) => ({
    type: 'object' as const,
    subtype: 'error' as const,
    overflow,
    properties: names.map(name => ({ name, type: 'string' as const, value: 'x' })),
  })
  t.ok(mayHaveCause({ ...base, preview: preview(['stack', 'message', 'cause']) }))
  t.notOk(mayHaveCause({ ...base, preview: preview(['stack', 'message']) }), 'no cause: no call')
  t.ok(
    mayHaveCause({ ...base, preview: preview(['a', 'b', 'c', 'd', 'e'], true) }),
    'an overflowing preview may hide it',
  )
  t.ok(mayHaveCause(base), 'no preview at all')
  t.notOk(mayHaveCause({ ...base, objectId: undefined }), 'nothing to call it on')
  t.notOk(mayHaveCause({ type: 'string', value: 'boom' }))
  t.notOk(mayHaveCause(undefined))
})

t.test('V8 stack text as CDP frames: 0-based positions, bare names, no native or eval frames', async t => {
  const text = [
    'TypeError: bad value 14',
    '    at t (http://127.0.0.1:4000/app.min.js:1:34)',
    '    at e.total (http://127.0.0.1:4000/app.min.js:1:103)',
    '    at new Checkout (http://127.0.0.1:4000/app.min.js:2:7)',
    '    at async loadCart (http://127.0.0.1:4000/app.min.js:1:500)',
    '    at Object.<anonymous> (http://127.0.0.1:4000/app.min.js:1:9)',
    '    at Array.map (<anonymous>)',
    '    at eval (eval at run (http://127.0.0.1:4000/app.min.js:1:1), <anonymous>:1:1)',
    '    at x [as y] (http://127.0.0.1:4000/app.min.js:3:4)',
    '    at http://127.0.0.1:4000/app.min.js:1:279',
  ].join('\n')
  t.same(parseV8Stack(text), [
    { functionName: 't', scriptId: '', url: 'http://127.0.0.1:4000/app.min.js', lineNumber: 0, columnNumber: 33 },
    { functionName: 'total', scriptId: '', url: 'http://127.0.0.1:4000/app.min.js', lineNumber: 0, columnNumber: 102 },
    { functionName: 'Checkout', scriptId: '', url: 'http://127.0.0.1:4000/app.min.js', lineNumber: 1, columnNumber: 6 },
    {
      functionName: 'loadCart',
      scriptId: '',
      url: 'http://127.0.0.1:4000/app.min.js',
      lineNumber: 0,
      columnNumber: 499,
    },
    { functionName: '', scriptId: '', url: 'http://127.0.0.1:4000/app.min.js', lineNumber: 0, columnNumber: 8 },
    { functionName: 'x', scriptId: '', url: 'http://127.0.0.1:4000/app.min.js', lineNumber: 2, columnNumber: 3 },
    { functionName: '', scriptId: '', url: 'http://127.0.0.1:4000/app.min.js', lineNumber: 0, columnNumber: 278 },
  ])
  t.equal(parseV8Stack('    at f (a.js:1:1)\n'.repeat(100)).length, 64, 'at most 64 frames a cause')
})

t.test('parsed frames carry the id of the script Chromium named for their URL, else ""', async t => {
  const scripts = new ScriptIds()
  scripts.learn({
    callFrames: [{ functionName: 'a', scriptId: '17', url: 'https://a/x.js', lineNumber: 0, columnNumber: 0 }],
    parent: {
      callFrames: [
        { functionName: 'b', scriptId: '', url: 'https://a/empty.js', lineNumber: 0, columnNumber: 0 },
        { functionName: 'c', scriptId: '21', url: 'https://a/y.js', lineNumber: 0, columnNumber: 0 },
      ],
    },
  })
  const text = 'Error: e\n    at f (https://a/x.js:1:2)\n    at g (https://a/y.js:3:4)\n    at h (https://a/z.js:5:6)'
  t.same(
    parseV8Stack(text, scripts).map(f => [f.functionName, f.scriptId]),
    [
      ['f', '17'],
      ['g', '21'],
      ['h', ''],
    ],
  )
  t.same(
    causeChain([text], scripts)!.callFrames.map(f => f.scriptId),
    ['17', '21', ''],
    'causes too',
  )
  // A reload gives the URL a new script: the last one seen wins.
  scripts.learn({
    callFrames: [{ functionName: 'a', scriptId: '40', url: 'https://a/x.js', lineNumber: 0, columnNumber: 0 }],
  })
  t.equal(parseV8Stack(text, scripts)[0]!.scriptId, '40')
  t.equal(scripts.of('https://a/empty.js'), '', 'a frame without an id teaches nothing')
})

t.test('causes as parent entries, outermost first, after the stack’s own parents', async t => {
  const chain = causeChain([
    'Error: checkout failed\n    at o (https://a/x.js:1:10)',
    '{"code":7}',
    'TypeError: multi\nline message\n    at t (https://a/x.js:1:3)',
  ])
  t.same(chain, {
    description: 'cause: Error: checkout failed',
    callFrames: [{ functionName: 'o', scriptId: '', url: 'https://a/x.js', lineNumber: 0, columnNumber: 9 }],
    parent: {
      description: 'cause: {"code":7}',
      callFrames: [],
      parent: {
        description: 'cause: TypeError: multi\nline message',
        callFrames: [{ functionName: 't', scriptId: '', url: 'https://a/x.js', lineNumber: 0, columnNumber: 2 }],
      },
    },
  })
  let depth = 0
  for (let s = causeChain(Array.from({ length: 20 }, (_, i) => `Error: ${i}`)); s; s = s.parent) depth++
  t.equal(depth, MAX_CAUSES)
  const stack = { callFrames: [], parent: { description: 'setTimeout', callFrames: [] } }
  const joined = withCauses(stack, chain)!
  t.equal(joined.parent!.description, 'setTimeout', 'async parents first')
  t.equal(joined.parent!.parent, chain, 'then the causes')
  t.same(stack, { callFrames: [], parent: { description: 'setTimeout', callFrames: [] } }, 'the input is not changed')
  t.equal(withCauses(stack, undefined), stack)
  t.same(withCauses(undefined, chain), { callFrames: [], parent: chain })
})
