// Console value rendering and exception text, from CDP payload shapes Chromium sends.
import t from 'tap'
import {
  exceptionText,
  renderArgs,
  renderRemoteObject,
  stackTraceOf,
  errorMessage,
} from '../collectors/console-format.js'
import { fitEvent } from '../src/pipeline/envelope-fit.js'
import type { TelemetryEvent } from '../src/events/index.js'

t.test('primitives render as the console prints them', async t => {
  t.equal(renderRemoteObject({ type: 'string', value: 'hi "x"' }), 'hi "x"')
  t.equal(renderRemoteObject({ type: 'number', value: 42, description: '42' }), '42')
  t.equal(renderRemoteObject({ type: 'number', unserializableValue: 'NaN', description: 'NaN' }), 'NaN')
  t.equal(renderRemoteObject({ type: 'number', unserializableValue: '-0', description: '-0' }), '-0')
  t.equal(renderRemoteObject({ type: 'bigint', unserializableValue: '12n', description: '12n' }), '12n')
  t.equal(renderRemoteObject({ type: 'boolean', value: false }), 'false')
  t.equal(renderRemoteObject({ type: 'undefined' }), 'undefined')
  t.equal(renderRemoteObject({ type: 'object', subtype: 'null', value: null }), 'null')
  t.equal(renderRemoteObject({ type: 'symbol', description: 'Symbol(s)' }), 'Symbol(s)')
  t.equal(
    renderRemoteObject({ type: 'function', className: 'Function', description: 'function f() {}' }),
    'function f() {}',
  )
})

t.test('objects render from their preview, never [object Object]', async t => {
  t.equal(
    renderRemoteObject({
      type: 'object',
      className: 'Object',
      description: 'Object',
      preview: {
        type: 'object',
        description: 'Object',
        overflow: false,
        properties: [
          { name: 'a', type: 'number', value: '1' },
          { name: 'b', type: 'string', value: 'x' },
          { name: 'c', type: 'object', value: 'Object' },
          { name: 'd', type: 'object', subtype: 'array', value: 'Array(2)' },
          { name: 'e', type: 'object', subtype: 'null', value: 'null' },
          { name: 'f', type: 'undefined', value: 'undefined' },
        ],
      },
    }),
    '{a: 1, b: "x", c: {…}, d: Array(2), e: null, f: undefined}',
  )
  t.equal(
    renderRemoteObject({
      type: 'object',
      subtype: 'array',
      className: 'Array',
      description: 'Array(2)',
      preview: {
        type: 'object',
        subtype: 'array',
        description: 'Array(2)',
        overflow: false,
        properties: [
          { name: '0', type: 'number', value: '1' },
          { name: '1', type: 'number', value: '2' },
        ],
      },
    }),
    '[1, 2]',
  )
  t.equal(
    renderRemoteObject({
      type: 'object',
      subtype: 'array',
      className: 'Array',
      description: 'Array(200)',
      preview: {
        type: 'object',
        subtype: 'array',
        description: 'Array(200)',
        overflow: true,
        properties: [{ name: '0', type: 'number', value: '0' }],
      },
    }),
    '[0, …]',
  )
  t.equal(
    renderRemoteObject({
      type: 'object',
      subtype: 'map',
      className: 'Map',
      description: 'Map(1)',
      preview: {
        type: 'object',
        subtype: 'map',
        description: 'Map(1)',
        overflow: false,
        properties: [],
        entries: [
          {
            key: { type: 'string', description: 'k', overflow: false, properties: [] },
            value: { type: 'number', description: '1', overflow: false, properties: [] },
          },
        ],
      },
    }),
    'Map(1) {"k" => 1}',
  )
  t.equal(
    renderRemoteObject({
      type: 'object',
      className: 'Foo',
      description: 'Foo',
      preview: {
        type: 'object',
        description: 'Foo',
        overflow: false,
        properties: [{ name: 'x', type: 'number', value: '1' }],
      },
    }),
    'Foo {x: 1}',
  )
  t.equal(
    renderRemoteObject({
      type: 'object',
      subtype: 'error',
      className: 'Error',
      description: 'Error: boom\n    at f (x.js:1:1)',
    }),
    'Error: boom\n    at f (x.js:1:1)',
  )
  t.equal(renderRemoteObject({ type: 'object', className: 'Object', description: 'Object' }), 'Object')
})

t.test('exception text: prefix from details, message from the thrown value, no stack, no repetition', async t => {
  const err = (description: string, className = 'Error') => ({
    type: 'object' as const,
    subtype: 'error' as const,
    className,
    description,
  })
  t.equal(
    exceptionText({
      exceptionId: 1,
      text: 'Uncaught',
      lineNumber: 0,
      columnNumber: 0,
      exception: err('Error: boom\n    at a (http://x/:3:9)'),
    }),
    'Uncaught Error: boom',
  )
  t.equal(
    exceptionText({
      exceptionId: 1,
      text: 'Uncaught (in promise)',
      lineNumber: 0,
      columnNumber: 0,
      exception: err("TypeError: Cannot read properties of null (reading 'x')\n    at b (http://x/:1:1)", 'TypeError'),
    }),
    "Uncaught (in promise) TypeError: Cannot read properties of null (reading 'x')",
  )
  t.equal(
    exceptionText({
      exceptionId: 1,
      text: 'Uncaught',
      lineNumber: 0,
      columnNumber: 0,
      exception: { type: 'string', value: 'plain' },
    }),
    'Uncaught plain',
  )
  t.equal(
    exceptionText({
      exceptionId: 1,
      text: "Uncaught SyntaxError: Unexpected token '}'",
      lineNumber: 0,
      columnNumber: 0,
      exception: err("SyntaxError: Unexpected token '}'", 'SyntaxError'),
    }),
    "Uncaught SyntaxError: Unexpected token '}'",
  )
  t.equal(exceptionText({ exceptionId: 1, text: 'Script error.', lineNumber: 0, columnNumber: 0 }), 'Script error.')
  t.equal(errorMessage('Error: two\nlines\n    at x (y:1:1)'), 'Error: two\nlines')
})

t.test('stack traces keep CDP camelCase and drop parentId', async t => {
  t.same(
    stackTraceOf({
      callFrames: [{ functionName: 'f', scriptId: '3', url: 'http://x/a.js', lineNumber: 1, columnNumber: 2 }],
      parent: { description: 'Promise.then', callFrames: [], parentId: { id: '1' } },
    }),
    {
      callFrames: [{ functionName: 'f', scriptId: '3', url: 'http://x/a.js', lineNumber: 1, columnNumber: 2 }],
      parent: { description: 'Promise.then', callFrames: [] },
    },
  )
  t.equal(stackTraceOf(undefined), undefined)
})

t.test(
  'console arguments are cut before the event is built: plain text to fit the cap in one serialisation, the rest as the envelope fit would',
  async t => {
    const cap = 64 * 1024
    const str = (value: string) => ({ type: 'string' as const, value })
    const fit = (args: string[]) =>
      fitEvent(
        {
          ts: 1,
          type: 'console_log',
          category: 'console',
          source: { kind: 'cdp' },
          data: { level: 'log', text: args[0] ?? '', args },
        } as TelemetryEvent,
        cap,
      )
    const fitted = (args: string[]) => fit(args).json
    // What the console collector leaves for the rest of the event, and each argument's quotes and comma.
    const room = (n: number) => cap - Math.ceil(cap / 64) - 3 * (n + 1)

    const none = renderArgs([str('a'), str('b'.repeat(cap - 2))], cap)
    t.same(
      none,
      { args: ['a', 'b'.repeat(cap - 2)], cut: false },
      'arguments adding up to the cap (the first twice: it is the text too): untouched',
    )

    const huge = [str('y'.repeat(8 * cap)), str('z'), { type: 'number' as const, value: 1, description: '1' }]
    const r = renderArgs(huge, cap)
    t.equal(r.cut, true)
    t.same(
      r.args.map(a => a.length),
      [Math.floor((room(3) - 2) / 2), 1, 1],
      'one string longer than the cap: cut to leave room for the rest (it is stored twice)',
    )
    t.equal(fit(r.args).cut, false, 'the envelope fit has nothing left to cut')
    t.ok(Buffer.byteLength(fitted(r.args)) > cap - 2048, `close to the cap: ${Buffer.byteLength(fitted(r.args))}`)

    // The hostile page's call: 5,000 arguments of 300 characters.
    const wide5k = Array.from({ length: 5000 }, (_, i) => str(String(i).padEnd(300, 'x')))
    const w = renderArgs(wide5k, 16 * cap)
    t.equal(w.cut, true)
    // 5,001 strings (the first is the text too) share what the cap leaves.
    t.same(
      new Set(w.args.map(a => a.length)),
      new Set([Math.floor((16 * cap - Math.ceil((16 * cap) / 64) - 3 * 5001) / 5001)]),
      'one common length for all',
    )
    t.ok(
      w.args.every((a, i) => wide5k[i]!.value.startsWith(a)),
      'each a prefix of its argument',
    )
    const wideFit = fitEvent(
      {
        ts: 1,
        type: 'console_log',
        category: 'console',
        source: { kind: 'cdp' },
        data: { level: 'log', text: w.args[0]!, args: w.args },
      } as TelemetryEvent,
      16 * cap,
    )
    t.equal(wideFit.cut, false, 'stored as it leaves the collector')
    t.ok(Buffer.byteLength(wideFit.json) > 16 * cap - 32 * 1024, `close to the cap: ${Buffer.byteLength(wideFit.json)}`)

    // Too many arguments for a common length of 64 or more: cut only as deep as the fit's cut surely
    // goes, which then drops tail entries; the stored envelope is the same as from the uncut arguments.
    const many = Array.from({ length: cap }, (_, i) => str(String(i % 10)))
    const m = renderArgs(many, cap)
    t.equal(m.cut, true)
    t.equal(m.args.length, Math.floor(cap / 3), 'no more entries than could ever fit (each costs at least 3 bytes)')
    t.equal(fitted(m.args), fitted(many.map(renderRemoteObject)), 'same stored envelope for a million-argument call')
    const hundreds = Array.from({ length: 5000 }, (_, i) => str(String(i).padEnd(100, 'x')))
    const h = renderArgs(hundreds, cap)
    t.same(
      new Set(h.args.map(a => a.length)),
      new Set([64]),
      '5,000 arguments of 100 characters at a 64 KiB cap: cut to 64',
    )
    t.equal(fitted(h.args), fitted(hundreds.map(renderRemoteObject)), 'and stored as without the cut')

    // Multi-byte: cut by UTF-16 units, still above the cap in bytes, so the fit decides the final cut.
    const wide = [str('é'.repeat(2 * cap)), str('x'.repeat(300))]
    t.equal(fitted(renderArgs(wide, cap).args), fitted(wide.map(renderRemoteObject)))
  },
)
