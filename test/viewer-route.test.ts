// GET /viewer/: the built assets with their content types, caching, strict CSP, no auth, and only
// names from the build's listing (no path reaches the disk); the OpenAPI document lists the routes.
import t from 'tap'
import { join } from 'node:path'
import { buildViewer } from '../scripts/build-viewer.mjs'
import { loadViewerAssets, registerViewerRoutes, VIEWER_CSP } from '../src/api/routes/viewer.js'
import { BROWSER_ID, startApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.test('viewer assets: types, cache, CSP, no auth, no traversal', async t => {
  const dir = join(await tempDir(t, 'bt-viewer-build-'), 'viewer')
  const built = await buildViewer({ outDir: dir })
  const [html, js, css] = built.files as [string, string, string]
  t.equal(html, 'index.html')
  const api = await startApi(t, { deps: { routes: [r => registerViewerRoutes(r, { assets: loadViewerAssets(dir) })] } })
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(api.url + path, { headers, redirect: 'manual' })

  const page = await get('/viewer/')
  t.equal(page.status, 200)
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8')
  t.equal(page.headers.get('content-security-policy'), VIEWER_CSP)
  t.match(VIEWER_CSP, /^default-src 'self';/)
  t.notMatch(VIEWER_CSP, /unsafe-inline|unsafe-eval/)
  t.equal(page.headers.get('cache-control'), 'no-cache')
  t.equal(page.headers.get('x-content-type-options'), 'nosniff')
  t.equal(page.headers.get('referrer-policy'), 'no-referrer')
  const text = await page.text()
  t.match(text, `<script type="module" src="./${js}"></script>`)
  t.match(text, `<link rel="stylesheet" href="./${css}"`)
  t.notMatch(text.replace(/<script type="module" src="[^"]+"><\/script>/, ''), /<script/, 'no inline script')
  t.notMatch(text, /<style|style="/, 'no inline style')

  const script = await get(`/viewer/${js}`)
  t.equal(script.status, 200)
  t.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8')
  t.equal(script.headers.get('cache-control'), 'public, max-age=31536000, immutable')
  t.notMatch(
    await script.text(),
    /https?:\/\/(?!127\.0\.0\.1)[a-z0-9.-]+\.(com|org|net|io|dev)\b\/[^\s"']*\.(js|css|woff2?)/i,
    'no third-party asset URLs in the bundle',
  )
  const style = await get(`/viewer/${css}`)
  t.equal(style.headers.get('content-type'), 'text/css; charset=utf-8')

  const etag = page.headers.get('etag')!
  t.equal((await get('/viewer/', { 'if-none-match': etag })).status, 304, 'revalidation')

  const redirect = await get('/viewer')
  t.equal(redirect.status, 308)
  t.equal(redirect.headers.get('location'), '/viewer/')

  for (const path of [
    '/viewer/nope.js',
    '/viewer/..%2Fpackage.json',
    '/viewer/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/viewer/index.html%00.js',
  ]) {
    const res = await get(path)
    t.equal(res.status, 404, path)
    t.same(Object.keys((await res.json()) as object).sort(), ['code', 'message'], `${path}: error object`)
  }
  t.equal((await get('/viewer/a/b')).status, 404, 'no nested paths')

  // Asset loads emit no api_call; a config read right after does, so the log shows only that one.
  const before = api.log.lastSeq
  await get('/viewer/')
  await get(`/viewer/${js}`)
  await api.get(`/browsers/${BROWSER_ID}/telemetry`)
  await waitFor(() => api.log.lastSeq > before, 5000, 'the api_call of the config read')
  const after = (await (
    await api.get(`/browsers/${BROWSER_ID}/telemetry/events?offset=${before + 1}&limit=100`)
  ).json()) as { event: { type: string; data: { operation_id?: string } } }[]
  t.same(
    after.map(e => [e.event.type, e.event.data.operation_id]),
    [['api_call', 'getBrowserTelemetryConfig']],
    'asset loads emit no api_call events',
  )

  const doc = (await (await api.get('/openapi.json')).json()) as {
    paths: Record<string, { get?: { operationId: string; security: unknown[] } }>
  }
  t.equal(doc.paths['/viewer/']?.get?.operationId, 'getViewer')
  t.same(doc.paths['/viewer/']?.get?.security, [], 'documented as public')
  t.equal(doc.paths['/viewer/{file}']?.get?.operationId, 'getViewerAsset')
})

t.test('an unbuilt viewer answers 503 with the error object, not a crash', async t => {
  const api = await startApi(t, { deps: { routes: [r => registerViewerRoutes(r, { assets: undefined })] } })
  const res = await fetch(`${api.url}/viewer/`)
  t.equal(res.status, 503)
  t.same(await res.json(), {
    code: 'viewer_not_built',
    message: 'the session viewer was not built (run npm run build)',
  })
  t.equal(loadViewerAssets(join(await tempDir(t, 'bt-empty-'), 'none')), undefined)
})
