// The recording API over a frame store filled directly: paging like the events API, the 400s of its
// parameters, 404 for unknown frames and browsers, 401 without a token, the JPEG itself, the
// recording state, and the capture config's `recording` switch (PATCH / PUT / GET).
import t, { type Test } from 'tap'
import { FrameStore } from '../src/recording/frame-store.js'
import { RecordingSwitch } from '../src/recording/switch.js'
import { registerRecordingRoutes } from '../src/api/routes/recording.js'
import { startApi, BROWSER_ID, TOKEN } from './helpers/api.js'
import { tempDir } from './helpers/store.js'

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0) * 1000 // µs

function jpeg(tag: number): Buffer {
  const b = Buffer.alloc(64, tag)
  b.writeUInt16BE(0xffd8, 0)
  b.writeUInt16BE(0xffd9, 62)
  return b
}

async function setup(t: Test, frames = 25) {
  const dir = await tempDir(t)
  const store = await FrameStore.open({ dir, maxBytes: 10_000_000, maxPendingFrames: 1000 })
  t.teardown(() => store.close())
  // One frame a second, ending a minute before NOW.
  for (let i = 0; i < frames; i++)
    store.add({
      ts: NOW - 60_000_000 - (frames - 1 - i) * 1_000_000,
      target_id: i % 2 ? 'PAGE-B' : 'PAGE-A',
      after_seq: i * 3,
      width: 320,
      height: 200,
      viewport_width: 1280,
      viewport_height: 800,
      jpeg: jpeg(i + 1),
    })
  await store.flush()
  const recording = new RecordingSwitch(false)
  const api = await startApi(t, {
    tokens: { 'write-only': ['write'] },
    deps: {
      now: () => NOW,
      recording,
      // The log is the API's own, there once startApi returns (the route reads it per request).
      routes: [
        r =>
          registerRecordingRoutes(r, {
            frames: store,
            recording,
            now: () => NOW,
            get log() {
              return api.log
            },
          }),
      ],
    },
  })
  return { store, recording, api }
}

const base = `/browsers/${BROWSER_ID}/recording`

t.test('frames are paged like events: X-Has-More / X-Next-Offset, oldest first, never an empty page', async t => {
  const { api } = await setup(t)
  const ids: number[] = []
  let url = `${base}/frames?since=1h&limit=10`
  for (let n = 0; n < 10; n++) {
    const res = await api.get(url)
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /application\/json/)
    const items = (await res.json()) as { frame_id: number; ts: number }[]
    const more = res.headers.get('x-has-more')
    const next = Number(res.headers.get('x-next-offset'))
    t.ok(items.length > 0, 'no empty page')
    ids.push(...items.map(i => i.frame_id))
    if (more !== 'true') {
      t.equal(more, 'false')
      t.equal(next, 0)
      break
    }
    url = `${base}/frames?offset=${next}&limit=10`
  }
  t.same(
    ids,
    Array.from({ length: 25 }, (_, i) => i + 1),
  )
  const one = (await (await api.get(`${base}/frames?since=1h&limit=1`)).json()) as object[]
  t.same(one, [
    {
      frame_id: 1,
      ts: NOW - 60_000_000 - 24_000_000,
      target_id: 'PAGE-A',
      after_seq: 0,
      width: 320,
      height: 200,
      bytes: 64,
      viewport_width: 1280,
      viewport_height: 800,
    },
  ])
})

t.test('since/until: parsed like the events API (RFC 3339 or a duration ago; until exclusive; default 5m)', async t => {
  const { api } = await setup(t)
  const count = async (q: string) => ((await (await api.get(`${base}/frames?${q}`)).json()) as unknown[]).length
  t.equal(await count('limit=1000'), 25, 'since defaults to 5m')
  t.equal(await count('since=70s&limit=1000'), 11, 'since=70s: the last 11 seconds of frames')
  const iso = (us: number) => new Date(us / 1000).toISOString()
  const last = NOW - 60_000_000
  t.equal(await count(`since=${iso(last - 4_000_000)}&until=${iso(last)}`), 4, 'until is exclusive')
  t.equal(await count(`since=10s`), 0, 'nothing newer')
  const res = await api.get(`${base}/frames?since=10s`)
  t.equal(res.headers.get('x-has-more'), 'false')
  t.equal(res.headers.get('x-next-offset'), '0')
})

t.test('bad parameters are 400 error objects naming the parameter', async t => {
  const { api } = await setup(t)
  for (const q of [
    'limit=0',
    'limit=1001',
    'limit=abc',
    'limit=1&limit=2',
    'offset=-1',
    'offset=1.5',
    'since=yesterday',
    'until=2026-02-30T00:00:00Z',
    'since=1m&until=2m',
  ]) {
    const res = await api.get(`${base}/frames?${q}`)
    t.equal(res.status, 400, q)
    const body = (await res.json()) as { code: string; message: string }
    t.equal(body.code, 'bad_request', q)
    t.match(body.message, /limit|offset|since|until/, `${q}: ${body.message}`)
  }
  const bad = await api.get(`${base}/frames/abc`)
  t.equal(bad.status, 400)
})

t.test('one frame: image/jpeg; unknown frame or browser: 404 error object; no token: 401', async t => {
  const { api } = await setup(t)
  const res = await api.get(`${base}/frames/3`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'image/jpeg')
  t.same(Buffer.from(await res.arrayBuffer()), jpeg(3))
  const missing = await api.get(`${base}/frames/999`)
  t.equal(missing.status, 404)
  t.match(await missing.json(), { code: 'not_found', message: /frame 999/ })
  t.equal((await api.get(`/browsers/other/recording/frames?since=1h`)).status, 404)
  t.equal((await api.get(`/browsers/other/recording/frames/3`)).status, 404)
  for (const path of [`${base}/frames`, `${base}/frames/3`, base]) {
    const anon = await fetch(api.url + path)
    t.equal(anon.status, 401, `${path} without a token`)
    t.match(await anon.json(), { code: 'unauthorized' })
    const wrongScope = await api.get(path, { headers: { authorization: 'Bearer write-only' } })
    t.equal(wrongScope.status, 403, `${path} needs the read scope`)
  }
})

t.test('the recording state and the capture config switch', async t => {
  const { api, recording, store } = await setup(t)
  const state = async () => (await (await api.get(base)).json()) as Record<string, unknown>
  t.match(await state(), { enabled: false, frames: 25, bytes: 25 * 64, first_frame_id: 1, last_frame_id: 25 })
  const cfg = async (method: string, body?: unknown) => {
    const res = await api.get(`/browsers/${BROWSER_ID}/telemetry`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as { recording?: { enabled: boolean } } }
  }
  t.same((await cfg('GET')).body.recording, { enabled: false })
  const on = await cfg('PATCH', { recording: { enabled: true } })
  t.equal(on.status, 200)
  t.same(on.body.recording, { enabled: true })
  t.equal(recording.enabled, true, 'PATCH switched it on')
  await api.log.flush()
  const audit = (await api.log.read({ order: 'desc', limit: 10 })).records
    .map(r => JSON.parse(r.json) as { event: { type: string; data: Record<string, unknown> } })
    .find(e => e.event.type === 'capture_config_changed')
  t.match(
    audit?.event.data,
    { operation_id: 'updateBrowserTelemetryConfig', old_recording: false, new_recording: true },
    'the switch is audited: who, from, to',
  )
  t.same(audit?.event.data.old_categories, audit?.event.data.new_categories, 'categories unchanged')
  t.match(await state(), { enabled: true })
  const consoleOff = await cfg('PATCH', { browser: { console: { enabled: false } } })
  t.same(consoleOff.body.recording, { enabled: true }, 'a PATCH that does not name it leaves it')
  t.equal((await cfg('PUT', { browser: {} })).body.recording?.enabled, false, 'PUT resets it to the default (off)')
  t.equal((await cfg('PATCH', { recording: { enabled: 'yes' } })).status, 400)
  t.equal((await cfg('PATCH', { recording: { enabled: true, fps: 3 } })).status, 400)
  // Gaps show in the ids and in the state.
  store.add({ ts: NOW, target_id: 'PAGE-A', after_seq: 100, width: 1, height: 1, jpeg: Buffer.alloc(20_000_000) })
  t.match((await state()).gaps, [{ reason: 'too_large', from_frame_id: 26, to_frame_id: 26 }])
  void TOKEN
})

t.test('the OpenAPI document lists the recording routes', async t => {
  const { api } = await setup(t, 0)
  const res = await api.get('/openapi.json')
  if (res.status !== 200) {
    t.fail(`no /openapi.json route (${res.status})`)
    return
  }
  const doc = (await res.json()) as { paths: Record<string, Record<string, { operationId: string }>> }
  t.equal(doc.paths['/browsers/{id}/recording/frames']?.get?.operationId, 'listBrowserRecordingFrames')
  t.equal(doc.paths['/browsers/{id}/recording/frames/{frame_id}']?.get?.operationId, 'getBrowserRecordingFrame')
  t.equal(doc.paths['/browsers/{id}/recording']?.get?.operationId, 'getBrowserRecording')
})
