// Console value rendering and exception text, from CDP payload shapes Chromium sends.
import t from 'tap'
import { exceptionText, renderRemoteObject, stackTraceOf, errorMessage } from '../collectors/console-format.js'

t.test('primitives render as the console prints them', async (t) => {
  t.equal(renderRemoteObject({ type: 'string', value: 'hi "x"' }), 'hi "x"')
  t.equal(renderRemoteObject({ type: 'number', value: 42, description: '42' }), '42')
  t.equal(renderRemoteObject({ type: 'number', unserializableValue: 'NaN', description: 'NaN' }), 'NaN')
  t.equal(renderRemoteObject({ type: 'number', unserializableValue: '-0', description: '-0' }), '-0')
  t.equal(renderRemoteObject({ type: 'bigint', unserializableValue: '12n', description: '12n' }), '12n')
  t.equal(renderRemoteObject({ type: 'boolean', value: false }), 'false')
  t.equal(renderRemoteObject({ type: 'undefined' }), 'undefined')
  t.equal(renderRemoteObject({ type: 'object', subtype: 'null', value: null }), 'null')
  t.equal(renderRemoteObject({ type: 'symbol', description: 'Symbol(s)' }), 'Symbol(s)')
  t.equal(renderRemoteObject({ type: 'function', className: 'Function', description: 'function f() {}' }), 'function f() {}')
})

t.test('objects render from their preview, never [object Object]', async (t) => {
  t.equal(renderRemoteObject({
    type: 'object', className: 'Object', description: 'Object',
    preview: { type: 'object', description: 'Object', overflow: false, properties: [
      { name: 'a', type: 'number', value: '1' }, { name: 'b', type: 'string', value: 'x' },
      { name: 'c', type: 'object', value: 'Object' }, { name: 'd', type: 'object', subtype: 'array', value: 'Array(2)' },
      { name: 'e', type: 'object', subtype: 'null', value: 'null' }, { name: 'f', type: 'undefined', value: 'undefined' },
    ] },
  }), '{a: 1, b: "x", c: {…}, d: Array(2), e: null, f: undefined}')
  t.equal(renderRemoteObject({
    type: 'object', subtype: 'array', className: 'Array', description: 'Array(2)',
    preview: { type: 'object', subtype: 'array', description: 'Array(2)', overflow: false, properties: [
      { name: '0', type: 'number', value: '1' }, { name: '1', type: 'number', value: '2' },
    ] },
  }), '[1, 2]')
  t.equal(renderRemoteObject({
    type: 'object', subtype: 'array', className: 'Array', description: 'Array(200)',
    preview: { type: 'object', subtype: 'array', description: 'Array(200)', overflow: true, properties: [{ name: '0', type: 'number', value: '0' }] },
  }), '[0, …]')
  t.equal(renderRemoteObject({
    type: 'object', subtype: 'map', className: 'Map', description: 'Map(1)',
    preview: { type: 'object', subtype: 'map', description: 'Map(1)', overflow: false, properties: [], entries: [
      { key: { type: 'string', description: 'k', overflow: false, properties: [] }, value: { type: 'number', description: '1', overflow: false, properties: [] } },
    ] },
  }), 'Map(1) {"k" => 1}')
  t.equal(renderRemoteObject({
    type: 'object', className: 'Foo', description: 'Foo',
    preview: { type: 'object', description: 'Foo', overflow: false, properties: [{ name: 'x', type: 'number', value: '1' }] },
  }), 'Foo {x: 1}')
  t.equal(renderRemoteObject({ type: 'object', subtype: 'error', className: 'Error', description: 'Error: boom\n    at f (x.js:1:1)' }), 'Error: boom\n    at f (x.js:1:1)')
  t.equal(renderRemoteObject({ type: 'object', className: 'Object', description: 'Object' }), 'Object')
})

t.test('exception text: prefix from details, message from the thrown value, no stack, no repetition', async (t) => {
  const err = (description: string, className = 'Error') => ({ type: 'object' as const, subtype: 'error' as const, className, description })
  t.equal(exceptionText({ exceptionId: 1, text: 'Uncaught', lineNumber: 0, columnNumber: 0, exception: err('Error: boom\n    at a (http://x/:3:9)') }), 'Uncaught Error: boom')
  t.equal(exceptionText({
    exceptionId: 1, text: 'Uncaught (in promise)', lineNumber: 0, columnNumber: 0,
    exception: err("TypeError: Cannot read properties of null (reading 'x')\n    at b (http://x/:1:1)", 'TypeError'),
  }), "Uncaught (in promise) TypeError: Cannot read properties of null (reading 'x')")
  t.equal(exceptionText({ exceptionId: 1, text: 'Uncaught', lineNumber: 0, columnNumber: 0, exception: { type: 'string', value: 'plain' } }), 'Uncaught plain')
  t.equal(exceptionText({
    exceptionId: 1, text: 'Uncaught SyntaxError: Unexpected token \'}\'', lineNumber: 0, columnNumber: 0,
    exception: err('SyntaxError: Unexpected token \'}\'', 'SyntaxError'),
  }), 'Uncaught SyntaxError: Unexpected token \'}\'')
  t.equal(exceptionText({ exceptionId: 1, text: 'Script error.', lineNumber: 0, columnNumber: 0 }), 'Script error.')
  t.equal(errorMessage('Error: two\nlines\n    at x (y:1:1)'), 'Error: two\nlines')
})

t.test('stack traces keep CDP camelCase and drop parentId', async (t) => {
  t.same(stackTraceOf({
    callFrames: [{ functionName: 'f', scriptId: '3', url: 'http://x/a.js', lineNumber: 1, columnNumber: 2 }],
    parent: { description: 'Promise.then', callFrames: [], parentId: { id: '1' } },
  }), {
    callFrames: [{ functionName: 'f', scriptId: '3', url: 'http://x/a.js', lineNumber: 1, columnNumber: 2 }],
    parent: { description: 'Promise.then', callFrames: [] },
  })
  t.equal(stackTraceOf(undefined), undefined)
})
