// Secrets through a real page: a launched Chromium (the daemon's own launch mode) sends every kind of
// secret to a local server; none may appear in the stored events, the SSE stream, the HAR export or
// any log line the daemon wrote (pino at trace level, captured in memory). The API is driven with the
// bearer token and a cookie; neither may appear in the log either.
import t from 'tap'
import { Writable } from 'node:stream'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { createLogger } from '../src/log.js'
import { Redactor } from '../src/events/redact.js'
import { toHar } from '../src/har/index.js'
import type { Envelope } from '../src/events/index.js'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'
import { unzipAll } from './helpers/bundle.js'

const SECRETS = {
  query: 'QSECRETaccess1',
  sig: 'QSECRETsig2',
  frag: 'FSECRETfrag3',
  apiKey: 'HSECRETapikey4',
  auth: 'HSECRETauth5',
  authToken: 'HSECRETxauth6',
  csrf: 'HSECRETcsrf7',
  custom: 'HSECRETcustom8',
  form: 'PSECRETform9',
  json: 'PSECRETjson10',
  jsonToken: 'PSECRETjson11',
  setCookie: 'CSECRETsetcookie12',
  userinfo: 'USECRETuserinfo13',
  respToken: 'RSECRETresp14',
  param: 'QSECRETotp15',
}

async function readAll(url: string, browserId: string, headers: Record<string, string>): Promise<Envelope[]> {
  const out: Envelope[] = []
  let query = 'since=10m&limit=100'
  for (;;) {
    const res = await fetch(`${url}/browsers/${browserId}/telemetry/events?${query}`, { headers })
    if (res.status !== 200) throw new Error(`GET events: ${res.status} ${await res.text()}`)
    out.push(...((await res.json()) as Envelope[]))
    if (res.headers.get('x-has-more') !== 'true') return out
    query = `offset=${res.headers.get('x-next-offset')}&limit=100`
  }
}

t.test('every secret case through a real page: nothing in events, SSE, HAR or logs', async t => {
  t.setTimeout(120_000)
  const dir = await tempDir(t)
  const site = await startServer(t)
  // The page source holds every secret reversed (its HTML is stored as a response body too).
  const R = Object.fromEntries(Object.entries(SECRETS).map(([k, v]) => [k, [...v].reverse().join('')]))
  site.route(
    '/',
    `<!doctype html><title>secrets</title><script>
    const j = (r) => r.text()
    const S = Object.fromEntries(Object.entries(${JSON.stringify(R)}).map(([k, v]) => [k, [...v].reverse().join('')]))
    Promise.all([
      fetch('/api?access_token=' + S.query + '&sig=' + S.sig + '&page=2&otp=' + S.param + '', { headers: {
        'x-api-key': '' + S.apiKey + '', authorization: 'Bearer ' + S.auth + '', 'x-auth-token': '' + S.authToken + '',
        'x-csrf-token': '' + S.csrf + '', 'x-custom-secret': '' + S.custom + '' } }).then(j),
      fetch('/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'user=bob&password=' + S.form + '' }).then(j),
      fetch('/login.json', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'bob', password: '' + S.json + '', token: '' + S.jsonToken + '' }) }).then(j),
    ]).then(() => { document.title = 'done' })
  </script>`,
  )
  site.route('/api', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': `sid=${SECRETS.setCookie}; HttpOnly` })
    res.end('{"ok":true}')
  })
  site.route('/login', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('ok')
  })
  site.route('/login.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ access_token: SECRETS.respToken, expires_in: 3600 }))
  })
  site.route('/cb', '<!doctype html><title>callback</title><p>done</p>')
  site.route('/plain', '<!doctype html><title>plain</title><p>plain</p>')
  site.route('/favicon.ico', (_req, res) => {
    res.writeHead(204)
    res.end()
  })

  const logLines: string[] = []
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk))
      cb()
    },
  })
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dir,
      '--proxy-listen',
      'off',
      '--redact-headers',
      'x-custom-secret',
      '--redact-params',
      'otp',
      '--categories',
      'console,network,page,interaction,control,connection,system',
      '--log-level',
      'trace',
    ],
    {},
  )
  const logger = createLogger('trace', new Redactor(config.redaction), sink)
  const d = await startDaemon(config, { logger, announce: () => {}, showNewToken: false })
  t.teardown(() => d.close())
  const token = d.generatedToken!.token
  const auth = { authorization: `Bearer ${token}`, cookie: `session=${SECRETS.setCookie}x` }

  // A live stream from the start: what SSE clients see.
  const sse = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/stream`, { headers: auth })
  let sseText = ''
  const reader = (async () => {
    try {
      for await (const c of sse.body!) sseText += Buffer.from(c).toString()
    } catch {
      /* closed */
    }
  })()

  // A top-level navigation with userinfo, then the page.
  // (A page loaded with userinfo cannot fetch() relative URLs, so it gets its own tab.)
  await d.monitor!.openPage(`http://bob:${SECRETS.userinfo}@127.0.0.1:${site.port}/plain`)
  await d.monitor!.openPage(site.url)
  await d.monitor!.openPage(`${site.url}cb#access_token=${SECRETS.frag}&token_type=bearer`)
  const events = await waitFor(
    async () => {
      const evs = await readAll(d.url, d.browserId, auth)
      const urls = evs.map(e => (e.event.data as { url?: string }).url ?? '')
      const bodies = evs.filter(
        e =>
          e.event.type === 'network_response' &&
          /login\.json/.test(urls[evs.indexOf(e)]!) &&
          (e.event.data as { body?: string }).body !== undefined,
      )
      return (
        evs.some(
          e => e.event.type === 'page_navigation' && /\/cb#/.test((e.event.data as { url?: string }).url ?? ''),
        ) &&
        bodies.length > 0 &&
        evs
      )
    },
    60_000,
    'the page to run every case and reach /cb',
  )
  // A config change through the API with the token and a cookie: api_call + audit events, and log lines.
  await fetch(`${d.url}/browsers/${d.browserId}/telemetry`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{}',
  })
  await waitFor(() => sseText.includes('/cb#access_token=[redacted'), 10_000, 'the SSE stream to carry the callback')
  // The debug bundle of the session: every file of it.
  const bundleRes = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/bundle?since=10m`, { headers: auth })
  t.equal(bundleRes.status, 200, 'bundle downloaded')
  const bundle = await unzipAll(Buffer.from(await bundleRes.arrayBuffer()))
  await d.close()
  await reader

  const stored = JSON.stringify(events)
  const har = JSON.stringify(toHar(events))
  const logs = logLines.join('')
  t.ok(
    logLines.some(l => l.includes('browser-telemetry listening')),
    `${logLines.length} log lines captured, the daemon's own among them`,
  )
  for (const [name, secret] of Object.entries(SECRETS)) {
    t.notOk(stored.includes(secret), `${name}: not in stored events`)
    t.notOk(sseText.includes(secret), `${name}: not in the SSE stream`)
    t.notOk(har.includes(secret), `${name}: not in the HAR export`)
    t.notOk(logs.includes(secret), `${name}: not in any log line`)
    for (const [file, bytes] of bundle) t.notOk(bytes.includes(secret), `${name}: not in the bundle's ${file}`)
  }
  t.notOk(logs.includes(token), 'the API token is in no log line')
  for (const [file, bytes] of bundle) t.notOk(bytes.includes(token), `the API token is not in the bundle's ${file}`)
  t.match(
    bundle.get('network.har')!.toString(),
    /access_token=\[redacted:16\]&sig=\[redacted:16\]&page=2&otp=\[redacted:16\]/,
    "the bundle's HAR has the request, masked",
  )
  t.ok(
    bundle.get('events.ndjson')!.toString().includes('/cb#access_token=[redacted'),
    "the bundle's events have the callback, masked",
  )
  t.notOk(sseText.includes(token) || stored.includes(token), 'nor in any event')
  // The fields stay, masked: proof the cases really went through the page.
  const req = (path: string) =>
    events.find(
      e => e.event.type === 'network_request' && ((e.event.data as { url?: string }).url ?? '').includes(path),
    )!.event.data as Record<string, unknown>
  t.match(req('/api?').url, /access_token=\[redacted:16\]&sig=\[redacted:16\]&page=2&otp=\[redacted:16\]$/)
  t.match(req('/api?').headers, {
    'x-api-key': '[redacted:16]',
    'x-auth-token': '[redacted:16]',
    'x-csrf-token': '[redacted:16]',
    'x-custom-secret': '[redacted:16]',
  })
  t.equal(
    (
      events.find(e => e.event.type === 'network_request' && (e.event.data as { url: string }).url.endsWith('/login'))!
        .event.data as { post_data?: string }
    ).post_data,
    'user=bob&password=[redacted:16]',
  )
  t.equal(req('/login.json').post_data, '{"user":"bob","password":"[redacted:16]","token":"[redacted:16]"}')
  t.ok(
    events.some(
      e =>
        e.event.type === 'page_navigation' &&
        (e.event.data as { url: string }).url.endsWith('/cb#access_token=[redacted:16]&token_type=[redacted:8]'),
    ),
    'fragment masked',
  )
})
