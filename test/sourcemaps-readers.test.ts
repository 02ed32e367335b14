// How readers show mapped frames: the viewer's stack lines (original first, raw one click away), a
// bundle's sourcemaps/ applied in the page with no daemon, the CLI's tail line, console.txt, the OTLP
// stack text, and the sourcemap command's flags (its --url is the script's, --api-url the daemon's).
import t from 'tap'
import { hasOriginalFrames, stackLines } from '../src/viewer/model.js'
import { openBundle } from '../src/viewer/bundle-source.js'
import { formatEnvelope } from '../src/cli/format.js'
import { exceptionLocation } from '../src/events/location.js'
import { consoleLine } from '../src/bundle/console-text.js'
import { formatStack } from '../src/otlp/model.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import type { Envelope, StackTrace } from '../src/events/index.js'
import { yazlZip } from './helpers/zip.js'

const URL_ = 'https://shop.example/app.min.js'
const mapped: StackTrace = {
  callFrames: [
    {
      functionName: 't',
      scriptId: '1',
      url: URL_,
      lineNumber: 0,
      columnNumber: 33,
      original: { source: '../src/util.ts', line: 3, column: 11, name: 'innerMost' },
    },
    {
      functionName: 'total',
      scriptId: '1',
      url: URL_,
      lineNumber: 0,
      columnNumber: 102,
      original: { source: '../src/checkout.ts', line: 5, column: 12 },
    },
    { functionName: 'x', scriptId: '1', url: 'https://cdn.example/lib.js', lineNumber: 9, columnNumber: 0 },
  ],
  parent: {
    description: 'cause: TypeError: bad',
    callFrames: [{ functionName: 'e', scriptId: '1', url: URL_, lineNumber: 0, columnNumber: 1 }],
  },
}
const env = (type: 'console_error' | 'console_log', data: object): Envelope =>
  ({
    seq: 7,
    event: { ts: 1_700_000_000_000_000, type, category: 'console', source: { kind: 'cdp' }, data },
  }) as Envelope

t.test('viewer: original frames first, raw ones on request, causes as separators', async t => {
  t.ok(hasOriginalFrames(mapped))
  t.notOk(
    hasOriginalFrames({
      callFrames: [{ functionName: 'a', scriptId: '1', url: URL_, lineNumber: 0, columnNumber: 0 }],
    }),
  )
  t.same(
    stackLines(mapped, false).map(l => (l.kind === 'frame' ? [l.name, l.location, l.mapped] : l.text)),
    [
      ['innerMost', '../src/util.ts:3:11', true],
      ['total', '../src/checkout.ts:5:12', true],
      ['x', 'https://cdn.example/lib.js:10:1', false],
      'cause: TypeError: bad',
      ['e', `${URL_}:1:2`, false],
    ],
  )
  t.same(
    stackLines(mapped, true).map(l => (l.kind === 'frame' ? [l.name, l.location, l.href ?? null] : l.text)),
    [
      ['t', `${URL_}:1:34`, URL_],
      ['total', `${URL_}:1:103`, URL_],
      ['x', 'https://cdn.example/lib.js:10:1', 'https://cdn.example/lib.js'],
      'cause: TypeError: bad',
      ['e', `${URL_}:1:2`, URL_],
    ],
  )
})

t.test('a bundle opened in the page maps its stacks with its sourcemaps/', async t => {
  const raw = { callFrames: [{ functionName: 'a', scriptId: '1', url: URL_, lineNumber: 0, columnNumber: 0 }] }
  const line = (seq: number, data: object) =>
    JSON.stringify({
      seq,
      event: { ts: seq, type: 'console_error', category: 'console', source: { kind: 'cdp' }, data },
    })
  const map = JSON.stringify({ version: 3, sources: ['src/cart.ts'], names: [], mappings: 'AAEE' })
  const zip = await yazlZip([
    {
      name: 'events.ndjson',
      data: [line(1, { text: 'a', stack_trace: raw }), line(2, { text: 'b', stack_trace: mapped })].join('\n'),
    },
    { name: 'sourcemaps/abc.map', data: map },
    { name: 'sourcemaps/bad.map', data: '{"version":3,"sources":[],"mappings":"!"}' },
    {
      name: 'sourcemaps/index.json',
      data: JSON.stringify([
        { file: 'sourcemaps/abc.map', scripts: [URL_] },
        { file: 'sourcemaps/bad.map', scripts: ['https://other.example/x.js'] },
      ]),
    },
  ])
  const b = await openBundle(new Blob([new Uint8Array(zip)]), 's.zip')
  const frames = b.events.map(e => (e.event.data as { stack_trace: StackTrace }).stack_trace.callFrames[0])
  t.same(frames[0]!.original, { source: 'src/cart.ts', line: 3, column: 3 }, 'mapped in the page')
  t.same(frames[1], mapped.callFrames[0], 'already mapped: left as it is')
  t.same(b.warnings.slice(1), ['sourcemaps/bad.map could not be used: "!" at 0 is not a VLQ digit'])
  t.match(b.warnings[0], /^manifest\.json is missing/)
})

t.test('tail, console.txt and the OTLP stack text place errors where they were written', async t => {
  const error = env('console_error', {
    text: 'Uncaught TypeError: bad value 10',
    source_url: URL_,
    line: 0,
    stack_trace: mapped,
  })
  t.match(
    formatEnvelope(error, false),
    / console_error Uncaught TypeError: bad value 10 \(at innerMost \.\.\/src\/util\.ts:3:11\)$/,
  )
  const warn = env('console_log', {
    level: 'warning',
    text: 'low',
    args: ['low'],
    stack_trace: { callFrames: [mapped.callFrames[1]!] },
  })
  t.match(formatEnvelope(warn, false), /\[warning\] low \(at total \.\.\/src\/checkout\.ts:5:12\)$/)
  // No map: the stored position is CDP's 0-based line 0, column 1803355; people read 1:1803356.
  const unmapped = env('console_error', {
    text: 'boom',
    source_url: URL_,
    line: 0,
    column: 1803355,
    stack_trace: { callFrames: [] },
  })
  t.match(formatEnvelope(unmapped, false), /boom \(https:\/\/shop\.example\/app\.min\.js:1:1803356\)$/)
  t.match(consoleLine(unmapped), /boom \(https:\/\/shop\.example\/app\.min\.js:1:1803356\)$/)
  t.equal(exceptionLocation({ source_url: URL_, line: 29 }), `${URL_}:30`, 'a line without a column')
  t.match(consoleLine(error), /Uncaught TypeError: bad value 10 \(\.\.\/src\/util\.ts:3:11\)$/)
  t.equal(
    formatStack(mapped),
    [
      '    at innerMost (../src/util.ts:3:11)',
      '    at total (../src/checkout.ts:5:12)',
      '    at x (https://cdn.example/lib.js:10:1)',
      '-- cause: TypeError: bad --',
      `    at e (${URL_}:1:2)`,
    ].join('\n'),
  )
})

t.test('sourcemap command: --url is the script, --api-url the daemon; usage errors', async t => {
  const run = async (argv: string[]) => {
    let out = ''
    let err = ''
    const io: CliIO = {
      stdout: { write: c => ((out += String(c)), true) },
      stderr: { write: c => ((err += String(c)), true) },
      env: {},
    }
    const code = await clientCommands.sourcemap!.run(argv, io)
    return { code, out, err }
  }
  const help = await run(['upload', '--help'])
  t.equal(help.code, 0)
  t.match(help.out, /Usage: browser-telemetry sourcemap upload \[options\] <file\.map>/)
  t.match(help.out, /--url URL +The script's URL exactly as stack frames name it/)
  t.match(
    help.out,
    /--api-url URL +Daemon API base URL \(default http:\/\/127\.0\.0\.1:10222\) \[BROWSER_TELEMETRY_URL\]/,
  )
  t.equal((await run([])).code, 2)
  t.match((await run(['nope'])).err, /unknown command "nope" \(upload, list, delete\)/)
  const del = await run(['delete'])
  t.same([del.code, del.out], [2, ''])
  t.match(del.err, /^browser-telemetry sourcemap delete: give --url or --debug-id \(one of the two\)/)
  const missing = await run(['upload', '/nonexistent.map', '--api-url', 'http://127.0.0.1:1'])
  t.same(missing, { code: 1, out: '', err: 'browser-telemetry sourcemap upload: /nonexistent.map: ENOENT\n' })
})
