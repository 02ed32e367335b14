// POST /browsers/{id}/telemetry/events through the real API app: validation (400 naming the field),
// 200 with the committed envelope, 204 for a disabled category, auth and scope.
import t, { type Test } from 'tap'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet, tokenId } from '../src/identity/tokens.js'
import { startApiServer } from '../src/api/server.js'
import { registerIngestRoutes, parseIngestBody } from '../src/api/routes/ingest.js'
import type { Envelope } from '../src/events/index.js'
import { accepted, openStore } from './helpers/store.js'

const BROWSER = 'br-ingest'
const PUBLISH = 'tok-publish'
const READ = 'tok-read'
const ALL = 'tok-all'

async function setup(tt: Test) {
  const { log, pipeline } = await openStore(tt, {}, { clock: () => clockUs })
  let clockUs = 1_700_000_000_000_000
  const tokens = new TokenSet()
  tokens.add(PUBLISH, ['publish'])
  tokens.add(READ, ['read'])
  tokens.add(ALL, ALL_SCOPES)
  const app = createApiApp({
    browserId: BROWSER,
    log,
    pipeline,
    tokens,
    routes: [r => registerIngestRoutes(r, { pipeline, browserId: BROWSER })],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  tt.teardown(() => server.close(500))
  const post = (
    body: unknown,
    opts: { token?: string | null; id?: string; contentType?: string; raw?: string } = {},
  ) => {
    const headers: Record<string, string> = { 'content-type': opts.contentType ?? 'application/json' }
    if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? PUBLISH}`
    return fetch(`${server.url}/browsers/${opts.id ?? BROWSER}/telemetry/events`, {
      method: 'POST',
      headers,
      body: opts.raw ?? JSON.stringify(body),
    })
  }
  const stored = async () =>
    (await log.read({ order: 'asc', limit: 1000 })).records.map(r => JSON.parse(r.json) as Envelope)
  return {
    log,
    pipeline,
    post,
    stored,
    setClock: (us: number) => {
      clockUs = us
    },
  }
}

async function expect400(tt: Test, res: Response, field: string, message?: RegExp) {
  tt.equal(res.status, 400, `400 for ${field}`)
  const body = (await res.json()) as { code: string; message: string; details?: { code: string; message: string }[] }
  tt.equal(body.code, 'bad_request')
  tt.equal(body.details?.[0]?.code, 'invalid_input')
  tt.ok(body.details?.[0]?.message.startsWith(`${field}: `), `detail names ${field}: ${body.details?.[0]?.message}`)
  if (message) tt.match(body.message, message)
}

/** The publish token has no name: published events carry its hash-derived id. */
const PUBLISHER = tokenId(PUBLISH)

t.test('live view and captcha events: 200 with the committed envelope', async t => {
  const s = await setup(t)
  const res = await s.post({
    type: 'live_view_connect',
    source: { kind: 'local_process', event: 'live-view' },
    data: { session_id: 'lv-1' },
  })
  t.equal(res.status, 200)
  const env = (await res.json()) as Envelope
  t.same(env, {
    seq: env.seq,
    event: {
      ts: 1_700_000_000_000_000,
      type: 'live_view_connect',
      category: 'connection',
      source: { kind: 'local_process', event: 'live-view', metadata: { published_by: PUBLISHER } },
      data: { session_id: 'lv-1' },
    },
  })
  t.ok(env.seq >= 1)
  // Committed = readable right away, byte-identical to the answer.
  const after = await s.stored()
  t.same(
    after.find(e => e.seq === env.seq),
    env,
  )

  s.setClock(1_700_000_000_500_000)
  const disc = (await (
    await s.post({
      type: 'live_view_disconnect',
      category: 'connection',
      source: { kind: 'local_process' },
      data: { session_id: 'lv-1', duration_ms: 500 },
    })
  ).json()) as Envelope
  t.same(disc.event.data, { session_id: 'lv-1', duration_ms: 500 })
  t.ok(disc.seq > env.seq)

  const captcha = {
    captcha_type: 'turnstile',
    status: 'failure',
    duration_ms: 1234.5,
    task_id: 't-9',
    error_code: 'ERROR_CAPTCHA_UNSOLVABLE',
    website_host: 'example.com',
    website_path: '/login',
  }
  const c = await s.post({ type: 'captcha_solve_result', source: { kind: 'extension' }, data: captcha })
  t.equal(c.status, 200)
  const cenv = (await c.json()) as Envelope
  t.same(cenv.event.data, captcha)
  t.equal(cenv.event.category, 'captcha')
  const ok = await s.post({
    type: 'captcha_solve_result',
    source: { kind: 'local_process' },
    data: { captcha_type: 'other', status: 'success', duration_ms: 10 },
  })
  t.equal(ok.status, 200)
  // Publishing is telemetry plumbing: no api_call of its own (only the four published events).
  // (A marker committed after the responses: anything emitted for those requests is committed too.)
  t.equal(await accepted(s.pipeline.emit({ type: 'cdp_connect', data: {} })).committed, true)
  t.same(
    (await s.stored()).map(e => e.event.type),
    ['live_view_connect', 'live_view_disconnect', 'captcha_solve_result', 'captcha_solve_result', 'cdp_connect'],
  )
})

t.test('captcha events as the solver sends them: started, challenge result, press_and_hold, challenge_id', async t => {
  const s = await setup(t)
  const src = { kind: 'extension' as const }
  const started = { captcha_type: 'press_and_hold', challenge_id: 'ch-1', task_id: 't-1', website_host: 'shop.test' }
  const a = await s.post({ type: 'captcha_solve_started', source: src, data: started })
  t.equal(a.status, 200)
  const aenv = (await a.json()) as Envelope
  t.same([aenv.event.category, aenv.event.data], ['captcha', started])
  // The document lists captcha_solve_result's kinds: press_and_hold is stored as other, named in the source.
  const result = {
    captcha_type: 'press_and_hold',
    status: 'success',
    duration_ms: 800,
    task_id: 't-1',
    challenge_id: 'ch-1',
  }
  const b = await s.post({ type: 'captcha_solve_result', source: src, data: result })
  t.equal(b.status, 200)
  const benv = (await b.json()) as Envelope
  t.same(benv.event.data, { ...result, captcha_type: 'other' })
  t.same(benv.event.source, {
    kind: 'extension',
    metadata: { published_by: PUBLISHER, captcha_type: 'press_and_hold' },
  })
  const challenge = {
    captcha_type: 'recaptcha_v2',
    challenge_id: 'ch-1',
    status: 'solved',
    duration_ms: 1500,
    website_path: '/checkout',
  }
  const c = await s.post({ type: 'captcha_challenge_result', source: src, data: challenge })
  t.equal(c.status, 200)
  t.same(((await c.json()) as Envelope).event.data, challenge)
  t.same(
    (await s.stored()).map(e => [e.event.type, e.event.category]),
    [
      ['captcha_solve_started', 'captcha'],
      ['captcha_solve_result', 'captcha'],
      ['captcha_challenge_result', 'captcha'],
    ],
  )
  // The same rules as captcha_solve_result: a path without its query, no empty strings, known kinds.
  for (const type of ['captcha_solve_started', 'captcha_challenge_result']) {
    const base = type === 'captcha_solve_started' ? started : challenge
    const post = (d: object) => s.post({ type, source: src, data: { ...base, ...d } })
    await expect400(t, await post({ website_path: '/login?next=/home' }), 'data.website_path', /query string/)
    await expect400(t, await post({ website_path: '/login#frag' }), 'data.website_path')
    await expect400(t, await post({ challenge_id: '' }), 'data.challenge_id', /empty/)
    await expect400(t, await post({ captcha_type: 'funcaptcha' }), 'data.captcha_type')
    await expect400(t, await post({ solver: 'x' }), 'data.solver')
  }
  await expect400(
    t,
    await s.post({ type: 'captcha_challenge_result', source: src, data: { ...challenge, status: 'success' } }),
    'data.status',
  )
  const { challenge_id: _drop, ...noChallenge } = challenge
  await expect400(
    t,
    await s.post({ type: 'captcha_challenge_result', source: src, data: noChallenge }),
    'data.challenge_id',
  )
  t.equal((await s.stored()).length, 3, 'nothing refused was stored')
})

t.test('producer ts: kept as source.metadata.producer_ts, envelope ts stays non-decreasing', async t => {
  const s = await setup(t)
  s.setClock(2_000_000)
  const a = (await (
    await s.post({
      type: 'live_view_connect',
      source: { kind: 'local_process', metadata: { host: 'vm' } },
      data: { session_id: 'x' },
      ts: 9_999_999_999,
    })
  ).json()) as Envelope
  t.equal(a.event.ts, 2_000_000, 'the daemon stamps ts')
  t.same(a.event.source, {
    kind: 'local_process',
    metadata: { host: 'vm', producer_ts: '9999999999', published_by: PUBLISHER },
  })
  s.setClock(1_000_000) // wall clock steps back
  const b = (await (
    await s.post({ type: 'live_view_connect', source: { kind: 'local_process' }, data: { session_id: 'x' }, ts: 1 })
  ).json()) as Envelope
  t.equal(b.event.ts, 2_000_000, 'never below the previous ts')
  t.same(b.event.source, { kind: 'local_process', metadata: { producer_ts: '1', published_by: PUBLISHER } })
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', source: { kind: 'local_process' }, data: { session_id: 'x' }, ts: -5 }),
    'ts',
  )
  await expect400(
    t,
    await s.post({
      type: 'live_view_connect',
      source: { kind: 'local_process' },
      data: { session_id: 'x' },
      ts: '2024',
    }),
    'ts',
  )
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', source: { kind: 'local_process' }, data: { session_id: 'x' }, ts: 1.5 }),
    'ts',
  )
})

t.test('invalid input: 400 naming the field, nothing stored', async t => {
  const s = await setup(t)
  const src = { kind: 'local_process' }
  const cap = (d: object) => ({
    type: 'captcha_solve_result',
    source: src,
    data: { captcha_type: 'hcaptcha', status: 'success', duration_ms: 5, ...d },
  })
  await expect400(t, await s.post(cap({ website_path: '/login?next=/home' })), 'data.website_path', /query string/)
  await expect400(t, await s.post(cap({ website_path: '/login#frag' })), 'data.website_path')
  await expect400(t, await s.post(cap({ error_code: 'E1' })), 'data.error_code', /success/)
  await expect400(t, await s.post(cap({ status: 'failure' })), 'data.error_code', /required/)
  await expect400(t, await s.post(cap({ captcha_type: 'funcaptcha' })), 'data.captcha_type')
  await expect400(t, await s.post(cap({ status: 'solved' })), 'data.status')
  await expect400(t, await s.post(cap({ duration_ms: -1 })), 'data.duration_ms')
  await expect400(t, await s.post(cap({ task_id: '' })), 'data.task_id', /empty/)
  await expect400(t, await s.post(cap({ solver: 'x' })), 'data.solver')
  await expect400(t, await s.post({ type: 'nope', source: src, data: {} }), 'type', /unknown event type "nope"/)
  await expect400(t, await s.post({ source: src, data: {} }), 'type')
  await expect400(
    t,
    await s.post({ type: 'monitor_disconnected', source: src, data: { reason: 'browser_restarted' } }),
    'type',
    /only by the daemon/,
  )
  await expect400(
    t,
    await s.post({
      type: 'api_call',
      source: src,
      data: { request_id: 'r', operation_id: 'o', status: 200, duration_ms: 1 },
    }),
    'type',
  )
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', category: 'control', source: src, data: { session_id: 'a' } }),
    'category',
    /"connection"/,
  )
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', source: { kind: 'kernel_api' }, data: { session_id: 'a' } }),
    'source.kind',
    /reserved/,
  )
  await expect400(
    t,
    await s.post({ type: 'console_log', source: { kind: 'cdp' }, data: { level: 'log', text: 'x', args: [] } }),
    'source.kind',
    /reserved for events the daemon captures/,
  )
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', source: { kind: 'satellite' }, data: { session_id: 'a' } }),
    'source.kind',
  )
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', source: { kind: 'local_process', extra: 1 }, data: { session_id: 'a' } }),
    'source.extra',
  )
  await expect400(t, await s.post({ type: 'live_view_connect', data: { session_id: 'a' } }), 'source')
  await expect400(t, await s.post({ type: 'live_view_connect', source: src }), 'data')
  await expect400(t, await s.post({ type: 'live_view_connect', source: src, data: {} }), 'data.session_id')
  await expect400(
    t,
    await s.post({ type: 'live_view_disconnect', source: src, data: { session_id: 'a' } }),
    'data.duration_ms',
  )
  await expect400(
    t,
    await s.post({ type: 'live_view_connect', source: src, data: { session_id: 'a' }, seq: 4 }),
    'seq',
    /unknown field/,
  )
  await expect400(t, await s.post([1, 2]), 'body')
  await expect400(t, await s.post(null, { raw: '{"type": ' }), 'body', /not valid JSON/)
  const form = await s.post(null, { raw: 'type=live_view_connect', contentType: 'application/x-www-form-urlencoded' })
  t.equal(form.status, 415)
  t.match(await form.json(), { code: 'unsupported_media_type' })
  t.same(await s.stored(), [], 'nothing stored')
})

t.test('disabled category: 204 and nothing stored; auth, scope and browser id', async t => {
  const s = await setup(t)
  s.pipeline.setCategories(['connection', 'control'])
  const res = await s.post({
    type: 'captcha_solve_result',
    source: { kind: 'local_process' },
    data: { captcha_type: 'other', status: 'timeout', duration_ms: 30000 },
  })
  t.equal(res.status, 204)
  t.equal(await res.text(), '')
  // Still validated first: bad input is a 400 even when the category is off.
  await expect400(
    t,
    await s.post({
      type: 'captcha_solve_result',
      source: { kind: 'local_process' },
      data: { captcha_type: 'other', status: 'success', duration_ms: 1, error_code: 'x' },
    }),
    'data.error_code',
  )
  // ... and so is a schema violation, which emit() reports as dropped: invalid before the gate.
  await expect400(
    t,
    await s.post({
      type: 'captcha_solve_result',
      source: { kind: 'local_process' },
      data: { captcha_type: 'other', status: 'timeout', duration_ms: 'slow' },
    }),
    'data.duration_ms',
  )
  t.same(await s.stored(), [])

  const body = { type: 'live_view_connect', source: { kind: 'local_process' }, data: { session_id: 'a' } }
  const none = await s.post(body, { token: null })
  t.equal(none.status, 401)
  t.match(await none.json(), { code: 'unauthorized' })
  const read = await s.post(body, { token: READ })
  t.equal(read.status, 403)
  t.match(await read.json(), { code: 'forbidden', message: /publish/ })
  const other = await s.post(body, { id: 'someone-else' })
  t.equal(other.status, 404)
  t.match(await other.json(), { code: 'not_found' })
  t.equal((await s.post(body, { token: ALL })).status, 200)
})

t.test('the route is in the OpenAPI document', async t => {
  const { log, pipeline } = await openStore(t)
  const tokens = new TokenSet()
  tokens.add(ALL, ALL_SCOPES)
  const app = createApiApp({
    browserId: BROWSER,
    log,
    pipeline,
    tokens,
    routes: [r => registerIngestRoutes(r, { pipeline })],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close(500))
  const res = await fetch(`${server.url}/openapi.json`, { headers: { authorization: `Bearer ${ALL}` } })
  t.equal(res.status, 200)
  const doc = (await res.json()) as {
    paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>
  }
  const op = doc.paths['/browsers/{id}/telemetry/events']?.post
  t.equal(op?.operationId, 'publishBrowserTelemetryEvent')
  t.ok(op?.responses['200'] && op?.responses['204'], '200 and 204 documented')
})

t.test('parseIngestBody as a pure function', async t => {
  t.same(parseIngestBody({ type: 'cdp_connect', source: { kind: 'extension' }, data: {} }), {
    type: 'cdp_connect',
    source: { kind: 'extension' },
    data: {},
  })
  t.match(
    (() => {
      try {
        parseIngestBody('x')
      } catch (err) {
        return err
      }
    })(),
    { status: 400 },
  )
})
