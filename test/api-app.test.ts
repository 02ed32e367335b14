// The Koa app end to end over HTTP: auth, error object, 404s, api_call, capture config, healthz.
import t, { type Test } from 'tap'
import { BROWSER_ID, TOKEN, startApi, type TestApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'
import { keepLevel } from './helpers/store.js'
import type { Envelope } from '../src/events/index.js'

const EVENTS = `/browsers/${BROWSER_ID}/telemetry/events`
const CONFIG = `/browsers/${BROWSER_ID}/telemetry`

async function json(res: Response): Promise<any> {
  return JSON.parse(await res.text())
}

/** Committed control events, read straight from the store. */
async function controlEvents(api: TestApi): Promise<Envelope[]> {
  await api.log.flush()
  const page = await api.log.read({ order: 'asc', limit: 1000, cursor: 1, categories: new Set(['control']) })
  return page.records.map(r => JSON.parse(r.json) as Envelope)
}

function errorShape(t: Tap, body: any, code: string) {
  t.equal(body.code, code)
  t.type(body.message, 'string')
  t.ok(body.message.length > 0)
  const keys = Object.keys(body).sort()
  t.ok(
    keys.every(k => ['code', 'details', 'message'].includes(k)),
    `only code/message/details: ${keys}`,
  )
}
type Tap = Test

t.test('auth: 401 variants carry WWW-Authenticate and the error object', async t => {
  const api = await startApi(t, { tokens: { 'reader-1': ['read'], 'writer-1': ['write'] } })
  const cases: [string, string | undefined, string | undefined][] = [
    ['missing header', undefined, 'Bearer realm="browser-telemetry"'],
    ['wrong scheme', 'Basic dXNlcjpwYXNz', 'Bearer realm="browser-telemetry", error="invalid_request"'],
    ['scheme without token', 'Bearer', 'Bearer realm="browser-telemetry", error="invalid_request"'],
    ['two tokens', `Bearer ${TOKEN} extra`, 'Bearer realm="browser-telemetry", error="invalid_request"'],
    ['bad characters', 'Bearer tok"en', 'Bearer realm="browser-telemetry", error="invalid_request"'],
    ['unknown token', 'Bearer not-a-token', 'Bearer realm="browser-telemetry", error="invalid_token"'],
    [
      'prefix of a real token',
      `Bearer ${TOKEN.slice(0, -1)}`,
      'Bearer realm="browser-telemetry", error="invalid_token"',
    ],
  ]
  for (const [what, header, challenge] of cases) {
    const res = await fetch(api.url + EVENTS, { headers: header === undefined ? {} : { authorization: header } })
    t.equal(res.status, 401, `${what}: 401`)
    t.equal(res.headers.get('www-authenticate'), challenge, `${what}: challenge`)
    t.match(res.headers.get('content-type'), /^application\/json/, `${what}: JSON`)
    errorShape(t, await json(res), 'unauthorized')
  }
  // The scheme name is case-insensitive (RFC 7235).
  t.equal((await fetch(api.url + EVENTS, { headers: { authorization: `bearer ${TOKEN}` } })).status, 200)
})

t.test('auth: scopes -> 403 forbidden; healthz needs no token', async t => {
  const api = await startApi(t, { tokens: { 'reader-1': ['read'], 'writer-1': ['write'] } })
  const as = (token: string, path: string, init: RequestInit = {}) =>
    api.get(path, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...((init.headers as Record<string, string>) ?? {}) },
    })
  t.equal((await as('reader-1', EVENTS)).status, 200, 'read token reads')
  const w = await as('writer-1', EVENTS)
  t.equal(w.status, 403, 'write-only token cannot read')
  const body = await json(w)
  errorShape(t, body, 'forbidden')
  t.match(body.message, /"read" scope/)
  const put = await as('reader-1', CONFIG, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(put.status, 403, 'read-only token cannot change config')
  t.equal(
    (await as('writer-1', CONFIG, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' }))
      .status,
    200,
  )
  const h = await fetch(api.url + '/healthz')
  t.equal(h.status, 200)
})

t.test('errors: unknown route, unknown browser id, wrong method, thrown bug', async t => {
  const api = await startApi(t, {
    deps: {
      routes: [
        r =>
          r.add({
            method: 'GET',
            path: '/boom',
            operationId: 'boom',
            summary: 'throws',
            scope: null,
            responses: { 200: { description: 'never' } },
            handler: async () => {
              throw new Error('secret internal detail at /srv/x.ts:12')
            },
          }),
      ],
    },
  })
  const unknown = await api.get('/nope/nothing')
  t.equal(unknown.status, 404)
  t.match(unknown.headers.get('content-type'), /^application\/json/)
  errorShape(t, await json(unknown), 'not_found')

  for (const path of [
    '/browsers/other/telemetry/events',
    '/browsers/other/telemetry/stream',
    '/browsers/other/telemetry',
  ]) {
    const res = await api.get(path)
    t.equal(res.status, 404, `${path}: 404`)
    const body = await json(res)
    errorShape(t, body, 'not_found')
    t.match(body.message, /browser "other" not found/)
  }

  const post = await api.get(EVENTS, { method: 'POST' })
  t.equal(post.status, 405)
  t.equal(post.headers.get('allow'), 'HEAD, GET')
  errorShape(t, await json(post), 'method_not_allowed')

  const boom = await api.get('/boom')
  t.equal(boom.status, 500)
  const text = await boom.text()
  t.same(JSON.parse(text), { code: 'internal', message: 'internal error' })
  t.notMatch(text, /secret|\.ts|at /, 'no stack or message leaks')
})

t.test('api_call: emitted with X-Request-Id = request_id, not for reads, streams, healthz or unmatched', async t => {
  const api = await startApi(t, { deps: { streams: { keepaliveMs: 60_000 } } })
  // Telemetry reads, the stream, healthz and unknown routes must not emit.
  t.equal((await api.get(EVENTS)).status, 200)
  t.equal((await api.get(EVENTS + '?category=control&limit=5')).status, 200)
  t.equal((await api.get(EVENTS + '?limit=0')).status, 400)
  t.equal((await fetch(api.url + EVENTS)).status, 401)
  t.equal((await fetch(api.url + '/healthz')).status, 200)
  t.equal((await api.get('/nope')).status, 404)
  const ac = new AbortController()
  const s = await api.get(`/browsers/${BROWSER_ID}/telemetry/stream`, { signal: ac.signal })
  t.equal(s.status, 200)
  ac.abort()
  await waitFor(() => api.app.streams.size === 0, 10_000, 'stream closed')
  t.same(await controlEvents(api), [], 'no api_call from reads, streams, healthz, unmatched routes')

  const res = await api.get(CONFIG, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', 'x-request-id': 'agent-req_42.a:b' },
    body: '{"browser":{}}',
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('x-request-id'), 'agent-req_42.a:b', 'a sane incoming id is honoured')
  const bad = await api.get(CONFIG, { headers: { 'x-request-id': 'has spaces and "quotes"' } })
  const generated = bad.headers.get('x-request-id')!
  t.match(generated, /^[0-9a-f-]{36}$/, 'an insane incoming id is replaced')
  const denied = await fetch(api.url + CONFIG, { method: 'PUT', headers: { authorization: 'Bearer wrong' } })
  t.equal(denied.status, 401)
  const deniedId = denied.headers.get('x-request-id')!

  const events = await waitFor(
    async () => {
      const e = await controlEvents(api)
      return e.length >= 2 && e
    },
    10_000,
    'api_call events',
  )
  await api.log.flush()
  t.equal((await controlEvents(api)).length, 2, 'a call refused by auth emits no api_call (metrics count it)')
  const [patch, get] = events.map(e => e.event)
  for (const e of [patch, get]) {
    t.equal(e!.type, 'api_call')
    t.same(e!.source, { kind: 'kernel_api' })
  }
  const data = (e: any) => e.data
  t.match(data(patch), { request_id: 'agent-req_42.a:b', operation_id: 'updateBrowserTelemetryConfig', status: 200 })
  t.match(data(get), { request_id: generated, operation_id: 'getBrowserTelemetryConfig', status: 200 })
  t.notOk(
    events.some(e => JSON.stringify(e).includes(deniedId)),
    'nothing about the refused call in the log',
  )
  for (const e of [patch, get]) t.ok(typeof data(e).duration_ms === 'number' && data(e).duration_ms >= 0)
})

t.test('capture config: GET, PATCH merges, PUT layers onto the defaults, monitor follows the rule', async t => {
  const api = await startApi(t, { pipeOpts: { categories: ['console', 'network', 'control'] } })
  const send = async (method: string, body: unknown, contentType = 'application/json') =>
    api.get(CONFIG, {
      method,
      headers: { 'content-type': contentType },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const enabledOf = (cfg: any) =>
    Object.entries(cfg.browser)
      .filter(([, v]: any) => v.enabled)
      .map(([k]) => k)
      .sort()

  const g = await api.get(CONFIG)
  t.equal(g.status, 200)
  const cfg = await json(g)
  t.same(
    Object.keys(cfg.browser).sort(),
    ['captcha', 'connection', 'console', 'control', 'interaction', 'network', 'page', 'screenshot', 'system'],
    'every configurable category, no monitor',
  )
  t.same(enabledOf(cfg), ['console', 'control', 'network'])

  let r = await send('PATCH', { browser: { console: { enabled: false }, screenshot: { enabled: true } } })
  t.equal(r.status, 200)
  t.same(enabledOf(await json(r)), ['control', 'network', 'screenshot'])
  t.equal(api.pipeline.isEnabled('console'), false, 'takes effect in the pipeline')
  t.same(
    api.pipeline.emit({ type: 'console_log', data: { level: 'log', text: 'x', args: [] } }),
    { dropped: 'category_disabled' },
    'the next console event is gated',
  )
  t.equal(api.pipeline.isEnabled('monitor'), true, 'network still on: monitor flows')

  r = await send('PATCH', { browser: { network: { enabled: false } } })
  t.same(enabledOf(await json(r)), ['control', 'screenshot'])
  t.equal(api.pipeline.isEnabled('monitor'), false, 'no CDP category: monitor silent')

  r = await send('PUT', { browser: { page: { enabled: true } } })
  t.same(enabledOf(await json(r)), ['console', 'control', 'network', 'page'], 'PUT = defaults + body')
  r = await send('PUT', {})
  t.same(enabledOf(await json(r)), ['console', 'control', 'network'], 'PUT {} resets to the defaults')
  r = await send('PATCH', { browser: { page: {} } })
  t.same(enabledOf(await json(r)), ['console', 'control', 'network'], 'a category without enabled is unchanged')

  const invalid: [string, unknown, string, string?][] = [
    ['monitor key', { browser: { monitor: { enabled: true } } }, 'browser.monitor'],
    ['unknown category', { browser: { bogus: { enabled: true } } }, 'browser'],
    ['non-boolean', { browser: { console: { enabled: 'yes' } } }, 'browser.console.enabled'],
    ['extra key', { browser: { console: { enabled: true, x: 1 } } }, 'browser.console'],
    ['top-level extra', { browser: {}, monitor: {} }, 'monitor'],
    ['array', [], 'body'],
    ['not JSON', '{nope', 'body'],
    ['text/plain', 'hello', 'body', 'text/plain'],
    ['empty body', '', 'body'],
  ]
  for (const [what, body, param, ct] of invalid) {
    const res = await send('PUT', body, ct)
    t.equal(res.status, 400, `${what}: 400`)
    const b = await json(res)
    errorShape(t, b, 'bad_request')
    t.equal(b.details?.[0]?.code, 'invalid_input', `${what}: invalid_input`)
    t.ok(b.details?.[0]?.message.startsWith(param), `${what}: names ${param} (${b.details?.[0]?.message})`)
  }
  t.same(
    enabledOf(await json(await api.get(CONFIG))),
    ['console', 'control', 'network'],
    'rejected bodies changed nothing',
  )
})

t.test('healthz: 200 with store + monitor state; 503 when the store cannot write', async t => {
  const raw = keepLevel()
  const api = await startApi(t, {
    deps: { monitorState: () => ({ state: 'collecting', targets: 2 }) },
    logOpts: { level: raw.level },
  })
  let res = await fetch(api.url + '/healthz')
  t.equal(res.status, 200)
  let body = await json(res)
  t.equal(body.status, 'ok')
  t.equal(body.browser_id, BROWSER_ID)
  t.same(body.monitor, { state: 'collecting', targets: 2 })
  t.match(body.store, { writable: true, writeFailures: 0 })

  type Chained = { write(): Promise<void>; close(): Promise<void> }
  const db = raw.db() as unknown as { batch: () => Chained }
  const realBatch = db.batch
  db.batch = () => {
    const b = realBatch.call(db)
    b.write = () => {
      void b.close()
      return Promise.reject(new Error('disk full (test)'))
    }
    return b
  }
  api.pipeline.emit({ type: 'cdp_connect', data: {} })
  await waitFor(() => !api.log.health().writable, 10_000, 'write failure')
  res = await fetch(api.url + '/healthz')
  t.equal(res.status, 503)
  body = await json(res)
  t.equal(body.status, 'degraded')
  t.match(body.store, { writable: false, lastWriteError: 'disk full (test)' })
  t.ok(body.store.pendingEvents >= 1)

  db.batch = realBatch
  await waitFor(() => api.log.health().writable, 20_000, 'write recovery')
  t.equal((await fetch(api.url + '/healthz')).status, 200, 'back to 200 once writes recover')
})
