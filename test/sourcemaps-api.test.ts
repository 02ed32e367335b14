// The sourcemaps routes (PUT, GET, DELETE /browsers/{id}/sourcemaps) and the read paths that map
// stored stacks with what is uploaded later: the events route, and SSE replays (which must not be
// served from frames kept before the map was known).
import { readSseUntil } from './helpers/sse.js'
import t, { type Test } from 'tap'
import { request } from 'node:http'
import { join } from 'node:path'
import { registerSourceMapRoutes } from '../src/api/routes/sourcemaps.js'
import { SourceMaps } from '../src/symbols/source-maps.js'
import type { StackTrace } from '../src/events/index.js'
import { BROWSER_ID, startApi, TOKEN } from './helpers/api.js'
import { accepted, tempDir } from './helpers/store.js'

const SCRIPT = 'https://shop.example/assets/app.min.js'
const MAP = JSON.stringify({ version: 3, sources: ['src/cart.ts'], names: [], mappings: 'AAEE' })
const DEBUG_ID = '85314830-023f-4cf1-a267-535f4e37bb17'
const PATH = `/browsers/${BROWSER_ID}/sourcemaps`

async function setup(t: Test, maxBytes = 4096) {
  const sm = await SourceMaps.open({
    dir: join(await tempDir(t), 'sourcemaps'),
    maxMapBytes: maxBytes,
    storeBytes: 1024 * 1024,
    cacheBytes: 1024 * 1024,
    fetch: false,
  })
  t.teardown(() => sm.close())
  const api = await startApi(t, {
    tokens: { 'read-only': ['read'] },
    deps: {
      mapping: sm,
      routes: [r => registerSourceMapRoutes(r, { sourceMaps: sm, maxBytes })],
    },
  })
  const put = (body: string, query = `?url=${encodeURIComponent(SCRIPT)}`, token = TOKEN) =>
    api.get(`${PATH}${query}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    })
  return { sm, api, put }
}

t.test('PUT stores a map (201), GET lists, DELETE removes; scopes apply', async t => {
  const { api, put } = await setup(t)
  const res = await put(MAP)
  t.equal(res.status, 201)
  const stored = (await res.json()) as { uploaded_at: string }
  t.same(stored, { url: SCRIPT, bytes: MAP.length, uploaded_at: stored.uploaded_at })
  t.ok(Date.parse(stored.uploaded_at) > 0)
  const withId = JSON.stringify({ ...JSON.parse(MAP), debugId: DEBUG_ID })
  t.equal((await put(withId, '')).status, 201, 'a map with a debugId needs no url')
  t.same(
    ((await (await api.get(PATH)).json()) as object[]).map(m => ({ ...m, uploaded_at: 'x' })),
    [
      { url: SCRIPT, bytes: MAP.length, uploaded_at: 'x' },
      { debug_id: DEBUG_ID, bytes: withId.length, uploaded_at: 'x' },
    ],
  )
  const readOnly = await put(MAP, `?url=${encodeURIComponent(SCRIPT)}`, 'read-only')
  t.equal(readOnly.status, 403)
  t.equal(((await readOnly.json()) as { code: string }).code, 'forbidden')
  t.equal((await api.get(PATH, { headers: { authorization: 'Bearer read-only' } })).status, 200, 'GET needs read')
  const del = (q: string, token = TOKEN) =>
    api.get(`${PATH}${q}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
  t.equal((await del(`?url=${encodeURIComponent(SCRIPT)}`, 'read-only')).status, 403)
  t.equal((await del(`?url=${encodeURIComponent(SCRIPT)}`)).status, 204)
  const again = await del(`?url=${encodeURIComponent(SCRIPT)}`)
  t.equal(again.status, 404)
  t.same(await again.json(), { code: 'not_found', message: `no uploaded source map for url ${SCRIPT}` })
  t.equal((await del(`?debug_id=${DEBUG_ID}`)).status, 204)
  const neither = await del('')
  t.equal(neither.status, 400)
  t.match(await neither.json(), {
    code: 'bad_request',
    message: 'invalid url: give either url or debug_id (exactly one)',
  })
  t.same(await (await api.get(PATH)).json(), [])
})

t.test('bad input is a clear 4xx and writes nothing', async t => {
  const { api, put } = await setup(t)
  const expect = async (res: Response, status: number, body: object) => {
    t.equal(res.status, status)
    t.match(await res.json(), body)
  }
  await expect(await put('{"version": 3,'), 400, {
    code: 'bad_request',
    message: /^not a usable source map: not JSON/,
    details: [{ code: 'bad_json' }],
  })
  await expect(await put('{"version":2,"sources":[],"mappings":""}'), 400, {
    code: 'bad_request',
    message: 'not a usable source map: version is 2, not 3',
    details: [{ code: 'not_v3' }],
  })
  await expect(await put('{"version":3,"sources":["a"],"mappings":"AA!A"}'), 400, {
    details: [{ code: 'bad_mappings' }],
  })
  await expect(await put(MAP, ''), 400, { message: 'invalid url: required for a map without a debugId' })
  await expect(await put(MAP, '?url=app.min.js'), 400, { message: 'invalid url: expected an absolute URL' })
  await expect(await put(''), 400, { message: 'invalid body: the source map JSON is required' })
  t.same(await (await api.get(PATH)).json(), [], 'nothing was stored')
})

t.test('a version nested 10,000 deep: 400 with the reason, not 500', async t => {
  // It parses (V8's JSON.parse is iterative) but overflowed the stack of the message that quoted it.
  const { api, put } = await setup(t, 64 * 1024)
  const res = await put(`{"version":${'['.repeat(10_000)}${']'.repeat(10_000)},"sources":[],"mappings":""}`)
  t.equal(res.status, 400)
  t.same(await res.json(), {
    code: 'bad_request',
    message: 'not a usable source map: nested over 32 levels deep at 42',
    details: [{ code: 'not_v3', message: 'nested over 32 levels deep at 42' }],
  })
  t.same(await (await api.get(PATH)).json(), [], 'nothing was stored')
})

t.test('over the per-map cap: 413 with the error object, whether the length was declared or not', async t => {
  const { api, put } = await setup(t, 4096)
  const big = JSON.stringify({ version: 3, sources: [], mappings: '', pad: 'x'.repeat(5000) })
  const declared = await put(big)
  t.equal(declared.status, 413)
  t.same(await declared.json(), {
    code: 'payload_too_large',
    message: `the map is at least ${big.length} bytes, over the cap of 4096 (--sourcemap-max-bytes)`,
  })
  // Chunked: refused once 4096 bytes passed; the rest is drained, so the client reads the answer.
  const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      `${api.url}${PATH}?url=${encodeURIComponent(SCRIPT)}`,
      { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}`, 'transfer-encoding': 'chunked' } },
      res => {
        let body = ''
        res.on('data', c => (body += String(c)))
        res.on('end', () => resolve({ status: res.statusCode!, body }))
      },
    )
    req.on('error', reject)
    for (let i = 0; i < 10; i++) req.write('x'.repeat(1000))
    req.end()
  })
  t.equal(chunked.status, 413)
  t.match(JSON.parse(chunked.body), { code: 'payload_too_large', message: /over the cap of 4096/ })
  t.same(await (await api.get(PATH)).json(), [])
})

t.test('stored stacks are mapped when read once a map is uploaded: events API and SSE replay', async t => {
  const { api, put } = await setup(t)
  // A live stream sees the event as stored, which also keeps its frame in the resume ring.
  const live = await sse(api.url, {})
  const stack: StackTrace = {
    callFrames: [{ functionName: 'a', scriptId: '1', url: SCRIPT, lineNumber: 0, columnNumber: 0 }],
  }
  const r = accepted(
    api.pipeline.emit({
      type: 'console_error',
      source: { kind: 'cdp', event: 'Runtime.exceptionThrown' },
      data: { text: 'Uncaught TypeError: x', stack_trace: stack },
    }),
  )
  const after = accepted(
    api.pipeline.emit({
      type: 'api_call',
      source: { kind: 'kernel_api' },
      data: { request_id: 'r', operation_id: 'o', status: 200, duration_ms: 1 },
    }),
  )
  await after.committed
  const frameOf = (json: string) =>
    (JSON.parse(json) as { event: { data: { stack_trace: StackTrace } } }).event.data.stack_trace.callFrames[0]
  const liveFrames = await live.until(after.accepted)
  t.same(frameOf(liveFrames.find(f => f.seq === r.accepted)!.json), stack.callFrames[0], 'live: as stored')
  const read = async () => {
    const page = JSON.parse(await (await api.get(`/browsers/${BROWSER_ID}/telemetry/events?category=console`)).text())
    return frameOf(JSON.stringify((page as unknown[])[0]))
  }
  t.same(await read(), stack.callFrames[0], 'before the upload: as stored')
  t.equal((await put(MAP)).status, 201)
  const mapped = { ...stack.callFrames[0], original: { source: 'src/cart.ts', line: 3, column: 3 } }
  t.same(await read(), mapped, 'after: the events API maps it')
  const resumed = await sse(api.url, { 'last-event-id': String(r.accepted - 1) })
  const frames = await resumed.until(r.accepted)
  t.same(frameOf(frames.find(f => f.seq === r.accepted)!.json), mapped, 'and a resume replays it mapped')
  t.equal(api.app.streams.stats.ringResumes, 0, 'from the log: the ring kept from before the upload was dropped')
  t.equal(api.app.streams.stats.storeResumes, 1)
})

/** An SSE stream of the test API: `until(seq)` collects frames until that seq arrived, then closes. */
async function sse(url: string, headers: Record<string, string>) {
  const ctl = new AbortController()
  const res = await fetch(`${url}/browsers/${BROWSER_ID}/telemetry/stream`, {
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
    signal: ctl.signal,
  })
  return { until: (seq: number) => readSseUntil(res, ctl, seq) }
}
