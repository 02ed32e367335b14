// The client commands against a real daemon (startDaemon in-process, --no-browser, temp data dir).
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import harValidator from 'har-validator'
import { startDaemon, type DaemonHandle } from '../src/main.js'
import { parseServeConfig } from '../src/config/config.js'
import { silentLogger } from '../src/log.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { accepted, tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'
import { closedPort } from './helpers/ports.js'

const TOKEN = 'cli-test-token'

interface Captured {
  io: CliIO
  out: () => string
  err: () => string
  abort: AbortController
}
function capture(env: NodeJS.ProcessEnv = {}): Captured {
  let out = ''
  let err = ''
  const abort = new AbortController()
  const io: CliIO = {
    stdout: {
      write: c => {
        out += typeof c === 'string' ? c : Buffer.from(c).toString()
        return true
      },
    },
    stderr: {
      write: c => {
        err += typeof c === 'string' ? c : Buffer.from(c).toString()
        return true
      },
    },
    env,
    signal: abort.signal,
  }
  return { io, out: () => out, err: () => err, abort }
}

async function daemon(t: { teardown(fn: () => unknown): void }, dataDir: string, port = 0): Promise<DaemonHandle> {
  const config = parseServeConfig(
    [
      '--listen',
      `127.0.0.1:${port}`,
      '--data-dir',
      dataDir,
      '--no-browser',
      '--token',
      TOKEN,
      '--proxy-listen',
      'off',
      '--stream-keepalive',
      '1s',
    ],
    {},
  )
  const handle = await startDaemon(config, { logger: silentLogger, announce: () => {} })
  t.teardown(() => handle.close())
  return handle
}

const ctx = {
  session_id: 'S1',
  target_id: 'T1',
  target_type: 'page' as const,
  frame_id: 'F1',
  loader_id: 'L1',
  nav_seq: 1,
}

async function emitAll(h: DaemonHandle, inputs: EventInput[]): Promise<void> {
  const results = inputs.map(i => accepted(h.pipeline.emit(i)))
  await Promise.all(results.map(r => r.committed))
}

function networkExchange(id: string, url: string, status: number): EventInput[] {
  return [
    {
      type: 'network_request',
      source: { kind: 'cdp', event: 'Network.requestWillBeSent' },
      data: { ...ctx, url, request_id: id, method: 'GET', headers: { Accept: '*/*' }, resource_type: 'Fetch' },
    },
    {
      type: 'network_response',
      source: { kind: 'cdp', event: 'Network.loadingFinished' },
      data: {
        ...ctx,
        url,
        request_id: id,
        method: 'GET',
        status,
        status_text: 'OK',
        headers: { 'Content-Type': 'application/json' },
        mime_type: 'application/json',
        body: `{"id":"${id}"}`,
      },
    },
  ]
}

/** The stored envelopes, exactly as the log holds them (the NDJSON the CLI must print). */
async function storedLines(h: DaemonHandle, category?: string): Promise<string[]> {
  const { records } = await h.log.read({
    order: 'asc',
    limit: 10_000,
    ...(category ? { categories: new Set([category as never]) } : {}),
  })
  return records.map(r => r.json)
}

t.test('read, har and tail against a running daemon', async t => {
  const dir = await tempDir(t)
  const h = await daemon(t, join(dir, 'data'))
  const conn = ['--url', h.url, '--token', TOKEN]

  const inputs: EventInput[] = [
    {
      type: 'page_navigation',
      data: {
        url: 'http://app.test/',
        frame_id: 'F1',
        loader_id: 'L1',
        session_id: 'S1',
        target_id: 'T1',
        target_type: 'page',
      },
    },
    ...networkExchange('R1', 'http://app.test/api/1', 200),
  ]
  for (let i = 0; i < 150; i++)
    inputs.push({ type: 'console_log', data: { ...ctx, level: 'log', text: `line ${i}`, args: [`line ${i}`] } })
  inputs.push(...networkExchange('R2', 'http://app.test/api/2', 404))
  inputs.push({
    type: 'network_request',
    data: { ...ctx, url: 'http://app.test/down', request_id: 'R3', method: 'POST', headers: {}, post_data: 'x=1' },
  })
  inputs.push({
    type: 'network_loading_failed',
    data: {
      ...ctx,
      url: 'http://app.test/down',
      request_id: 'R3',
      error_text: 'net::ERR_CONNECTION_REFUSED',
      canceled: false,
    },
  })
  await emitAll(h, inputs)
  const all = await storedLines(h)
  t.equal(all.length, 157)

  await t.test('read prints every envelope of the window as NDJSON, byte for byte, across pages', async t => {
    const c = capture()
    t.equal(await clientCommands.read!.run([...conn, '--since', '1h'], c.io), 0, c.err())
    t.same(c.out().trimEnd().split('\n'), all)
    t.equal(c.err(), '', 'no progress line when stderr is not a terminal')
  })

  await t.test('read takes URL and token from the environment and filters by category, order and limit', async t => {
    const env = {
      BROWSER_TELEMETRY_URL: h.url,
      BROWSER_TELEMETRY_TOKEN: TOKEN,
      BROWSER_TELEMETRY_BROWSER_ID: h.browserId,
    }
    const c = capture(env)
    t.equal(await clientCommands.read!.run(['--category', 'network', '--since', '1h'], c.io), 0, c.err())
    t.same(c.out().trimEnd().split('\n'), await storedLines(h, 'network'))
    const d = capture(env)
    t.equal(await clientCommands.read!.run(['--order', 'desc', '--limit', '3'], d.io), 0, d.err())
    t.same(d.out().trimEnd().split('\n'), all.slice(-3).reverse())
    const e = capture(env)
    t.equal(
      await clientCommands.read!.run(['--category', 'console,page', '--limit', '120', '--since', '1h'], e.io),
      0,
      e.err(),
    )
    const lines = e.out().trimEnd().split('\n')
    t.equal(lines.length, 120)
    t.same(lines, all.filter(l => /"category":"(console|page)"/.test(l)).slice(0, 120))
  })

  await t.test('errors are one line on stderr with a non-zero exit code', async t => {
    const bad = capture()
    t.equal(await clientCommands.read!.run(['--url', h.url, '--token', 'wrong'], bad.io), 1)
    t.equal(bad.err(), 'browser-telemetry read: 401 unauthorized: unknown bearer token\n')
    const refusing = await closedPort()
    const down = capture()
    t.equal(await clientCommands.read!.run(['--url', `http://127.0.0.1:${refusing}`, '--token', TOKEN], down.io), 1)
    t.equal(
      down.err(),
      `browser-telemetry read: cannot reach http://127.0.0.1:${refusing} (ECONNREFUSED); is the daemon running? (--url / BROWSER_TELEMETRY_URL)\n`,
    )
    const usage = capture()
    t.equal(await clientCommands.read!.run([...conn, '--order', 'sideways'], usage.io), 2)
    t.equal(usage.err(), 'browser-telemetry read: --order: expected asc or desc, got "sideways"\n')
    const server400 = capture()
    t.equal(await clientCommands.read!.run([...conn, '--order', 'desc', '--since', '5m'], server400.io), 1)
    t.match(server400.err(), /^browser-telemetry read: 400 bad_request: [^\n]+\n$/)
    const unknownBrowser = capture()
    t.equal(await clientCommands.read!.run([...conn, '--browser-id', 'nope'], unknownBrowser.io), 1)
    t.match(unknownBrowser.err(), /^browser-telemetry read: 404 not_found: /)
    const flag = capture()
    t.equal(await clientCommands.tail!.run([...conn, '--bogus'], flag.io), 2)
    t.match(flag.err(), /^browser-telemetry tail: Unknown option '--bogus'/)
  })

  await t.test('every command has --help', async t => {
    for (const [name, cmd] of Object.entries(clientCommands)) {
      const c = capture()
      t.equal(await cmd.run(['--help'], c.io), 0, name)
      t.match(c.out(), /^Usage: browser-telemetry /, name)
    }
    for (const sub of ['upload', 'list', 'get', 'download', 'delete']) {
      const c = capture()
      t.equal(await clientCommands.extension!.run([sub, '--help'], c.io), 0, sub)
      t.match(c.out(), `Usage: browser-telemetry extension ${sub} `)
    }
  })

  await t.test('har writes a valid HAR 1.2 file with one entry per request', async t => {
    const file = join(dir, 'out.har')
    const c = capture()
    t.equal(await clientCommands.har!.run([...conn, '--since', '1h', '-o', file], c.io), 0, c.err())
    t.equal(c.err(), `wrote 3 entries, 1 pages to ${file}\n`)
    const har = JSON.parse(await readFile(file, 'utf8'))
    await t.resolves(harValidator.har(har))
    t.same(
      har.log.entries.map(
        (e: {
          request: { method: string; url: string }
          response: { status: number; _error?: string; content: { text?: string } }
        }) => [e.request.method, e.request.url, e.response.status, e.response._error ?? e.response.content.text],
      ),
      [
        ['GET', 'http://app.test/api/1', 200, '{"id":"R1"}'],
        ['GET', 'http://app.test/api/2', 404, '{"id":"R2"}'],
        ['POST', 'http://app.test/down', 0, 'net::ERR_CONNECTION_REFUSED'],
      ],
    )
    t.equal(har.log.pages.length, 1)
    t.equal(har.log.entries[0].pageref, har.log.pages[0].id)
  })

  await t.test('tail --json --replay prints the stored events then live ones; filters apply', async t => {
    const c = capture()
    const done = clientCommands.tail!.run(
      [...conn, '--json', '--replay', '--type', 'network_response,network_loading_failed'],
      c.io,
    )
    await waitFor(() => c.out().split('\n').length > 3, 15_000, 'replayed events')
    await emitAll(h, networkExchange('R4', 'http://app.test/api/4', 201))
    await waitFor(() => c.out().includes('"R4"'), 15_000, 'live event')
    c.abort.abort()
    t.equal(await done, 0)
    const lines = c.out().trimEnd().split('\n')
    const expected = (await storedLines(h, 'network')).filter(l => /"type":"network_(response|loading_failed)"/.test(l))
    t.same(lines, expected)
  })

  await t.test('tail readable lines: time, seq, category, type and a summary; --count stops it', async t => {
    const c = capture()
    const lastSeq = (await h.log.read({ order: 'desc', limit: 1 })).records[0]!.seq
    t.equal(
      await clientCommands.tail!.run([...conn, '--after-seq', String(lastSeq - 2), '--count', '2'], c.io),
      0,
      c.err(),
    )
    const lines = c.out().trimEnd().split('\n')
    t.equal(lines.length, 2)
    t.match(
      lines[0],
      new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} #${lastSeq - 1} network {5}network_request GET http://app\\.test/api/4$`,
      ),
    )
    t.match(
      lines[1],
      new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} #${lastSeq} network {5}network_response 201 GET http://app\\.test/api/4 application/json$`,
      ),
    )
    t.notMatch(c.out(), new RegExp(String.fromCharCode(27) + '\\['), 'no colour when stdout is not a terminal')
  })
})

t.test('tail resumes after a daemon restart with Last-Event-ID: no duplicate, no hole', async t => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const first = await daemon(t, dataDir)
  const port = Number(new URL(first.url).port)
  const conn = ['--url', first.url, '--token', TOKEN, '--browser-id', first.browserId]
  const log = (h: DaemonHandle, from: number, n: number) =>
    emitAll(
      h,
      Array.from(
        { length: n },
        (_, i) =>
          ({ type: 'console_log', data: { ...ctx, level: 'log', text: `e${from + i}`, args: [] } }) as EventInput,
      ),
    )

  const c = capture()
  const done = clientCommands.tail!.run([...conn, '--json'], c.io)
  // tail asks for new events only: wait until its stream is open before emitting.
  await waitFor(() => first.api.streams.stats.open === 1, 15_000, 'stream open')
  await log(first, 0, 3)
  await waitFor(() => c.out().split('\n').length === 4, 15_000, 'first three')
  await first.close()
  await waitFor(() => /retrying/.test(c.err()), 15_000, 'tail notices the daemon is gone')
  const second = await daemon(t, dataDir, port)
  await log(second, 3, 3) // emitted before tail reconnects: it must come from the stored backlog
  await waitFor(() => second.api.streams.stats.open === 1, 30_000, 'tail reconnected')
  await log(second, 6, 2)
  await waitFor(() => c.out().split('\n').length === 9, 15_000, 'all eight')
  c.abort.abort()
  t.equal(await done, 0)
  const got = c
    .out()
    .trimEnd()
    .split('\n')
    .map(l => JSON.parse(l) as { seq: number; event: { data: { text: string } } })
  t.same(
    got.map(e => e.event.data.text),
    ['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7'],
  )
  t.same(
    got.map(e => e.seq),
    [1, 2, 3, 4, 5, 6, 7, 8],
    'clean restart: no gap',
  )
  t.match(c.err(), /tail: reconnected, resuming after seq 3\n/)
})
