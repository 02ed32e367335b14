// Performance traces against real headless Chromium under the daemon: a trace of the browser while
// a page works (capture goes on meanwhile), 409 for a second one, 202 while recording, the gzip
// JSON whose traceEvents cover the window and hold the page's own console.timeStamp marks, the
// perf_trace_recorded event, a trace of one page, the bundle's perf-traces/, the CLI, and the
// refusals of bad requests.
import t from 'tap'
import { gunzipSync } from 'node:zlib'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import type { Envelope, EventData } from '../src/events/index.js'
import { clientCommands } from '../src/cli/index.js'
import { startServer, waitFor } from './helpers/http.js'
import { unzipAll } from './helpers/bundle.js'
import { tempDir } from './helpers/store.js'
import { runClient } from './helpers/cli.js'
import { chromium } from 'playwright-core'
import { viewerUrl } from '../src/cli/open.js'

const TOKEN = 'perf-trace-token-0123456789'
t.setTimeout(180_000)

/** Marks the trace with console.timeStamp and logs, every 50 ms, until told to stop. */
const WORKING_PAGE = `<!doctype html><title>work</title><script>
let n = 0
setInterval(() => {
  n++
  console.timeStamp('mark-' + n)
  console.log('tick ' + n)
  let x = 0; for (let i = 0; i < 2e5; i++) x += i
}, 50)
</script>`

interface TraceJson {
  traceEvents: { name: string; ph: string; ts: number; args?: { data?: { message?: string } } }[]
}

t.test('perf traces of a working page: window, marks, event, bundle, CLI, refusals', async t => {
  const site = await startServer(t, { '/': WORKING_PAGE })
  const dir = await tempDir(t)
  const config = parseServeConfig(
    ['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', 'off', '--token', TOKEN],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
  t.teardown(() => d.close())
  const base = `${d.url}/browsers/${d.browserId}/telemetry/perf-traces`
  const auth = { authorization: `Bearer ${TOKEN}` }
  const post = (body: unknown, type = 'application/json') =>
    fetch(base, {
      method: 'POST',
      headers: { ...auth, 'content-type': type },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const get = (path = '') => fetch(base + path, { headers: auth })
  const stored = async () =>
    (await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })).records.map(r => JSON.parse(r.json) as Envelope)
  const recorded = async (id: string) =>
    await waitFor(
      async () =>
        (await stored()).find(
          e => e.event.type === 'perf_trace_recorded' && (e.event.data as { trace_id: string }).trace_id === id,
        )?.event.data as EventData<'perf_trace_recorded'> | undefined,
      30_000,
      `perf_trace_recorded of ${id}`,
    )

  const targetId = await d.monitor!.openPage(site.url)
  await waitFor(
    async () => (await stored()).some(e => e.event.type === 'console_log'),
    15_000,
    'the page logs before the trace',
  )

  await t.test('refusals: 400 for bad bodies, 404 for an unknown target or trace', async t => {
    const cases: [unknown, string][] = [
      [{}, 'duration_ms'],
      [{ duration_ms: 0 }, 'duration_ms'],
      [{ duration_ms: 60_001 }, 'duration_ms'],
      [{ duration_ms: 1.5 }, 'duration_ms'],
      [{ duration_ms: 100, extra: 1 }, 'extra'],
      [{ duration_ms: 100, categories: [] }, 'categories'],
      [{ duration_ms: 100, categories: ['a b'] }, 'categories'],
      [{ duration_ms: 100, categories: Array(101).fill('x') }, 'categories'],
      [[1], 'body'],
    ]
    for (const [body, param] of cases) {
      const res = await post(body)
      t.equal(res.status, 400, JSON.stringify(body))
      const err = (await res.json()) as { code: string; message: string }
      t.equal(err.code, 'bad_request')
      t.match(err.message, `invalid ${param}:`)
    }
    t.equal((await post('{"duration_ms":', 'application/json')).status, 400, 'broken JSON')
    t.equal((await post('duration_ms=5', 'text/plain')).status, 415, 'not JSON')
    const unknown = await post({ duration_ms: 100, target_id: 'NOPE' })
    t.equal(unknown.status, 404)
    t.equal(((await unknown.json()) as { code: string }).code, 'not_found')
    t.equal((await get('/not-a-uuid')).status, 400)
    t.equal((await get('/00000000-0000-4000-8000-000000000000')).status, 404)
    t.same(await (await get()).json(), [], 'no trace stored by a refusal')
  })

  let browserTrace = ''
  await t.test('a browser trace: 202, 409 meanwhile, then the gzip JSON covering the window', async t => {
    const startedAt = Date.now()
    const res = await post({ duration_ms: 1500 })
    t.equal(res.status, 202)
    const { trace_id: id } = (await res.json()) as { trace_id: string }
    browserTrace = id
    t.match(id, /^[0-9a-f-]{36}$/)
    t.equal(res.headers.get('location'), `/browsers/${d.browserId}/telemetry/perf-traces/${id}`)

    const second = await post({ duration_ms: 100 })
    t.equal(second.status, 409)
    const conflict = (await second.json()) as { code: string; message: string }
    t.equal(conflict.code, 'conflict')
    t.match(conflict.message, id)

    const running = await get(`/${id}`)
    t.equal(running.status, 202)
    t.match(await running.json(), { trace_id: id, state: 'recording', duration_ms: 1500 })
    const seqAtStart = d.log.lastAssignedSeq

    const event = await recorded(id)
    t.equal(event.outcome, 'recorded')
    t.equal(event.duration_ms, 1500)
    t.equal(event.data_loss, false)
    const ready = await get(`/${id}`)
    t.equal(ready.status, 200)
    t.equal(ready.headers.get('content-type'), 'application/gzip')
    t.equal(ready.headers.get('content-disposition'), `attachment; filename="perf-trace-${id}.json.gz"`)
    const gz = Buffer.from(await ready.arrayBuffer())
    t.equal(gz.length, event.bytes, 'the event names the file size')
    t.equal(Number(ready.headers.get('content-length')), gz.length)
    const json = JSON.parse(gunzipSync(gz).toString('utf8')) as TraceJson
    // Measured 1,798-3,848 over 6 fresh-clone suite runs and 3 runs at load 10-18: 1.8x over the
    // bound.
    t.ok(Array.isArray(json.traceEvents) && json.traceEvents.length > 1000, `${json.traceEvents.length} trace events`)
    const timed = json.traceEvents.filter(e => e.ts > 0 && e.ph !== 'M').map(e => e.ts)
    const spanMs = (Math.max(...timed) - Math.min(...timed)) / 1000
    // A lower bound (the trace's window). Measured 2,097-2,500 ms over 6 fresh-clone suite runs
    // (quiet to load 14) and 1,866-2,243 over 3 runs of this file at load 10-18.
    t.ok(spanMs >= 1500, `the events span ${spanMs.toFixed(0)} ms of the 1500 ms window`)
    // The span overhangs the request's time by 41-274 ms over 3 runs at load 10-18 (took 1,825-2,016
    // ms): 3.6x under the 1 s allowed; a trace that kept an earlier one's events would not be.
    const tookMs = Date.now() - startedAt
    t.ok(spanMs <= tookMs + 1000, `and not more than the time it took (${tookMs} ms)`)
    const marks = json.traceEvents.filter(e => e.name === 'TimeStamp' && e.args?.data?.message?.startsWith('mark-'))
    // Measured 30-33 marks over 6 fresh-clone suite runs (quiet to load 14) and 31-33 over 3 runs at
    // load 10-18: 3x over the bound.
    t.ok(marks.length >= 10, `${marks.length} console.timeStamp marks of the page (one per 50 ms)`)

    // Capture went on: the page's ticks logged during the trace are stored.
    const during = (await stored()).filter(e => e.seq > seqAtStart && e.event.type === 'console_log')
    // Measured 33-39 over 6 fresh-clone suite runs and 3 runs at load 10-18: 3.3x over the bound.
    t.ok(during.length >= 10, `${during.length} console_log events stored while tracing`)

    const list = (await (await get()).json()) as { trace_id: string; state: string; bytes: number }[]
    t.same(
      list.map(r => [r.trace_id, r.state, r.bytes]),
      [[id, 'ready', gz.length]],
    )
  })

  await t.test('a trace of one page runs on its session', async t => {
    const res = await post({ duration_ms: 300, target_id: targetId, categories: ['devtools.timeline'] })
    t.equal(res.status, 202)
    const { trace_id: id } = (await res.json()) as { trace_id: string }
    const event = await recorded(id)
    t.equal(event.target_id, targetId)
    t.same(event.categories, ['devtools.timeline'])
    const json = JSON.parse(gunzipSync(Buffer.from(await (await get(`/${id}`)).arrayBuffer())).toString()) as TraceJson
    t.ok(json.traceEvents.length > 0)
    t.notOk(
      json.traceEvents.some(e => e.name === 'ProfileChunk'),
      'only the asked category (no v8 cpu profiler chunks)',
    )
  })

  await t.test("the bundle carries the window's traces under perf-traces/", async t => {
    const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/bundle?since=10m`, { headers: auth })
    t.equal(res.status, 200)
    const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
    const index = JSON.parse(files.get('perf-traces/index.json')!.toString()) as { file: string; trace_id: string }[]
    t.equal(index.length, 2)
    t.equal(index[0]!.trace_id, browserTrace)
    const fromApi = Buffer.from(await (await get(`/${browserTrace}`)).arrayBuffer())
    t.ok(files.get(`perf-traces/${browserTrace}.json.gz`)!.equals(fromApi), 'the same bytes as the API serves')
    const manifest = JSON.parse(files.get('manifest.json')!.toString()) as { files: Record<string, unknown> }
    t.same(manifest.files['perf-traces'], { files: 2 })
  })

  await t.test('the viewer offers the trace for download, live and from the bundle', async t => {
    // The daemon's own Chromium shows the viewer: no second browser.
    const pw = await chromium.connectOverCDP(d.monitor!.browserWsUrl!)
    t.teardown(() => pw.close())
    const context = await pw.newContext()
    t.teardown(() => context.close())
    const page = await context.newPage()
    // The blob the viewer hands to the browser as a download, kept for the test (the daemon's
    // browser was not launched by Playwright, which then cannot take downloads).
    await page.addInitScript(() => {
      const w = window as unknown as { saved: { name: string; blob: Blob }[] }
      w.saved = []
      const create = URL.createObjectURL.bind(URL)
      let last = new Blob()
      URL.createObjectURL = (b: Blob | MediaSource) => {
        last = b as Blob
        return create(b)
      }
      HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
        w.saved.push({ name: this.download, blob: last })
      }
    })
    const fromApi = Buffer.from(await (await get(`/${browserTrace}`)).arrayBuffer())
    const saveFromRow = async () => {
      await page.click('#tab-all')
      await page.fill('#filter-q', browserTrace)
      // The viewer's own page is watched by the daemon too (its URL holds the query): pick the type.
      await page.selectOption('#filter-type', 'perf_trace_recorded')
      await page.click('#list-all .vrow')
      const before = await page.evaluate(() => (window as unknown as { saved: unknown[] }).saved.length)
      await page.click('.perf-trace-download')
      await page.waitForFunction(n => (window as unknown as { saved: unknown[] }).saved.length > n, before)
      const { name, base64 } = await page.evaluate(async () => {
        const s = (window as unknown as { saved: { name: string; blob: Blob }[] }).saved
        const last = s[s.length - 1]!
        const bytes = new Uint8Array(await last.blob.arrayBuffer())
        let bin = ''
        for (let i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode(...bytes.subarray(i, i + 8192))
        return { name: last.name, base64: btoa(bin) }
      })
      t.equal(name, `perf-trace-${browserTrace}.json.gz`)
      return Buffer.from(base64, 'base64')
    }
    await page.goto(viewerUrl(d.url, TOKEN, d.browserId))
    await page.waitForSelector('#list-all, #tab-all')
    t.ok((await saveFromRow()).equals(fromApi), 'live: the bytes the API serves')

    const bundle = join(await tempDir(t), 'session.zip')
    const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/bundle?since=10m`, { headers: auth })
    await writeFile(bundle, Buffer.from(await res.arrayBuffer()))
    await page.setInputFiles('#open-bundle', bundle)
    await page.waitForSelector('#bundle-status')
    t.ok((await saveFromRow()).equals(fromApi), 'bundle: the same bytes, read from perf-traces/')
  })

  await t.test('the CLI records and saves one', async t => {
    const out = join(await tempDir(t), 'trace.json.gz')
    const run = await runClient(clientCommands['perf-trace']!, [
      '--url',
      d.url,
      '--token',
      TOKEN,
      '--duration',
      '200ms',
      '-o',
      out,
    ])
    t.equal(run.code, 0, run.stderr)
    const json = JSON.parse(gunzipSync(await readFile(out)).toString()) as TraceJson
    t.ok(json.traceEvents.length > 0)
    const usage = await runClient(clientCommands['perf-trace']!, ['--url', d.url, '--token', TOKEN, '--duration', '2m'])
    t.equal(usage.code, 2)
    t.match(usage.stderr, '--duration: expected 1ms to 60s')
  })
})
