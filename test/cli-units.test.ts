// The pure parts of the CLI: SSE parsing, argument/connection rules, formatting, progress, multipart.
import t from 'tap'
import { writeFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import busboy from 'busboy'
import { SseParser, type SseMessage } from '../src/cli/sse.js'
import { connectionOf, helpText, listOption, parseCommand } from '../src/cli/args.js'
import { formatEnvelope } from '../src/cli/format.js'
import { progress, formatBytes } from '../src/cli/progress.js'
import { multipartBody } from '../src/cli/multipart.js'
import { useColor } from '../src/cli/io.js'
import { readCommand } from '../src/cli/read.js'
import type { Envelope } from '../src/events/index.js'
import { tempDir } from './helpers/store.js'

t.test('SSE parser: fields, comments, multi-line data, any line ending, any chunking', async t => {
  const stream =
    ': keepalive\n\nid: 1\ndata: {"a":1}\n\nid:2\r\ndata: x\r\ndata: y\r\n\r\nevent: e\rdata\r\r: c\nid: 3\ndata: z\n\n'
  const expected: SseMessage[] = [
    { id: '1', data: '{"a":1}' },
    { id: '2', data: 'x\ny' },
    { id: '2', event: 'e', data: '' },
    { id: '3', data: 'z' },
  ]
  for (const size of [1, 2, 3, 7, stream.length]) {
    const got: SseMessage[] = []
    const p = new SseParser(m => got.push(m))
    for (let i = 0; i < stream.length; i += size) p.push(stream.slice(i, i + size))
    t.same(got, expected, `chunks of ${size}`)
  }
  const got: SseMessage[] = []
  const p = new SseParser(m => got.push(m))
  p.push('data: incomplete')
  t.same(got, [], 'nothing before the blank line')
})

t.test('connection options: flag, then env, then the generated token file', async t => {
  const dir = await tempDir(t)
  await mkdir(join(dir, 'd'))
  await writeFile(join(dir, 'd', 'token'), 'from-file\n')
  const parsed = (argv: string[]) => parseCommand(readCommand.spec, argv).values
  // The no-token case points the data dir at an empty temp dir: the default ./data is the checkout's,
  // where `bash scripts/start.sh` leaves a real token (the test must not depend on it).
  t.same(connectionOf(parsed([]), { BROWSER_TELEMETRY_DATA_DIR: join(dir, 'empty') }), {
    url: 'http://127.0.0.1:10222',
    token: undefined,
    browserId: undefined,
  })
  t.same(
    connectionOf(parsed([]), {
      BROWSER_TELEMETRY_URL: 'http://h:1/',
      BROWSER_TELEMETRY_TOKEN: 'e',
      BROWSER_TELEMETRY_BROWSER_ID: 'b',
    }),
    { url: 'http://h:1', token: 'e', browserId: 'b' },
  )
  t.same(
    connectionOf(parsed(['--url', 'http://x:2', '--token', 'f', '--browser-id', 'c']), {
      BROWSER_TELEMETRY_URL: 'http://h:1',
      BROWSER_TELEMETRY_TOKEN: 'e',
    }),
    { url: 'http://x:2', token: 'f', browserId: 'c' },
  )
  t.equal(connectionOf(parsed([]), { BROWSER_TELEMETRY_DATA_DIR: join(dir, 'd') }).token, 'from-file')
  t.throws(() => connectionOf(parsed(['--url', 'localhost:1']), {}), {
    message: '--url: expected http://host:port, got "localhost:1"',
    code: 2,
  })
  t.same(listOption(['a,b', ' c ', '']), ['a', 'b', 'c'])
  t.throws(() => parseCommand(readCommand.spec, ['extra']), {
    message: 'unexpected argument "extra" (see --help)',
    code: 2,
  })
  t.match(
    helpText(readCommand.spec),
    /^Usage: browser-telemetry read \[options\]\n\n.*\n\nOptions:\n {6}--since TIME +Window start/s,
  )
  t.match(helpText(readCommand.spec), /--category NAME +Only these categories.*\(repeatable\)/)
})

t.test('colour only on a terminal, NO_COLOR wins, FORCE_COLOR forces', async t => {
  t.equal(useColor({ write: () => true, isTTY: true }, {}), true)
  t.equal(useColor({ write: () => true, isTTY: true }, { NO_COLOR: '1' }), false)
  t.equal(useColor({ write: () => true }, {}), false)
  t.equal(useColor({ write: () => true }, { FORCE_COLOR: '1' }), true)
})

t.test('readable lines per event type', async t => {
  const ts = Date.UTC(2026, 0, 2, 3, 4, 5, 678) * 1000
  const env = (seq: number, type: string, category: string, data: Record<string, unknown>, extra = {}) =>
    ({ seq, event: { ts, type, category, source: { kind: 'cdp' }, data, ...extra } }) as unknown as Envelope
  t.equal(
    formatEnvelope(env(7, 'console_log', 'console', { level: 'warn', text: 'a\n  b', args: [] }), false),
    '03:04:05.678 #7 console     console_log [warn] a ⏎ b',
  )
  t.equal(
    formatEnvelope(
      env(8, 'network_loading_failed', 'network', { request_id: 'r', error_text: 'net::ERR_ABORTED', canceled: true }),
      false,
    ),
    '03:04:05.678 #8 network     network_loading_failed net::ERR_ABORTED (canceled) request r',
  )
  t.equal(
    formatEnvelope(env(9, 'monitor_reconnected', 'monitor', { reconnect_duration_ms: 120 }), false),
    '03:04:05.678 #9 monitor     monitor_reconnected reconnect_duration_ms=120',
  )
  t.equal(
    formatEnvelope(
      env(10, 'page_load', 'page', { url: 'http://a/', cdp_timestamp: 1.5, nav_seq: 2 }, { truncated: true }),
      false,
    ),
    '03:04:05.678 #10 page        page_load cdp_timestamp=1.5 http://a/ [truncated]',
  )
  t.equal(
    formatEnvelope(
      env(11, 'network_response', 'network', {
        request_id: 'r',
        status: 404,
        status_text: 'NF',
        headers: {},
        mime_type: 'text/html',
        url: 'http://a/x',
      }),
      true,
    ),
    '\x1b[90m03:04:05.678\x1b[0m \x1b[90m#11\x1b[0m \x1b[36mnetwork    \x1b[0m \x1b[1mnetwork_response\x1b[0m \x1b[31m404\x1b[0m http://a/x text/html',
  )
})

t.test('progress: a self-overwriting line on a terminal, nothing otherwise', async t => {
  let tty = ''
  const bar = progress(
    {
      write: s => {
        tty += String(s)
        return true
      },
      isTTY: true,
    },
    0,
  )
  bar.update('read 100 events')
  bar.update('read 200 events')
  bar.done()
  t.equal(tty, '\r\x1b[2Kread 100 events\r\x1b[2Kread 200 events\r\x1b[2K')
  let pipe = ''
  const quiet = progress(
    {
      write: s => {
        pipe += String(s)
        return true
      },
    },
    0,
  )
  quiet.update('x')
  quiet.done()
  t.equal(pipe, '')
  t.equal(formatBytes(1536), '1.5 KiB')
  t.equal(formatBytes(3 * 1024 * 1024), '3.0 MiB')
})

t.test('multipart body: exact length, parts as a form parser reads them, byte counter', async t => {
  const dir = await tempDir(t)
  const file = join(dir, 'a "quoted".zip')
  const content = Buffer.alloc(300_000, 7)
  await writeFile(file, content)
  const counts: number[] = []
  const body = await multipartBody(
    [
      { name: 'dest_path', value: '/x/ü' },
      { name: 'zip_file', file, contentType: 'application/zip' },
    ],
    sent => counts.push(sent),
  )
  const chunks: Buffer[] = []
  for await (const c of Readable.fromWeb(body.stream as never)) chunks.push(c as Buffer)
  const raw = Buffer.concat(chunks)
  t.equal(raw.length, body.length)
  t.equal(counts.at(-1), body.length)
  const fields: Record<string, string> = {}
  const files: { name: string; filename: string; mimeType: string; bytes: Buffer }[] = []
  await new Promise<void>((resolve, reject) => {
    const bb = busboy({ headers: { 'content-type': body.contentType }, defParamCharset: 'utf8' })
    bb.on('field', (name, value) => {
      fields[name] = value
    })
    bb.on('file', (name, stream, info) => {
      const parts: Buffer[] = []
      stream
        .on('data', (d: Buffer) => parts.push(d))
        .on('end', () =>
          files.push({ name, filename: info.filename ?? '', mimeType: info.mimeType, bytes: Buffer.concat(parts) }),
        )
    })
    bb.on('close', resolve).on('error', reject)
    bb.end(raw)
  })
  t.same(fields, { dest_path: '/x/ü' })
  t.equal(files.length, 1)
  t.equal(files[0]!.name, 'zip_file')
  t.equal(files[0]!.filename, 'a %22quoted%22.zip')
  t.equal(files[0]!.mimeType, 'application/zip')
  t.ok(files[0]!.bytes.equals(content))
  await t.rejects(multipartBody([{ name: 'f', file: join(dir, 'missing') }]), {
    message: `cannot read ${join(dir, 'missing')}: ENOENT`,
  })
  await t.rejects(multipartBody([{ name: 'f', file: dir }]), { message: `${dir} is not a regular file` })
})
