// Source-mapped stacks against a real headless Chromium: a small app built with esbuild into five
// minified bundles (external map, inline map, Debug-ID map, upload-only map, SourceMap header) fails
// from nested functions, with causes; the exact original source, line, column and name of every
// frame is asserted in the events API, an SSE replay, the debug bundle and an OTLP export.
import { readSseUntil } from './helpers/sse.js'
import t, { type Test } from 'tap'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import type { Sink } from '../src/sink/sink.js'
import type { StackTrace } from '../src/events/index.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { startServer } from './helpers/http.js'
import { tempDir } from './helpers/store.js'
import { startReceiver } from './helpers/otlp-receiver.js'
import { unzipAll } from './helpers/bundle.js'
import { buildApp, DEBUG_ID } from './helpers/sourcemap-app.js'

t.setTimeout(170_000)

const TOKEN = 'sourcemaps-token'

interface Env {
  seq: number
  event: { type: string; category: string; source: { event?: string }; data: Record<string, unknown> }
}

/** A stack as asserted: each entry's description, and each frame's original position (null: unmapped). */
function originals(stack: StackTrace | undefined): unknown[] {
  const out: unknown[] = []
  for (let s = stack, d = 0; s && d < 10; s = s.parent, d++) {
    if (d > 0) out.push(`-- ${s.description ?? ''}`)
    for (const f of s.callFrames) out.push(f.original ?? null)
  }
  return out
}

const o = (source: string, line: number, column: number, name?: string) => ({
  source,
  line,
  column,
  ...(name ? { name } : {}),
})

// What every reader must show. Sources are relative to dist/, as esbuild writes them; lines and
// columns are 1-based positions in test/helpers/sourcemap-app.ts's sources; a frame's name is its
// function's, taken from the call site one frame down (the outermost frame of a chain has none).
const causeChain = (value: number, ...caller: unknown[]) => [
  `-- cause: TypeError: bad value ${value}`,
  o('../src/util.ts', 3, 11, 'innerMost'),
  o('../src/checkout.ts', 5, 12), // c.total(n): a property, which the map names nothing
  o('../src/checkout.ts', 11, 12, 'middleLayer'),
  o('../src/checkout.ts', 16, 12, 'outerEntry'),
  ...caller,
]
const EXPECTED: Record<string, unknown[]> = {
  // Uncaught error with a cause (external map, named by the bundle's comment).
  'Uncaught Error: checkout failed': [
    o('../src/checkout.ts', 18, 11, 'outerEntry'),
    o('../src/external.ts', 4, 3),
    ...causeChain(10, o('../src/external.ts', 4, 3)),
  ],
  // Unhandled rejection (inline map); the last two frames are the bundle's own IIFE and its call.
  'Uncaught (in promise) RangeError: cart 404 missing': [
    o('../src/inline.ts', 2, 10, 'makeError'),
    o('../src/inline.ts', 6, 25, 'loadCart'),
    o('../src/inline.ts', 10, 8, 'startInline'),
    o('../src/inline.ts', 13, 1),
    o('../src/inline.ts', 13, 13),
  ],
  // console.error(err) with a cause (Debug-ID map, uploaded without a URL): where the logged error
  // was made first, then its causes, then where console.error was called.
  'checkout error': [
    o('../src/checkout.ts', 18, 11, 'outerEntry'),
    o('../src/debugid.ts', 5, 5, 'reportFailure'),
    o('../src/debugid.ts', 11, 1),
    o('../src/debugid.ts', 11, 15),
    ...causeChain(
      18,
      o('../src/debugid.ts', 5, 5, 'reportFailure'),
      o('../src/debugid.ts', 11, 1),
      o('../src/debugid.ts', 11, 15),
    ),
    '-- console.error',
    o('../src/debugid.ts', 7, 13, 'reportFailure'),
    o('../src/debugid.ts', 11, 1),
    o('../src/debugid.ts', 11, 15),
  ],
  // console.warn (a map uploaded only after the event was stored).
  'low stock: 2': [
    o('../src/uploaded.ts', 2, 11, 'warnLow'),
    o('../src/uploaded.ts', 6, 3, 'checkStock'),
    o('../src/uploaded.ts', 9, 1),
    o('../src/uploaded.ts', 9, 12),
  ],
  // console.assert (map named by the SourceMap response header).
  'total too low': [
    o('../src/header.ts', 2, 11, 'assertTotals'),
    o('../src/header.ts', 6, 3, 'verifyCart'),
    o('../src/header.ts', 9, 1),
    o('../src/header.ts', 9, 12),
  ],
}
const SCRIPT_OF: Record<string, string> = {
  'Uncaught Error: checkout failed': 'external',
  'Uncaught (in promise) RangeError: cart 404 missing': 'inline',
  'checkout error': 'debugid',
  'low stock: 2': 'uploaded',
  'total too low': 'header',
}

/** The console events of one page load, by text. */
function byText(envs: Env[], navSeq: number, targetId?: string): Map<string, Env> {
  const out = new Map<string, Env>()
  for (const e of envs) {
    const text = e.event.data.text as string
    if (!(text in EXPECTED) || e.event.data.nav_seq !== navSeq) continue
    if (targetId !== undefined && e.event.data.target_id !== targetId) continue
    out.set(text, e)
  }
  return out
}

function checkStacks(t: Test, events: Map<string, Env>, where: string, siteUrl: string): void {
  t.same([...events.keys()].sort(), Object.keys(EXPECTED).sort(), `${where}: the five failures`)
  for (const [text, e] of events) {
    const stack = e.event.data.stack_trace as StackTrace
    t.same(originals(stack), EXPECTED[text], `${where}: ${text}`)
    // The raw frames stay as Chromium reported them: the minified bundle, line 0 (one line).
    const top = stack.callFrames[0]!
    t.equal(top.url, `${siteUrl}dist/${SCRIPT_OF[text]}.min.js`, `${where}: ${text}: raw URL kept`)
    t.equal(top.lineNumber, 0, `${where}: ${text}: raw line kept`)
  }
}

t.test('frames mapped by every reader: events API, SSE replay, bundle, OTLP', async t => {
  const dir = await tempDir(t)
  const app = await buildApp(join(dir, 'app'))
  const served = new Map<string, number>()
  const site = await startServer(t, {
    '/page.html': `<!doctype html><title>shop</title>
<script src="/dist/external.min.js"></script>
<script src="/dist/inline.min.js"></script>
<script src="/dist/debugid.min.js"></script>
<script src="/dist/uploaded.min.js"></script>
<script src="/dist/header.min.js"></script>`,
  })
  for (const [path, body] of app.files)
    site.route(path, (_req, res) => {
      served.set(path, (served.get(path) ?? 0) + 1)
      res.writeHead(200, {
        'content-type': path.endsWith('.js') ? 'text/javascript' : 'application/json',
        'cache-control': 'no-store',
        ...(path === '/dist/header.min.js' ? { SourceMap: '/maps/header.map' } : {}),
      })
      res.end(body)
    })
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      join(dir, 'data'),
      '--token',
      TOKEN,
      '--proxy-listen',
      'off',
      '--otlp-endpoint',
      receiver.url,
      '--otlp-signals',
      'logs',
    ],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
  t.teardown(() => d.close())
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${d.url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...init.headers } })
  const base = `/browsers/${d.browserId}`

  // The Debug-ID map is uploaded first, without a URL: its script is matched by the ID it carries.
  const put = await api(`${base}/sourcemaps`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: new Uint8Array(app.debugIdMap),
  })
  t.equal(put.status, 201)
  t.match(await put.json(), { debug_id: DEBUG_ID, bytes: app.debugIdMap.length, uploaded_at: String })

  // Four scripts learn their maps in the background (the fifth has none until it is uploaded).
  const fourLearned = new Promise<void>(resolve => {
    const off = d.sourceMaps.onLearned(() => {
      if (d.sourceMaps.stats.learned < 4) return
      off()
      resolve()
    })
  })
  await d.monitor!.openPage(`${site.url}page.html`)
  await fourLearned
  t.equal(served.get('/dist/debugid.min.js.map') ?? 0, 0, 'the map the Debug-ID script names was never fetched')
  t.equal(served.get('/dist/external.min.js.map'), 1, 'the external map fetched once')
  t.equal(served.get('/maps/header.map'), 1, 'the header-named map fetched once')

  // The upload-only map goes up after its event was stored, with the CLI.
  let out = ''
  const io: CliIO = {
    stdout: { write: c => ((out += String(c)), true) },
    stderr: { write: () => true },
    env: { BROWSER_TELEMETRY_URL: d.url, BROWSER_TELEMETRY_TOKEN: TOKEN },
  }
  const scriptUrl = `${site.url}dist/uploaded.min.js`
  t.equal(await clientCommands.sourcemap!.run(['upload', app.uploadedMapPath, '--url', scriptUrl], io), 0)
  t.match(JSON.parse(out), { url: scriptUrl, bytes: app.uploadedMap.length, uploaded_at: String })
  const listed = (await (await api(`${base}/sourcemaps`)).json()) as { url?: string; debug_id?: string }[]
  t.same(
    listed.map(m => m.url ?? m.debug_id),
    [DEBUG_ID, scriptUrl],
    'GET lists both uploads, oldest first',
  )

  // 1. The events API.
  const apiEvents = (await (await api(`${base}/telemetry/events?category=console&limit=100`)).json()) as Env[]
  const firstTab = byText(apiEvents, 1)
  checkStacks(t, firstTab, 'events API', site.url)
  const failed = apiEvents.filter(e => e.event.type === 'sourcemap_failed')
  t.same(failed, [], 'no sourcemap_failed: every map was found')
  const network = (await (await api(`${base}/telemetry/events?category=network&limit=100`)).json()) as Env[]
  t.same(
    network.filter(e => /\.map$/.test(String(e.event.data.url))).map(e => e.event.data.url),
    [],
    "the daemon's own loads through the page are not recorded as the page's traffic",
  )

  // 2. An SSE replay from the oldest event, up to the last of those.
  const lastSeq = Math.max(...[...firstTab.values()].map(e => e.seq))
  const replayed = await replay(d.url, base, lastSeq)
  checkStacks(t, byText(replayed, 1), 'SSE replay', site.url)

  // 3. The debug bundle: the same envelopes, and the maps it used.
  const zip = Buffer.from(await (await api(`${base}/telemetry/bundle?since=1h`)).arrayBuffer())
  const files = await unzipAll(zip)
  const ndjson = files
    .get('events.ndjson')!
    .toString()
    .trim()
    .split('\n')
    .map(l => JSON.parse(l) as Env)
  checkStacks(t, byText(ndjson, 1), 'bundle events.ndjson', site.url)
  const index = JSON.parse(files.get('sourcemaps/index.json')!.toString()) as {
    file: string
    scripts: string[]
    kind: string
  }[]
  t.same(
    index.map(m => [m.kind, m.scripts.map(s => s.slice(site.url.length))]).sort(),
    [
      ['fetched', ['dist/external.min.js']],
      ['fetched', ['dist/header.min.js']],
      ['fetched', ['dist/inline.min.js']],
      ['uploaded', ['dist/debugid.min.js']],
      ['uploaded', ['dist/uploaded.min.js']],
    ],
    'sourcemaps/index.json: the five maps the stacks used',
  )
  for (const m of index) t.ok(files.get(m.file)?.length, `${m.file} is in the bundle`)
  t.same(
    files.get(index.find(m => m.scripts[0]!.endsWith('uploaded.min.js'))!.file),
    app.uploadedMap,
    'an uploaded map is carried byte for byte',
  )
  t.match(
    files.get('console.txt')!.toString(),
    /Uncaught Error: checkout failed \(\.\.\/src\/checkout\.ts:18:11\)/,
    'console.txt places the error where it was written',
  )

  // 4. OTLP and a live SSE stream: a second load, once every map is known, is mapped as it is
  // sent; the log keeps it as Chromium sent it.
  const before = d.log.lastSeq
  const liveCtl = new AbortController()
  const live = await fetch(`${d.url}${base}/telemetry/stream`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: liveCtl.signal,
  })
  t.equal(live.status, 200)
  const secondTab = await d.monitor!.openPage(`${site.url}page.html`)
  void secondTab
  const second = await waitForConsole(d, before)
  const logsSink = d.sinks.sinks[0]!
  await acked(logsSink, Math.max(...[...second.values()].map(e => e.seq)))
  const stored = second.get('Uncaught Error: checkout failed')!
  const record = receiver.logs().find(l => l.attributes['browser.telemetry.seq'] === stored.seq)
  t.ok(record, "the second load's uncaught error was exported")
  const lines = String(record?.attributes['exception.stacktrace']).split('\n')
  t.equal(lines.length, 8)
  t.equal(lines[0], '    at outerEntry (../src/checkout.ts:18:11)')
  t.match(lines[1], /^ {4}at \S+ \(\.\.\/src\/external\.ts:4:3\)$/, 'the outermost frame: its raw name, mapped place')
  t.equal(lines[2], '-- cause: TypeError: bad value 10 --')
  t.same(lines.slice(3, 7), [
    '    at innerMost (../src/util.ts:3:11)',
    '    at total (../src/checkout.ts:5:12)',
    '    at middleLayer (../src/checkout.ts:11:12)',
    '    at outerEntry (../src/checkout.ts:16:12)',
  ])
  t.match(lines[7], /^ {4}at \S+ \(\.\.\/src\/external\.ts:4:3\)$/)
  t.equal(record?.attributes['exception.message'], 'Uncaught Error: checkout failed')
  const liveFrames = await readSseUntil(live, liveCtl, Math.max(...[...second.values()].map(e => e.seq)))
  const secondTarget = stored.event.data.target_id as string
  checkStacks(
    t,
    byText(
      liveFrames.map(f => JSON.parse(f.json) as Env),
      stored.event.data.nav_seq as number,
      secondTarget,
    ),
    'SSE live (second load)',
    site.url,
  )
  for (const [text, e] of second)
    t.same(
      (e.event.data.stack_trace as StackTrace).callFrames.filter(f => 'original' in f),
      [],
      `stored as Chromium sent it: ${text}`,
    )
})

/** Console events committed after `afterSeq` until all five failures of one load are in. */
function waitForConsole(
  d: { log: { onCommit(l: (r: readonly { seq: number; json: string }[]) => void): () => void } },
  afterSeq: number,
): Promise<Map<string, Env>> {
  return new Promise(resolve => {
    const seen = new Map<string, Env>()
    const off = d.log.onCommit(records => {
      for (const r of records) {
        if (r.seq <= afterSeq || !r.json.includes('"category":"console"')) continue
        const e = JSON.parse(r.json) as Env
        const text = e.event.data.text as string
        if (text in EXPECTED) seen.set(text, e)
      }
      if (seen.size < Object.keys(EXPECTED).length) return
      off()
      resolve(seen)
    })
  })
}

function acked(s: Sink, seq: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (s.ackedSeq >= seq) return resolve()
    const timer = setTimeout(() => {
      off()
      reject(new Error(`${s.name} did not reach seq ${seq}: ${JSON.stringify(s.health())}`))
    }, 60_000)
    const off = s.onAcked(a => {
      if (a < seq) return
      clearTimeout(timer)
      off()
      resolve()
    })
  })
}

/** The envelopes of an SSE replay from the oldest event, read until `lastSeq`. */
async function replay(daemonUrl: string, base: string, lastSeq: number): Promise<Env[]> {
  const ctl = new AbortController()
  const res = await fetch(`${daemonUrl}${base}/telemetry/stream?replay=all`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: ctl.signal,
  })
  return (await readSseUntil(res, ctl, lastSeq)).map(f => JSON.parse(f.json) as Env)
}
