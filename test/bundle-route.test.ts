// GET /browsers/{id}/telemetry/bundle: the zip the standard tools accept, with the contract's files,
// events.ndjson byte-equal to the events API's pages of the same window, a HAR 1.2 that validates, and
// the failure cases: bad parameters, no token, a store failing after the headers went out (the client
// must see a broken download), a client that goes away or stops reading (the daemon stops reading
// the log and buffers nothing).
import t from 'tap'
import { request } from 'node:http'
import harValidator from 'har-validator'
import { toHar } from '../src/har/index.js'
import type { Envelope } from '../src/events/index.js'
import { deriveActions, stepsOf, type Action } from '../src/actions/index.js'
import { at, shopSession } from './helpers/agent-session.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { DEFAULT_BUNDLE_LIMITS } from '../src/bundle/bundle.js'
import type { BundleManifest } from '../src/bundle/manifest.js'
import { Redactor } from '../src/events/redact.js'
import type { EventLog } from '../src/store/event-log.js'
import {
  BROWSER_ID,
  T0_US,
  TOKEN,
  apiItems,
  standardToolsAccept,
  startBundleApi,
  unzipAll,
  type BundleApi,
} from './helpers/bundle.js'
import { TINY_PNG } from './helpers/session-mix.js'
import { waitFor } from './helpers/http.js'

const SEC = 1_000_000
const iso = (us: number) => new Date(us / 1000).toISOString().replace('Z', `${String(us % 1000).padStart(3, '0')}Z`)
const PATH = `/browsers/${BROWSER_ID}/telemetry/bundle`

/** Steps [from, to) of the session, step n at T0 + n seconds. */
async function record(api: BundleApi, from: number, to: number, mix = {}): Promise<void> {
  for (let n = from; n < to; n++) {
    api.setClock(T0_US + n * SEC)
    await api.emitStep(n, mix)
  }
}

async function download(api: BundleApi, query: string): Promise<{ res: Response; zip: Buffer }> {
  const res = await api.get(`${PATH}?${query}`)
  return { res, zip: Buffer.from(await res.arrayBuffer()) }
}

t.test('a window as a bundle: standard zip, the contract files, events exactly as the API pages them', async t => {
  const api = await startBundleApi(t)
  await record(api, 0, 30)
  api.log.skipSeq() // a dropped event: a gap the manifest reports
  api.log.skipSeq()
  await record(api, 30, 60)
  api.setClock(T0_US + 100 * SEC)
  // since lands between two steps' events, until right on step 45's first event (exclusive).
  const since = T0_US + 10 * SEC + 500_000
  const until = T0_US + 45 * SEC
  const query = `since=${encodeURIComponent(iso(since))}&until=${encodeURIComponent(iso(until))}`
  const { res, zip } = await download(api, query)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/zip')
  t.equal(
    res.headers.get('content-disposition'),
    `attachment; filename="browser-telemetry-${BROWSER_ID}-20260102T030545Z.zip"`,
  )
  t.equal(res.headers.get('content-length'), null, 'streamed, no length')

  const tools = await standardToolsAccept(t, zip)
  t.match(tools.unzip, /No errors detected/, 'unzip -t accepts it')
  t.match(tools.python, /Done testing/, 'python3 -m zipfile -t accepts it')

  const files = await unzipAll(zip)
  const all = (await apiItems(api, `since=${encodeURIComponent(iso(T0_US - SEC))}`)).map(j => JSON.parse(j) as Envelope)
  const inWindow = all.filter(e => e.event.ts >= since && e.event.ts < until)
  const shots = inWindow.filter(e => e.event.type === 'monitor_screenshot')
  t.same(
    [...files.keys()].sort(),
    [
      'actions.json',
      'console.txt',
      'events.ndjson',
      'frames/index.json',
      'manifest.json',
      'network.har',
      ...shots.map(e => `screenshots/${e.seq}.png`),
    ].sort(),
    'exactly the contract files',
  )
  t.equal(shots.length, 6, 'screenshots of steps 15, 20, ..., 40 (10 and 45 are out)')

  const lines = files.get('events.ndjson')!.toString('utf8')
  t.ok(lines.endsWith('\n'))
  const fromApi = await apiItems(api, query)
  t.same(lines.slice(0, -1).split('\n'), fromApi, 'events.ndjson: the API pages of the window, line for line')
  t.same(
    fromApi.map(j => (JSON.parse(j) as Envelope).seq),
    inWindow.map(e => e.seq),
    'the window is exact: ts >= since and < until',
  )
  t.ok(
    all.some(e => e.event.ts === until) && all.some(e => e.event.ts < since && e.event.ts > since - SEC),
    'events sit right at both bounds',
  )

  const manifest = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  const gapSeq = inWindow.findIndex((e, i) => i > 0 && e.seq > inWindow[i - 1]!.seq + 1)
  t.ok(gapSeq > 0, 'the window holds the gap')
  t.match(manifest, {
    format: 'browser-telemetry-bundle',
    format_version: 1,
    browser_id: BROWSER_ID,
    daemon_version: '9.9.9-test',
    window: {
      since: iso(since),
      until: iso(until),
      since_us: since,
      until_us: until,
      requested: { since: iso(since), until: iso(until) },
    },
    seq: { first: inWindow[0]!.seq, last: inWindow.at(-1)!.seq, events: inWindow.length },
    gaps: {
      dropped: [{ from: inWindow[gapSeq - 1]!.seq + 1, to: inWindow[gapSeq]!.seq - 1, count: 2 }],
      total_gaps: 1,
      total_dropped: 2,
    },
    recording: { enabled: false, frames: 0, gaps: [] },
    redaction: new Redactor().policy(),
    files: {
      'events.ndjson': { events: inWindow.length },
      'console.txt': { lines: inWindow.filter(e => e.event.category === 'console').length },
      'actions.json': { actions: 2 },
      screenshots: { files: 6 },
      frames: { files: 0 },
    },
  })
  t.same(
    manifest.categories,
    ['console', 'network', 'page', 'interaction', 'control', 'connection', 'system', 'screenshot', 'captcha'].filter(
      c => manifest.categories.includes(c),
    ),
  )
  t.equal(manifest.types.monitor_screenshot, 6)
  t.equal(manifest.redaction.headers.includes('authorization'), true)
  t.equal(files.get('frames/index.json')!.toString(), '[]', 'no frame store: an empty frame index')
  for (const e of shots)
    t.same(files.get(`screenshots/${e.seq}.png`), Buffer.from(TINY_PNG, 'base64'), `screenshot ${e.seq}: the PNG bytes`)

  const har = JSON.parse(files.get('network.har')!.toString()) as ReturnType<typeof toHar>
  await t.resolves(harValidator.har(har as never), 'network.har validates against HAR 1.2')
  const expected = toHar(inWindow)
  const key = (e: { startedDateTime: string; _seq: number[] }) => `${e.startedDateTime} ${e._seq.join(',')}`
  t.same(har.log.entries.map(key).sort(), expected.log.entries.map(key).sort(), 'the same entries as the HAR export')
  t.same(
    [...har.log.entries].sort((a, b) => key(a).localeCompare(key(b))),
    [...expected.log.entries].sort((a, b) => key(a).localeCompare(key(b))),
    'entry for entry',
  )
  t.same(har.log.pages, expected.log.pages, 'the same pages with their timings')
  t.ok(
    har.log.entries.some(e => e._webSocketMessages && e._webSocketMessages.length === 2),
    'WebSocket messages are in',
  )
  t.ok(
    har.log.entries.some(e => (e.response.content.text ?? '').startsWith('{"item":')),
    'bodies are in',
  )

  const actions = JSON.parse(files.get('actions.json')!.toString()) as Action[]
  t.same(actions, deriveActions(inWindow), 'actions.json: the actions of the window')
  t.same(
    actions.map(a => [a.kind, a.title, a.connection_id]),
    [
      ['evaluate', 'evaluate', 'agent-1'],
      ['evaluate', 'evaluate', 'agent-1'],
    ],
    'the commands of steps 22 and 37',
  )
  t.same(manifest.steps, [], 'no agent steps in this session')

  const consoleLines = files.get('console.txt')!.toString().split('\n').slice(0, -1)
  t.equal(consoleLines.length, manifest.files['console.txt'].lines)
  t.match(
    consoleLines[0],
    /^2026-01-02T03:04:1\d\.\d{6}Z (log|warning)\s+https:\/\/shop\.example\.com\/page\/1 {2}step 1\d\\tloaded$/,
  )
  // The stored line 1, column 2 are 0-based: people read 2:3.
  t.ok(
    consoleLines.some(l =>
      / exception https:\/\/.* {2}Uncaught Error: boom 13\\n {4}at app\.js:1:2 \(.*app\.js:2:3\)$/.test(l),
    ),
    'an exception: escaped line break, source',
  )
})

t.test("an agent's session: actions.json and the manifest's steps; the derivation's bound", async t => {
  const session = shopSession()
  session.event('agent_step_started', 150, { step_id: 'S1', name: 'buy', via: 'http' })
  session.event('agent_step_finished', 450, {
    step_id: 'S1',
    name: 'buy',
    via: 'http',
    outcome: 'ok',
    duration_ms: 300,
  })
  // Stored in time order (the steps were built last): the log's seqs follow.
  const ordered = [...session.envelopes].sort((a, b) => a.event.ts - b.event.ts)
  const store = async (api: BundleApi): Promise<Envelope[]> => {
    for (const e of ordered) {
      api.setClock(e.event.ts)
      await api.emit({ type: e.event.type, source: e.event.source, data: e.event.data } as EventInput)
    }
    api.setClock(ordered.at(-1)!.event.ts + SEC)
    const page = await api.log.read({ order: 'asc', cursor: 1, limit: 100 })
    return page.records.map(r => JSON.parse(r.json) as Envelope)
  }
  const since = `since=${encodeURIComponent(iso(session.envelopes[0]!.event.ts))}`
  const api = await startBundleApi(t)
  const stored = await store(api)
  t.equal(stored.length, 38)
  const files = await unzipAll((await download(api, since)).zip)
  const actions = JSON.parse(files.get('actions.json')!.toString()) as Action[]
  t.same(actions, deriveActions(stored), 'the derivation of the same events')
  t.same(
    actions.map(a => a.kind),
    ['setup', 'setup', 'navigate', 'click', 'type', 'press', 'evaluate', 'screenshot', 'other', 'scroll'],
  )
  const manifest = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  t.same(manifest.steps, stepsOf(stored))
  t.same(manifest.steps, [
    { step_id: 'S1', name: 'buy', start_ts: at(150), end_ts: at(450), outcome: 'ok', duration_ms: 300 },
  ])
  t.same(manifest.files['actions.json'], { actions: 10 })

  // Bounded: past maxActionRecords the rest of the window is not read, and the manifest says where.
  const small = await startBundleApi(t, { limits: { ...DEFAULT_BUNDLE_LIMITS, maxActionRecords: 10 } })
  await store(small)
  const cut = await unzipAll((await download(small, since)).zip)
  t.same(JSON.parse(cut.get('manifest.json')!.toString()).files['actions.json'], { actions: 3, cut_at_seq: 11 })
  t.same(
    (JSON.parse(cut.get('actions.json')!.toString()) as Action[]).map(a => a.kind),
    ['setup', 'setup', 'navigate'],
    'the actions of the first 10 records',
  )
})

t.test('an empty window still makes a complete bundle; the default window is the last 5 minutes', async t => {
  const api = await startBundleApi(t)
  await record(api, 0, 3)
  api.setClock(T0_US + 3600 * SEC)
  const { res, zip } = await download(api, '')
  t.equal(res.status, 200)
  const files = await unzipAll(zip)
  t.equal(files.get('events.ndjson')!.length, 0)
  const manifest = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  t.match(manifest.seq, { first: null, last: null, events: 0 })
  t.equal(manifest.window.since_us, T0_US + 3300 * SEC)
  t.equal(manifest.window.until, null)
  const har = JSON.parse(files.get('network.har')!.toString()) as object
  await t.resolves(harValidator.har(har as never), 'the empty HAR validates')
})

t.test('bad parameters are the events API refusals; auth and browser id are checked', async t => {
  const api = await startBundleApi(t)
  for (const q of ['since=yesterday', 'until=2026-02-30T00:00:00Z', 'since=1m&until=5m', 'since=']) {
    const bundle = await api.get(`${PATH}?${q}`)
    const events = await api.get(`/browsers/${BROWSER_ID}/telemetry/events?${q}`)
    t.equal(bundle.status, 400, q)
    t.same(await bundle.json(), await events.json(), `${q}: the same error object as the events API`)
  }
  const noToken = await fetch(api.url + PATH)
  t.equal(noToken.status, 401)
  t.match(await noToken.json(), { code: 'unauthorized' })
  const weak = await api.get(PATH, { headers: { authorization: 'Bearer publish-only' } })
  t.equal(weak.status, 403)
  const other = await api.get(`/browsers/someone-else/telemetry/bundle`)
  t.equal(other.status, 404)
  t.equal(api.stats.completed + api.stats.failed + api.stats.active.size, 0, 'no bundle was started')
  const doc = (await (await api.get('/openapi.json')).json()) as {
    paths: Record<string, { get?: { operationId: string; responses: Record<string, { content?: object }> } }>
  }
  const op = doc.paths['/browsers/{id}/telemetry/bundle']?.get
  t.equal(op?.operationId, 'downloadBrowserTelemetryBundle', 'in the OpenAPI document')
  t.ok(op?.responses['200']?.content && 'application/zip' in op.responses['200'].content)
})

t.test('a store failing after the headers went out breaks the download (no valid short zip)', async t => {
  let reads = 0
  const failing = (log: EventLog): EventLog =>
    new Proxy(log, {
      get(target, prop) {
        if (prop === 'read')
          return async (q: Parameters<EventLog['read']>[0]) => {
            if (++reads === 4) throw new Error('disk on fire')
            return target.read(q)
          }
        const v = Reflect.get(target, prop, target) as unknown
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
      },
    })
  const api = await startBundleApi(t, {
    source: log => ({ log: failing(log) }),
    limits: { ...DEFAULT_BUNDLE_LIMITS, readPageEvents: 20 },
  })
  await record(api, 0, 40)
  const res = await api.get(`${PATH}?since=${encodeURIComponent(iso(T0_US))}`)
  t.equal(res.status, 200, 'the headers were out before the failure')
  const got: Buffer[] = []
  const err = await (async () => {
    try {
      for await (const c of res.body!) got.push(Buffer.from(c))
    } catch (e) {
      return e as Error
    }
    return undefined
  })()
  t.ok(err, `the client sees the download fail (${err?.message})`)
  const bytes = Buffer.concat(got)
  t.ok(bytes.length > 0, `${bytes.length} bytes came before the failure`)
  t.equal(bytes.indexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06])), -1, 'no end-of-central-directory record: not a zip')
  await t.rejects(unzipAll(bytes), 'yauzl refuses the bytes')
  await waitFor(() => api.stats.active.size === 0, 5000, 'the build to end')
  t.equal(api.stats.failed, 1)
  t.equal(reads, 4, 'nothing read after the failure')
})

/** An HTTP GET that hands back the response unread (so the test controls the reading). */
function rawGet(api: BundleApi, path: string): Promise<import('node:http').IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(api.url + path, { headers: { authorization: `Bearer ${TOKEN}` } }, resolve)
    req.on('error', reject)
    req.end()
  })
}

t.test(
  'a client that stops reading holds the daemon at a bounded distance; one that leaves stops the build',
  async t => {
    const api = await startBundleApi(t, { limits: { ...DEFAULT_BUNDLE_LIMITS, readPageEvents: 50 } })
    // ~24 MiB of bodies that do not compress: the zip is about as large.
    await record(api, 0, 800, { bodyChars: 30_000, randomBodies: true, screenshotEvery: 0 })
    const full = await download(api, `since=${encodeURIComponent(iso(T0_US))}`)
    t.ok(full.zip.length > 20 * 1024 * 1024, `the whole zip is ${full.zip.length} bytes`)
    t.equal(api.stats.completed, 1)

    // Stops reading after the first chunk.
    const res = await rawGet(api, `${PATH}?since=${encodeURIComponent(iso(T0_US))}`)
    t.equal(res.statusCode, 200)
    await new Promise<void>(r => res.once('data', () => r()))
    res.pause()
    const build = [...api.stats.active][0]!
    // The daemon writes until the socket buffers are full, then waits: produced bytes stop growing.
    let last = -1
    await waitFor(
      async () => {
        const now = build.bytesOut
        const stable = now === last
        last = now
        await new Promise(r => setTimeout(r, 100))
        return stable && now > 0
      },
      20_000,
      'the zip output to stop growing',
    )
    // Socket buffers, not the log: measured 0.02-4.4 MB of a 33 MB zip over 11 fresh-clone suite runs
    // (quiet to load 14), 3.8x under the bound.
    t.ok(
      build.bytesOut < 16 * 1024 * 1024,
      `${build.bytesOut} zip bytes out of ${full.zip.length} were produced while the client was not reading (socket buffers)`,
    )
    const pagesWhilePaused = build.pagesRead
    const eventPages = Math.ceil(api.log.lastSeq / 50)
    // Measured 1-20 of 63 pages (bound 31) over 11 fresh-clone suite runs (quiet to load 14): 1.6x.
    t.ok(pagesWhilePaused < eventPages / 2, `${pagesWhilePaused} of the ${eventPages} pages of events read so far`)

    // Goes away: the build stops, releases the log and the socket.
    res.destroy()
    await waitFor(() => api.stats.active.size === 0, 10_000, 'the build to stop')
    t.equal(api.stats.failed, 1, 'counted as not completed')
    t.ok(build.pagesRead <= pagesWhilePaused + 1, `no more reads after the client left (${build.pagesRead})`)
    const after = build.pagesRead
    await new Promise(r => setImmediate(r))
    t.equal(build.pagesRead, after, 'and none later')

    // Reading again, to its end: the same zip as before (nothing was left in a broken state).
    const again = await download(api, `since=${encodeURIComponent(iso(T0_US))}`)
    const a = await unzipAll(again.zip)
    const b = await unzipAll(full.zip)
    t.same([...a.keys()], [...b.keys()])
    const before = b.get('events.ndjson')!.toString()
    const now = a.get('events.ndjson')!.toString()
    t.ok(now.startsWith(before), 'events.ndjson: the same events')
    t.same(
      now
        .slice(before.length)
        .split('\n')
        .filter(Boolean)
        .map(l => (JSON.parse(l) as Envelope).event.type),
      ['api_call', 'api_call'],
      'and then the api_call events of the two downloads since (a download is audited)',
    )
  },
)

t.test('planted secrets (URL, header, JSON body) are in no file of the bundle', async t => {
  const api = await startBundleApi(t)
  const SECRET = { url: 'USECRETurl1', header: 'HSECRETheader2', body: 'BSECRETbody3', response: 'RSECRETresp4' }
  await record(api, 0, 3)
  const ctx = { target_id: 'T1', session_id: 'S1', target_type: 'page' as const }
  await api.emit({
    type: 'network_request',
    source: { kind: 'cdp' },
    data: {
      ...ctx,
      url: `https://shop.example.com/login?access_token=${SECRET.url}&page=2`,
      request_id: 'secret-1',
      method: 'POST',
      headers: { authorization: `Bearer ${SECRET.header}`, 'content-type': 'application/json' },
      post_data: JSON.stringify({ user: 'bob', password: SECRET.body }),
    },
  })
  await api.emit({
    type: 'network_response',
    source: { kind: 'cdp' },
    data: {
      ...ctx,
      url: `https://shop.example.com/login?access_token=${SECRET.url}&page=2`,
      request_id: 'secret-1',
      status: 200,
      status_text: 'OK',
      headers: { 'content-type': 'application/json', 'set-cookie': `sid=${SECRET.header}` },
      mime_type: 'application/json',
      body: JSON.stringify({ access_token: SECRET.response, expires_in: 3600 }),
    },
  })
  const { zip } = await download(api, `since=${encodeURIComponent(iso(T0_US))}`)
  const files = await unzipAll(zip)
  for (const [name, bytes] of files)
    for (const s of Object.values(SECRET)) t.notOk(bytes.includes(s), `${s} not in ${name}`)
  const har = files.get('network.har')!.toString()
  t.match(har, /access_token=\[redacted:16\]&page=2/, 'the URL is there, masked')
  t.match(har, /"password\\?":\s*\\?"\[redacted:16\]/, 'the JSON body field is there, masked')
})
