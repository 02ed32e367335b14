// The Playwright trace of a synthetic session (test/helpers/session-mix.ts) through the route, the
// CLI and signed links, on a pinned clock: what each file holds, the target filter, the film strip's
// bound, the link's exact expiry, and the signing key that survives a restart only when configured.
import t from 'tap'
import type { Test } from 'tap'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import { registerTraceRoutes } from '../src/api/routes/trace.js'
import { startApiServer } from '../src/api/server.js'
import { MAX_REVOKED_LINKS, newLinkId, TraceLinkRevocations, TraceLinkSigner } from '../src/api/trace-links.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { CONFIGURABLE_CATEGORIES, type Envelope } from '../src/events/index.js'
import { toHar } from '../src/har/index.js'
import { DEFAULT_TRACE_LIMITS, type TraceLimits } from '../src/trace/index.js'
import { BROWSER_ID, T0_US, TOKEN, unzipAll } from './helpers/bundle.js'
import { sessionStep, TINY_PNG } from './helpers/session-mix.js'
import { ExportSlots } from '../src/api/zip-response.js'
import { accepted, openStore, tempDir } from './helpers/store.js'

const SEC = 1_000_000
const iso = (us: number) => new Date(us / 1000).toISOString()
type Line = { type: string; [k: string]: unknown }
const lines = (b: Buffer | undefined): Line[] =>
  (b ?? Buffer.alloc(0))
    .toString('utf8')
    .trim()
    .split('\n')
    .filter(l => l !== '')
    .map(l => JSON.parse(l) as Line)

async function startTraceApi(
  t: Test,
  limits?: TraceLimits,
  signer = TraceLinkSigner.random(),
  revocations?: TraceLinkRevocations,
  slots?: ExportSlots,
) {
  let clock = T0_US
  const { log, pipeline } = await openStore(t, {}, { clock: () => clock, categories: CONFIGURABLE_CATEGORIES })
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  tokens.add('publish-only', ['publish'])
  tokens.add('read-only', ['read'])
  const app = createApiApp({
    browserId: BROWSER_ID,
    log,
    pipeline,
    tokens,
    now: () => clock,
    routes: [
      r =>
        registerTraceRoutes(r, {
          source: { browserId: BROWSER_ID, log, platform: 'linux' },
          signer,
          ...(revocations ? { revocations } : {}),
          corsOrigins: ['https://trace.playwright.dev'],
          now: () => clock,
          ...(limits ? { limits } : {}),
          ...(slots ? { slots } : {}),
        }),
    ],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close(500))
  const envelopes: Envelope[] = []
  return {
    url: server.url,
    envelopes,
    emit: (input: Parameters<typeof pipeline.emit>[0]) => accepted(pipeline.emit(input)).committed,
    setClock: (us: number) => (clock = us),
    async record(steps: number) {
      for (let n = 0; n < steps; n++) {
        clock = T0_US + n * SEC
        let last: Promise<boolean> = Promise.resolve(true)
        for (const input of sessionStep(n, { png: TINY_PNG, screenshotEvery: 5 })) {
          const a = accepted(pipeline.emit(input))
          last = a.committed
        }
        await last
      }
      const page = await log.read({ order: 'asc', cursor: 1, limit: 100_000 })
      envelopes.push(...page.records.map(r => JSON.parse(r.json) as Envelope))
      clock = T0_US + 600 * SEC
    },
    get(path: string, token: string | null = TOKEN, init: RequestInit = {}) {
      const headers = new Headers(init.headers)
      if (token) headers.set('authorization', `Bearer ${token}`)
      return fetch(server.url + path, { ...init, headers })
    },
  }
}

const WINDOW = `since=${encodeURIComponent(iso(T0_US))}&until=${encodeURIComponent(iso(T0_US + 40 * SEC))}`

t.test('what the trace holds, file by file', async t => {
  const api = await startTraceApi(t)
  await api.record(40)
  const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace.zip?${WINDOW}`)
  t.equal(res.status, 200)
  t.equal(
    res.headers.get('content-disposition'),
    `attachment; filename="browser-telemetry-${BROWSER_ID}-20260102T031405Z.trace.zip"`,
  )
  const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
  const trace = lines(files.get('trace.trace'))
  const network = lines(files.get('trace.network'))
  const inWindow = api.envelopes.filter(e => e.event.ts < T0_US + 40 * SEC)
  const byType = (type: string) => inWindow.filter(e => e.event.type === type)

  t.same(trace[0], {
    version: 8,
    type: 'context-options',
    origin: 'library',
    browserName: 'chromium',
    platform: 'linux',
    wallTime: T0_US / 1000,
    monotonicTime: 0,
    title: `browser-telemetry ${BROWSER_ID}`,
    options: { viewport: { width: 1, height: 1 }, deviceScaleFactor: 1, isMobile: false },
    sdkLanguage: 'javascript',
  })
  const count = (type: string, method?: string) =>
    trace.filter(l => l.type === type && (method === undefined || l.method === method)).length
  // Film strip: no recording in this window, so the screenshots (every 5 s), each a PNG resource.
  const shots = byType('monitor_screenshot')
  t.equal(count('screencast-frame'), shots.length)
  t.same(
    trace.filter(l => l.type === 'screencast-frame').map(l => [l.sha1, l.timestamp, l.pageId]),
    shots.map(s => [`screenshot-${s.seq}.png`, (s.event.ts - T0_US) / 1000, 'page@F1E2D3C4B5A6978812345678ABCDEF01']),
  )
  t.same(files.get(`resources/screenshot-${shots[0]!.seq}.png`), Buffer.from(TINY_PNG, 'base64'))
  // Console and uncaught errors.
  t.equal(count('console'), byType('console_log').length)
  t.equal(count('event', 'pageError'), byType('console_error').length)
  const err = trace.find(l => l.method === 'pageError')!
  t.same(err.params, {
    error: { error: { name: 'Error', message: 'boom 3', stack: 'Error: boom 3\n    at app.js:1:2' } },
  })
  const warn = trace.find(l => l.type === 'console' && l.messageType === 'warning')!
  t.same(warn, {
    type: 'console',
    time: 0,
    pageId: 'page@F1E2D3C4B5A6978812345678ABCDEF01',
    messageType: 'warning',
    text: 'step 0\tloaded',
    location: { url: '', lineNumber: 0, columnNumber: 0 },
  })
  t.equal(count('event', 'navigated'), byType('page_navigation').length)
  // Network: one resource-snapshot per HAR entry of the same window, bodies by sha1, failures -1.
  const har = toHar(inWindow)
  t.equal(network.length, har.log.entries.length)
  t.same(
    network.map(n => (n.snapshot as { request: { url: string } }).request.url).sort(),
    har.log.entries.map(e => e.request.url).sort(),
  )
  const failed = network.filter(n => (n.snapshot as { response: { status: number } }).response.status === -1)
  t.equal(failed.length, byType('network_loading_failed').length)
  t.match(failed[0]!.snapshot, { response: { _failureText: 'net::ERR_CONNECTION_REFUSED' } })
  const withBody = network.find(n =>
    (n.snapshot as { request: { url: string } }).request.url.endsWith('/items/1?page=2'),
  )!
  const sha1 = (withBody.snapshot as { response: { content: { _sha1: string; text?: string } } }).response.content
  t.notOk('text' in sha1, 'the body is not inline')
  const stored = byType('network_response').find(e =>
    (e.event.data as { url?: string }).url?.endsWith('/items/1?page=2'),
  )!
  t.equal(files.get(`resources/${sha1._sha1}`)?.toString(), (stored.event.data as { body: string }).body)
  for (const n of network) t.ok((n.snapshot as { _monotonicTime: number })._monotonicTime >= 0)
  // WebSockets: the handshake entry with its messages, as the HAR export writes them.
  const sockets = network.filter(n => (n.snapshot as { _resourceType?: string })._resourceType === 'websocket')
  const frames = byType('network_websocket_frame')
  t.ok(frames.length > 0 && sockets.length > 0, `${sockets.length} sockets, ${frames.length} frames`)
  t.equal(
    sockets.reduce(
      (n, s) => n + ((s.snapshot as { _webSocketMessages?: unknown[] })._webSocketMessages?.length ?? 0),
      0,
    ),
    frames.length,
    'every frame is a message of its socket',
  )
  // Every time on the one clock: nothing before 0, nothing after the window.
  for (const l of trace.slice(1)) {
    const time = (l.time ?? l.timestamp ?? l.startTime ?? l.endTime) as number | undefined
    if (time !== undefined) t.ok(time >= 0 && time < 40_000, `${l.type} at ${time}`)
  }
})

t.test('nothing the daemon masks appears in the trace', async t => {
  const api = await startTraceApi(t)
  const ctx = { target_id: 'T1', session_id: 'S1', target_type: 'page' as const }
  const url = 'https://shop.test/login?token=s3cret-in-url&x=1'
  await api.emit({
    type: 'network_request',
    source: { kind: 'cdp' },
    data: {
      ...ctx,
      url,
      request_id: 'r',
      method: 'POST',
      headers: { Authorization: 'Bearer s3cret-header' },
      post_data: '{"password":"s3cret-field"}',
    },
  })
  await api.emit({
    type: 'network_response',
    source: { kind: 'cdp' },
    data: {
      ...ctx,
      url,
      request_id: 'r',
      status: 200,
      status_text: 'OK',
      headers: { 'set-cookie': 'sid=s3cret-cookie' },
      mime_type: 'application/json',
      body: '{"access_token":"s3cret-body"}',
    },
  })
  const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace.zip?since=${encodeURIComponent(iso(T0_US))}`)
  const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
  const all = Buffer.concat([...files.values()]).toString('utf8')
  t.same(all.match(/.{60}s3cret.{30}/g), null, 'no secret in any file of the trace')
  t.match(all, /\[redacted/, 'the masks are there')
  t.equal(lines(files.get('trace.network')).length, 1)
})

t.test('target_id keeps one target; the film strip is bounded', async t => {
  const limits = { ...DEFAULT_TRACE_LIMITS, maxFrames: 3 }
  const api = await startTraceApi(t, limits)
  await api.record(40)
  const other = await unzipAll(
    Buffer.from(
      await (await api.get(`/browsers/${BROWSER_ID}/telemetry/trace.zip?${WINDOW}&target_id=OTHER`)).arrayBuffer(),
    ),
  )
  t.same(lines(other.get('trace.network')), [], 'no request of another target')
  t.same(
    lines(other.get('trace.trace')).filter(l => l.type === 'console' || l.type === 'event'),
    [],
    'no console or page event of another target',
  )
  const all = await unzipAll(
    Buffer.from(await (await api.get(`/browsers/${BROWSER_ID}/telemetry/trace.zip?${WINDOW}`)).arrayBuffer()),
  )
  t.equal(lines(all.get('trace.trace')).filter(l => l.type === 'screencast-frame').length, 3, 'maxFrames: exactly 3')
  t.equal([...all.keys()].filter(k => k.startsWith('resources/screenshot-')).length, 3)
})

t.test('a link: exact expiry on the pinned clock, read scope, no other route', async t => {
  const api = await startTraceApi(t)
  await api.record(10)
  api.setClock(T0_US + 100 * SEC)
  const refused = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace-links`, 'publish-only', { method: 'POST' })
  t.equal(refused.status, 403, 'making a link needs read')
  const made = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace-links`, TOKEN, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ since: '100s', ttl_seconds: 60, target_id: 'F1E2D3C4B5A6978812345678ABCDEF01' }),
  })
  t.equal(made.status, 201)
  const link = (await made.json()) as { url: string; expires_at: string }
  t.equal(link.expires_at, iso(T0_US + 160 * SEC))
  t.match(
    link.url,
    new RegExp(`^${api.url}/browsers/${BROWSER_ID}/telemetry/trace\\.zip\\?link=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
  )
  api.setClock(T0_US + 160 * SEC - 1)
  const ok = await fetch(link.url)
  t.equal(ok.status, 200, 'valid until the last microsecond')
  const files = await unzipAll(Buffer.from(await ok.arrayBuffer()))
  t.equal(lines(files.get('trace.network')).length > 0, true, 'the window of the link')
  const preflight = await fetch(link.url, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://trace.playwright.dev',
      'access-control-request-method': 'GET',
      'access-control-request-private-network': 'true',
    },
  })
  t.equal(preflight.status, 204)
  t.same(
    ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-private-network'].map(h =>
      preflight.headers.get(h),
    ),
    ['https://trace.playwright.dev', 'GET', 'true'],
    'a preflight from the viewer (a private address from a public page) is allowed',
  )
  const foreign = await fetch(link.url, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } })
  t.equal(foreign.headers.get('access-control-allow-origin'), null)
  api.setClock(T0_US + 160 * SEC)
  const late = await fetch(link.url)
  t.equal(late.status, 401)
  t.same(await late.json(), {
    code: 'unauthorized',
    message: `trace link refused: the link expired at ${iso(T0_US + 160 * SEC)}`,
  })
  const other = await fetch(
    `${api.url}/browsers/other-browser/telemetry/trace.zip?${new URL(link.url).search.slice(1)}`,
  )
  t.equal(other.status, 401, 'a link names its browser')
  t.same(await other.json(), { code: 'unauthorized', message: 'trace link refused: the link is for another browser' })
  const huge = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace-links`, TOKEN, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ since: 'x'.repeat(16 * 1024) }),
  })
  t.equal(huge.status, 413, 'a link request over 16 KiB')
  await huge.arrayBuffer()
  const long = await fetch(`${api.url}/browsers/${BROWSER_ID}/telemetry/trace.zip?link=${'a'.repeat(2049)}`)
  t.equal(long.status, 401, 'a link that is not one is refused: 401')
  await long.arrayBuffer()
  for (const body of ['[]', '{"ttl":5}', '{"since":""}', '{"since":"yesterday"}']) {
    const bad = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace-links`, TOKEN, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    t.equal(bad.status, 400, `${body} is a 400`)
    t.equal(((await bad.json()) as { code: string }).code, 'bad_request')
  }
})

t.test('the link key: a configured key survives a restart, a generated one does not', async t => {
  const dir = await tempDir(t)
  const file = join(dir, 'link-key')
  await writeFile(file, 'k'.repeat(40) + '\n')
  const grant = { browserId: 'b', sinceUs: 1, untilUs: 2, expUs: 10, linkId: 'AAAAAAAAAAAAAAAAAAAAAA' }
  const before = await TraceLinkSigner.fromFile(file)
  const after = await TraceLinkSigner.fromFile(file)
  t.same(after.verify(before.sign(grant), 'b', 5), grant, 'the same key after a restart')
  t.throws(() => TraceLinkSigner.random().verify(TraceLinkSigner.random().sign(grant), 'b', 5), {
    message: /bad signature/,
  })
  await writeFile(file, 'k'.repeat(40) + 'x\n')
  const rotated = await TraceLinkSigner.fromFile(file)
  t.throws(() => rotated.verify(before.sign(grant), 'b', 5), { message: /bad signature/ }, 'a new key ends old links')
  await writeFile(file, 'short')
  await t.rejects(TraceLinkSigner.fromFile(file), { message: /fewer than 32 bytes/ })
})

t.test('one link revoked before its expiry; the others keep working; the longest lifetime is an hour', async t => {
  const dir = await tempDir(t)
  const file = join(dir, 'trace-link-revocations.json')
  const revocations = await TraceLinkRevocations.open(file)
  const signer = TraceLinkSigner.random()
  const api = await startTraceApi(t, undefined, signer, revocations)
  await api.record(10)
  api.setClock(T0_US + 100 * SEC)
  const make = async (body: object) => {
    const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/trace-links`, TOKEN, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return {
      status: res.status,
      body: (await res.json()) as { url: string; link_id: string; expires_at: string; code?: string; message?: string },
    }
  }
  const longest = await make({ since: '100s', ttl_seconds: 3600 })
  t.equal(longest.status, 201)
  t.equal(longest.body.expires_at, iso(T0_US + 3700 * SEC), 'an hour is allowed')
  const tooLong = await make({ since: '100s', ttl_seconds: 3601 })
  t.equal(tooLong.status, 400)
  t.same(tooLong.body, {
    code: 'bad_request',
    message: 'invalid ttl_seconds: expected a whole number of seconds from 1 to 3600',
    details: [{ code: 'invalid_input', message: 'ttl_seconds: expected a whole number of seconds from 1 to 3600' }],
  })
  const a = (await make({ since: '100s' })).body
  const b = (await make({ since: '100s' })).body
  t.match(a.link_id, /^[A-Za-z0-9_-]{22}$/)
  t.not(a.link_id, b.link_id, 'each link has its own id')
  t.equal(a.expires_at, iso(T0_US + 1000 * SEC), 'the default stays 900 s')
  // Each export is read to its end: an unread one holds one of the export slots.
  const status = async (url: string) => {
    const res = await fetch(url)
    await res.arrayBuffer()
    return res.status
  }
  t.equal(await status(a.url), 200)

  const revoke = (id: string, token = TOKEN) =>
    api.get(`/browsers/${BROWSER_ID}/telemetry/trace-links/${id}`, token, { method: 'DELETE' })
  const readOnly = await revoke(a.link_id, 'read-only')
  t.equal(readOnly.status, 403, 'revoking needs write')
  t.equal(await status(a.url), 200, 'still valid after a refused revocation')
  const done = await revoke(a.link_id)
  t.equal(done.status, 204)
  t.equal(await done.text(), '')
  const refused = await fetch(a.url, { headers: { origin: 'https://trace.playwright.dev' } })
  t.equal(refused.status, 401)
  t.same(await refused.json(), { code: 'unauthorized', message: 'trace link refused: the link was revoked' })
  t.equal(refused.headers.get('access-control-allow-origin'), 'https://trace.playwright.dev', 'the viewer sees why')
  t.equal(await status(b.url), 200, 'another link of the same window keeps working')
  t.equal((await revoke(a.link_id)).status, 204, 'revoking again is a 204')
  const bad = await revoke('not-an-id')
  t.equal(bad.status, 400)
  t.equal(((await bad.json()) as { code: string }).code, 'bad_request')

  // The revocation is in the data dir: a daemon restarted with the same key still refuses the link.
  t.same(
    (JSON.parse(await readFile(file, 'utf8')) as [string, number][]).map(([id, until]) => [id, until]),
    [[a.link_id, T0_US + 100 * SEC + 3600 * SEC]],
  )
  const reopened = await TraceLinkRevocations.open(file, T0_US + 200 * SEC)
  t.throws(() => signer.verify(new URL(a.url).searchParams.get('link')!, BROWSER_ID, T0_US + 200 * SEC, reopened), {
    status: 401,
    message: 'trace link refused: the link was revoked',
  })
  t.same(
    signer.verify(new URL(b.url).searchParams.get('link')!, BROWSER_ID, T0_US + 200 * SEC, reopened).linkId,
    b.link_id,
  )
  t.equal((await TraceLinkRevocations.open(file, T0_US + 3700 * SEC)).size, 0, 'forgotten once no link of it can live')

  // A link signed for longer (an older daemon's 86,400 s, the same key) lives no longer than an hour.
  const old = signer.sign({
    browserId: BROWSER_ID,
    sinceUs: T0_US,
    untilUs: T0_US + SEC,
    expUs: T0_US + 100 * SEC + 86_400 * SEC,
    linkId: newLinkId(),
  })
  const late = await fetch(`${api.url}/browsers/${BROWSER_ID}/telemetry/trace.zip?link=${old}`)
  t.equal(late.status, 401)
  t.same(await late.json(), {
    code: 'unauthorized',
    message: 'trace link refused: the link outlives the 3600 s maximum',
  })

  const doc = (await (await api.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>
  }
  const op = doc.paths['/browsers/{id}/telemetry/trace-links/{link_id}']?.delete
  t.equal(op?.operationId, 'revokeBrowserTelemetryTraceLink')
  t.same(
    Object.keys(op?.responses ?? {}).filter(s => ['204', '429'].includes(s)),
    ['204', '429'],
  )
})

t.test('revocations are bounded: past the bound, 429 with Retry-After until the oldest can be forgotten', async t => {
  const r = TraceLinkRevocations.inMemory()
  for (let i = 0; i < MAX_REVOKED_LINKS; i++) await r.revoke(`id-${i}`, T0_US + i)
  t.equal(r.size, MAX_REVOKED_LINKS)
  await t.rejects(r.revoke('one-more', T0_US + MAX_REVOKED_LINKS), {
    status: 429,
    code: 'too_many_requests',
    headers: { 'Retry-After': '3600' },
  })
  await r.revoke('id-0', T0_US + MAX_REVOKED_LINKS)
  t.equal(r.size, MAX_REVOKED_LINKS, 'an id revoked again takes no room')
  // id-1 was revoked at T0 + 1 µs: no link of it lives past an hour after that.
  await r.revoke('one-more', T0_US + 3600 * SEC + 1)
  t.equal(r.size, MAX_REVOKED_LINKS, 'the oldest expired and made room')
  t.ok(r.has('one-more', T0_US + 3600 * SEC + 1))
  t.notOk(r.has('id-1', T0_US + 3600 * SEC + 1))
})

function capture() {
  let out = ''
  let err = ''
  const io: CliIO = {
    stdout: { write: c => ((out += String(c)), true) },
    stderr: { isTTY: false, write: c => ((err += String(c)), true) },
    env: {},
  }
  return { io, out: () => out, err: () => err }
}

t.test('browser-telemetry trace: -o writes what the route serves; --link prints the viewer URL', async t => {
  const api = await startTraceApi(t)
  await api.record(20)
  const dir = await tempDir(t)
  const file = join(dir, 'session.zip')
  const c = capture()
  const window = ['--since', iso(T0_US), '--until', iso(T0_US + 20 * SEC)]
  t.equal(
    await clientCommands.trace!.run(['--url', api.url, '--token', TOKEN, ...window, '-o', file], c.io),
    0,
    c.err(),
  )
  const fromCli = await unzipAll(await readFile(file))
  const fromRoute = await unzipAll(
    Buffer.from(
      await (
        await api.get(
          `/browsers/${BROWSER_ID}/telemetry/trace.zip?since=${encodeURIComponent(iso(T0_US))}&until=${encodeURIComponent(iso(T0_US + 20 * SEC))}`,
        )
      ).arrayBuffer(),
    ),
  )
  t.same([...fromCli.keys()], [...fromRoute.keys()])
  for (const [name, bytes] of fromRoute) t.ok(fromCli.get(name)!.equals(bytes), `${name}: the same bytes`)

  const l = capture()
  t.equal(
    await clientCommands.trace!.run(
      ['--url', api.url, '--token', TOKEN, '--since', '10m', '--link', '--ttl', '120'],
      l.io,
    ),
    0,
  )
  const viewer = l.out().trim()
  t.match(viewer, /^https:\/\/trace\.playwright\.dev\/\?trace=http%3A%2F%2F127\.0\.0\.1%3A\d+%2Fbrowsers%2F/)
  t.notMatch(viewer, TOKEN)
  const url = decodeURIComponent(viewer.slice('https://trace.playwright.dev/?trace='.length))
  t.match(l.err(), `trace: ${url}\nexpires at ${iso(T0_US + 720 * SEC)}\n`)
  t.equal((await fetch(url)).status, 200, 'the link works without the token')
  const bad = capture()
  t.equal(await clientCommands.trace!.run(['--url', api.url, '--token', TOKEN, '--ttl', '5'], bad.io), 1)
  t.match(bad.err(), /--ttl goes with --link/)
})

t.test('exports built at once are bounded: past the bound 429 with Retry-After, nothing started', async t => {
  // Two builds in progress hold the shared slots (a bundle and a trace, or two slow readers).
  const slots = new ExportSlots(2)
  const api = await startTraceApi(t, undefined, undefined, undefined, slots)
  await api.record(2)
  const get = () =>
    fetch(`${api.url}/browsers/${BROWSER_ID}/telemetry/trace.zip`, { headers: { authorization: `Bearer ${TOKEN}` } })
  const first = slots.take()
  const second = slots.take()
  const refused = await get()
  t.equal(refused.status, 429)
  t.equal(refused.headers.get('retry-after'), '5')
  t.same(await refused.json(), {
    code: 'too_many_requests',
    message: 'at most 2 trace and bundle exports are built at once (--export-max-concurrent); retry when one ends',
  })
  t.equal(slots.active, 2, 'the refused request took no slot')
  first()
  first() // a release is counted once
  t.equal(slots.active, 1)
  const served = await get()
  t.equal(served.status, 200)
  const zip = Buffer.from(await served.arrayBuffer())
  t.ok(zip.length > 100 && zip.subarray(0, 2).toString() === 'PK', `a zip of ${zip.length} bytes`)
  // Its slot is free again once the export ended.
  await waitForActive(slots, 1)
  second()
  t.equal(slots.active, 0)
})

async function waitForActive(slots: ExportSlots, n: number): Promise<void> {
  for (let i = 0; i < 200 && slots.active !== n; i++) await new Promise(r => setImmediate(r))
  if (slots.active !== n) throw new Error(`slots still ${slots.active}, not ${n}`)
}
