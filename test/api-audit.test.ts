// Audit on a real daemon: refused requests never reach the log (metrics count
// them), every capture-config change is recorded with the token's name and scopes before it takes
// effect (control cannot be switched off silently), and published events can never pass for
// captured ones and name the token that published them.
import t from 'tap'
import type { Test } from 'tap'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { tempDir } from './helpers/store.js'

const ADMIN = 'admin-token-123'
const READER = 'reader-token-456'
const PRODUCER = 'producer-token-789'

async function daemon(t: Test) {
  const dir = await tempDir(t)
  const tokenFile = join(dir, 'tokens')
  // Third column: the token's name (what audit records show). The reader has none: a hash-derived id.
  await writeFile(tokenFile, `${ADMIN} read,write ops-admin\n${READER} read\n${PRODUCER} publish live-view\n`)
  const d = await startDaemon(
    parseServeConfig(['--listen', '127.0.0.1:0', '--data-dir', dir, '--no-browser', '--token-file', tokenFile], {}),
    { logger: silentLogger, announce: () => {} },
  )
  t.teardown(() => d.close())
  const call = (path: string, token: string | undefined, init: RequestInit = {}) =>
    fetch(d.url + path, {
      ...init,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...(init.headers as Record<string, string>),
      },
    })
  const all = async () => {
    await d.log.flush()
    return (await d.log.read({ order: 'asc', limit: 1000, cursor: 1 })).records.map(
      r =>
        JSON.parse(r.json) as {
          seq: number
          event: {
            type: string
            source: { kind: string; metadata?: Record<string, string> }
            data: Record<string, unknown>
          }
        },
    )
  }
  return { d, call, all }
}

t.test('unauthenticated and unauthorised requests emit no api_call; /metrics counts them', async t => {
  const { d, call, all } = await daemon(t)
  const cfg = `/browsers/${d.browserId}/telemetry`
  t.equal((await call(cfg, undefined)).status, 401)
  t.equal((await call(cfg, 'wrong-token')).status, 401)
  t.equal((await call(cfg, undefined, { headers: { authorization: 'Basic abc' } })).status, 401)
  t.equal((await call(cfg, READER, { method: 'PATCH', body: '{"browser":{"network":{"enabled":false}}}' })).status, 403)
  t.equal((await call(`/browsers/${d.browserId}/fs/upload_zip`, PRODUCER, { method: 'POST' })).status, 403)
  t.same(await all(), [], 'nothing in the log')
  const metrics = await (await call('/metrics', READER)).text()
  t.match(metrics, /browser_telemetry_http_requests_total\{operation="getBrowserTelemetryConfig",status="401"\} 3/)
  t.match(metrics, /browser_telemetry_http_requests_total\{operation="updateBrowserTelemetryConfig",status="403"\} 1/)
  // An accepted call still is recorded.
  t.equal((await call(cfg, READER)).status, 200)
  t.same(
    (await all()).map(e => e.event.type),
    ['api_call'],
  )
})

t.test(
  'capture-config changes are recorded with who, old and new, before they apply; control off is never silent',
  async t => {
    const { d, call, all } = await daemon(t)
    const cfg = `/browsers/${d.browserId}/telemetry`
    const before = (await all()).length
    const off = await call(cfg, ADMIN, {
      method: 'PATCH',
      body: '{"browser":{"control":{"enabled":false},"network":{"enabled":false}}}',
    })
    t.equal(off.status, 200)
    const events = (await all()).slice(before)
    t.same(
      events.map(e => e.event.type),
      ['capture_config_changed'],
      'the change is stored; later api_calls are off with control',
    )
    const change = events[0]!.event
    t.same(change.source, { kind: 'kernel_api' })
    t.match(change.data, {
      operation_id: 'updateBrowserTelemetryConfig',
      token_name: 'ops-admin',
      token_scopes: ['read', 'write'],
      old_categories: ['console', 'network', 'page', 'interaction', 'control', 'connection', 'system', 'captcha'],
      new_categories: ['console', 'page', 'interaction', 'connection', 'system', 'captcha'],
    })
    t.equal(change.data.request_id, off.headers.get('x-request-id'))
    t.equal(d.pipeline.isEnabled('control'), false)
    // Back on: recorded as well (the event is emitted after the switch is applied? no: before, while control is still off -> nothing to record in).
    await call(cfg, ADMIN, { method: 'PUT', body: '{"browser":{}}' })
    t.equal(d.pipeline.isEnabled('control'), true)
    await call(cfg, READER)
    const after = (await all()).map(e => e.event.type)
    t.equal(
      after.filter(x => x === 'capture_config_changed').length,
      1,
      'while control was off nothing could be recorded (the operator turned it off, and that was recorded)',
    )
    t.equal(after[after.length - 1], 'api_call')
    // A token without a name shows its hash-derived id, never the token.
    await call(cfg, ADMIN, { method: 'PATCH', body: '{"browser":{"page":{"enabled":false}}}' })
    const last = (await all()).filter(e => e.event.type === 'capture_config_changed').pop()!
    t.equal(last.event.data.token_name, 'ops-admin')
    const stored = JSON.stringify(await all())
    for (const tok of [ADMIN, READER, PRODUCER]) t.notOk(stored.includes(tok), 'no token in any event')
  },
)

t.test('published events: daemon-owned source kinds and types refused with 400; the publisher is recorded', async t => {
  const { d, call, all } = await daemon(t)
  const ingest = `/browsers/${d.browserId}/telemetry/events`
  const publish = (body: unknown) => call(ingest, PRODUCER, { method: 'POST', body: JSON.stringify(body) })
  for (const kind of ['cdp', 'kernel_api']) {
    const r = await publish({ type: 'console_log', source: { kind }, data: { level: 'log', text: 'x', args: ['x'] } })
    t.equal(r.status, 400, kind)
    t.match(await r.json(), {
      code: 'bad_request',
      details: [{ code: 'invalid_input', message: /^source\.kind: .*reserved/ }],
    })
  }
  for (const type of ['api_call', 'capture_config_changed']) {
    t.equal((await publish({ type, source: { kind: 'extension' }, data: {} })).status, 400, type)
  }
  const forged = await publish({
    type: 'live_view_connect',
    source: { kind: 'local_process', metadata: { published_by: 'ops-admin' } },
    data: { session_id: 's1' },
  })
  t.equal(forged.status, 400, 'a producer cannot claim another publisher')
  const ok = await publish({
    type: 'live_view_connect',
    source: { kind: 'local_process', event: 'ws', metadata: { host: 'lv' } },
    data: { session_id: 's1' },
  })
  t.equal(ok.status, 200)
  t.same((await ok.json()).event.source, {
    kind: 'local_process',
    event: 'ws',
    metadata: { host: 'lv', published_by: 'live-view' },
  })
  const stored = (await all()).filter(e => e.event.type === 'live_view_connect')
  t.equal(stored.length, 1)
  t.same(stored[0]!.event.source.metadata, { host: 'lv', published_by: 'live-view' })
})
