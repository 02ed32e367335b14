// Exports hold no secret the event log would not, against real headless Chromium: a page whose
// requests carry a secret query parameter and whose console.timeStamp text holds a URL with one,
// traced; the perf trace as the API serves it and as a bundle carries it holds the masked forms and
// never the secrets (exact bytes), the file on disk neither. A script with a secret in its URL and
// one whose map URL carries one: sourcemaps/index.json names both masked.
import t from 'tap'
import { gunzipSync } from 'node:zlib'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import type { Envelope } from '../src/events/index.js'
import { startServer, waitFor } from './helpers/http.js'
import { unzipAll } from './helpers/bundle.js'
import { tempDir } from './helpers/store.js'

const TOKEN = 'export-redaction-token-0123456789'
t.setTimeout(180_000)

const SECRETS = ['SECRET-req-4711', 'SECRET-ts-0815', 'SECRET-script-42', 'SECRET-map-77']

// One-line scripts, each with an external map (one source, one segment at column 0).
const script = (name: string, mapRef: string) =>
  `console.error(new Error('${name} failed'))\n//# sourceMappingURL=${mapRef}\n`
const MAP = (source: string) => JSON.stringify({ version: 3, sources: [source], names: [], mappings: 'AAAA' })

// The secrets are put together by the page's script, so the document's own text (kept as the
// response body, which is masked only in JSON, form and YAML fields) never spells them.
const PAGE = `<!doctype html><title>secrets</title>
<script>
const secret = rest => 'SEC' + 'RET-' + rest
const signed = document.createElement('script')
signed.src = '/signed.js?token=' + secret('script-42')
document.head.append(signed)
const plain = document.createElement('script')
plain.src = '/plain.js'
document.head.append(plain)
let n = 0
setInterval(() => {
  n++
  fetch('/api/cart?token=' + secret('req-4711') + '&n=' + n)
  console.timeStamp('checkout https://pay.test/cb?token=' + secret('ts-0815') + ' step ' + n)
}, 50)
</script>`

t.test('perf traces and source map indexes are masked in every export', async t => {
  const site = await startServer(t, {
    '/': PAGE,
    '/api/cart': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    },
    '/signed.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end(script('signed', 'signed.js.map'))
    },
    '/signed.js.map': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(MAP('src/signed.ts'))
    },
    '/plain.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end(script('plain', 'plain.js.map?sig=SECRET-map-77'))
    },
    '/plain.js.map': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(MAP('src/plain.ts'))
    },
  })
  const dir = await tempDir(t)
  const config = parseServeConfig(
    ['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', 'off', '--token', TOKEN],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
  t.teardown(() => d.close())
  const base = `${d.url}/browsers/${d.browserId}/telemetry`
  const auth = { authorization: `Bearer ${TOKEN}` }
  const stored = async () =>
    (await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })).records.map(r => JSON.parse(r.json) as Envelope)

  await d.monitor!.openPage(site.url)
  await waitFor(
    async () => (await stored()).filter(e => e.event.type === 'console_error').length >= 2,
    15_000,
    'both scripts logged their errors',
  )
  await d.sourceMaps.settled()

  const res = await fetch(`${base}/perf-traces`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ duration_ms: 1000 }),
  })
  t.equal(res.status, 202)
  const { trace_id: id } = (await res.json()) as { trace_id: string }
  const gz = await waitFor(
    async () => {
      const r = await fetch(`${base}/perf-traces/${id}`, { headers: auth })
      return r.status === 200 ? Buffer.from(await r.arrayBuffer()) : undefined
    },
    30_000,
    'the trace is ready',
  )
  const text = gunzipSync(gz).toString('utf8')
  const json = JSON.parse(text) as { traceEvents: { name: string; args?: { data?: Record<string, unknown> } }[] }

  await t.test('the perf trace from the API: masked forms, no secret', async t => {
    for (const s of SECRETS) t.equal(text.split(s).length - 1, 0, `${s} appears 0 times`)
    const requests = json.traceEvents.filter(
      e => e.name === 'ResourceSendRequest' && String(e.args?.data?.url).includes('/api/cart'),
    )
    // The page fetches every 50 ms: about 20 in the 1 s window.
    t.ok(requests.length >= 5, `${requests.length} requests traced`)
    t.match(requests[0]!.args!.data!.url, /^http:\/\/127\.0\.0\.1:\d+\/api\/cart\?token=\[redacted:16\]&n=\d+$/)
    const marks = json.traceEvents.filter(
      e => e.name === 'TimeStamp' && String(e.args?.data?.message).startsWith('checkout '),
    )
    t.ok(marks.length >= 5, `${marks.length} console.timeStamp marks traced`)
    t.match(marks[0]!.args!.data!.message, /^checkout https:\/\/pay\.test\/cb\?token=\[redacted:16\] step \d+$/)
  })

  await t.test('the file on disk holds no secret either', async t => {
    const files = await readdir(join(dir, 'perf-traces'))
    t.same(files.sort(), [`${id}.json.gz`, 'index.json'])
    const onDisk = await readFile(join(dir, 'perf-traces', `${id}.json.gz`))
    t.ok(onDisk.equals(gz), 'the API serves the file as stored')
  })

  const bundle = await unzipAll(
    Buffer.from(await (await fetch(`${base}/bundle?since=10m`, { headers: auth })).arrayBuffer()),
  )

  await t.test('the bundle: the same masked trace, no secret in any file', async t => {
    t.ok(bundle.get(`perf-traces/${id}.json.gz`)!.equals(gz), 'the bytes the API serves')
    for (const [name, bytes] of bundle) {
      const content = name.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8')
      for (const s of SECRETS) t.equal(content.split(s).length - 1, 0, `${name}: ${s} appears 0 times`)
    }
  })

  await t.test('sourcemaps/index.json names script and map URLs masked', async t => {
    const index = JSON.parse(bundle.get('sourcemaps/index.json')!.toString()) as {
      scripts: string[]
      url?: string
      map_url?: string
    }[]
    const rows = index
      .map(m => ({ scripts: m.scripts, url: m.url, map_url: m.map_url }))
      .sort((a, b) => String(a.url).localeCompare(String(b.url)))
    t.same(rows, [
      {
        scripts: [`${site.origin}/plain.js`],
        url: `${site.origin}/plain.js`,
        map_url: `${site.origin}/plain.js.map?sig=[redacted:16]`,
      },
      {
        scripts: [`${site.origin}/signed.js?token=[redacted:16]`],
        url: `${site.origin}/signed.js?token=[redacted:16]`,
        map_url: `${site.origin}/signed.js.map`,
      },
    ])
  })
})
