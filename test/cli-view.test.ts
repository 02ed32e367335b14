// `browser-telemetry view <zip>`: prints the URL of the viewer page served with the zip on
// 127.0.0.1, serves only those (with the viewer's security headers), and stops when aborted.
import t from 'tap'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { VIEWER_CSP } from '../src/api/viewer-assets.js'
import { tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'
import { yazlZip } from './helpers/zip.js'

t.test('view serves the page and the zip until aborted', async t => {
  const dir = await tempDir(t, 'bt-view-')
  const zip = join(dir, 'session.zip')
  await writeFile(zip, await yazlZip([{ name: 'events.ndjson', data: '' }]))
  let out = ''
  let err = ''
  const stop = new AbortController()
  const io: CliIO = {
    stdout: { write: c => ((out += String(c)), true) },
    stderr: { write: c => ((err += String(c)), true) },
    env: { PATH: dir },
    signal: stop.signal,
  }
  const running = clientCommands.view!.run([zip, '--launch'], io)
  const url = await waitFor(
    () => /^(http:\/\/127\.0\.0\.1:\d+\/viewer\/\?bundle=bundle\.zip)\n$/.exec(out)?.[1],
    10_000,
    'the URL',
  )
  t.match(err, /serving session\.zip on 127\.0\.0\.1/)
  t.match(err, /xdg-open is not installed/)
  const page = await fetch(url)
  t.equal(page.status, 200)
  t.equal(page.headers.get('content-security-policy'), VIEWER_CSP)
  t.match(await page.text(), /<script type="module" src="\.\/app-[A-Z0-9]+\.js">/)
  const origin = new URL(url).origin
  const body = Buffer.from(await (await fetch(`${origin}/viewer/bundle.zip`)).arrayBuffer())
  t.same(body, await readFile(zip), 'the zip as it is on disk')
  t.equal((await fetch(`${origin}/viewer/..%2F..%2Fetc%2Fpasswd`)).status, 404)
  t.equal((await fetch(`${origin}/viewer/other.zip`)).status, 404, 'only the one zip')
  t.equal((await fetch(`${origin}/viewer/bundle.zip`, { method: 'POST' })).status, 405)
  t.equal((await fetch(`${origin}/`, { redirect: 'manual' })).headers.get('location'), '/viewer/?bundle=bundle.zip')
  stop.abort()
  t.equal(await running, 0)
  await t.rejects(fetch(url), 'the server is closed')
  const bad = { ...io, signal: undefined }
  t.equal(await clientCommands.view!.run([zip, '--port', 'x'], bad), 2)
})

t.test('view refuses a Host that is not loopback (DNS rebinding): 421 with an error object', async t => {
  const { startViewServer } = await import('../src/cli/view.js')
  const { request } = await import('node:http')
  const dir = await tempDir(t)
  const zip = join(dir, 'b.zip')
  await writeFile(zip, 'PK')
  const view = await startViewServer(zip)
  t.teardown(() => view.close())
  const port = new URL(view.url).port
  const get = (host: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/viewer/bundle.zip', headers: { host } }, res => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode!, body }))
      })
      req.on('error', reject)
      req.end()
    })
  const evil = await get(`rebind.example.com:${port}`)
  t.equal(evil.status, 421)
  t.same(JSON.parse(evil.body), {
    code: 'host_refused',
    message: `Host "rebind.example.com:${port}" is refused: the viewer answers only loopback names`,
  })
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`])
    t.same(await get(host), { status: 200, body: 'PK' }, `${host} is served`)
})
