// POST /browsers/{id}/fs/upload_zip through the real API app and the real client (@onkernel/sdk):
// 201 with an empty body, part order, malformed parts, dest_path rules (400/403), hostile archives
// (400, nothing written), 413 before the rest is stored, scopes, api_call.
import t, { type Test } from 'tap'
import Kernel, { toFile } from '@onkernel/sdk'
import { request } from 'node:http'
import { mkdir, readdir, readFile, symlink } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import { startApiServer } from '../src/api/server.js'
import { registerUploadRoutes } from '../src/api/routes/uploads.js'
import type { Envelope } from '../src/events/index.js'
import { openStore, tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'
import { rawZip, yazlZip } from './helpers/zip.js'
import { UploadSlots } from '../src/uploads/upload-slots.js'
import { browserUserRoots, prepareUploadRoots } from '../src/uploads/upload-roots.js'

const BROWSER = 'br-uploads'
const TOKEN = 'tok-all'
const READ_ONLY = 'tok-read'
const MAX = 256 * 1024

async function setup(
  tt: Test,
  slots?: UploadSlots,
  where: (base: string) => Promise<{ roots?: string[]; protectedPaths?: string[] }> = async () => ({}),
) {
  const { log, pipeline } = await openStore(tt)
  const base = await tempDir(tt, 'bt-upload-route-')
  const root = join(base, 'root')
  const { roots = [root], protectedPaths } = await where(base)
  const spoolDir = join(base, 'spool')
  await mkdir(root)
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  tokens.add(READ_ONLY, ['read'])
  const app = createApiApp({
    browserId: BROWSER,
    log,
    pipeline,
    tokens,
    routes: [
      r =>
        registerUploadRoutes(r, {
          uploadRoots: roots,
          protectedPaths,
          spoolDir,
          uploadMaxBytes: MAX,
          zipLimits: { maxEntries: 1000, maxTotalBytes: 1 << 30, maxRatio: 200 },
          slots,
        }),
    ],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  tt.teardown(() => server.close(500))
  const client = new Kernel({ apiKey: TOKEN, baseURL: server.url, timeout: 30_000 })
  const post = (form: FormData, token = TOKEN, id = BROWSER) =>
    fetch(`${server.url}/browsers/${id}/fs/upload_zip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: form,
    })
  const spoolEmpty = async () => (await readdir(spoolDir).catch(() => [])).length === 0
  const apiCalls = async () =>
    (await log.read({ order: 'asc', limit: 1000 })).records
      .map(r => JSON.parse(r.json) as Envelope)
      .filter(e => e.event.type === 'api_call')
      .map(e => e.event.data as { operation_id: string; status: number })
  return { base, root, spoolDir, server, client, post, spoolEmpty, apiCalls }
}

const goodZip = () =>
  yazlZip([
    { name: 'dir/hello.txt', data: 'hello' },
    { name: 'run.sh', data: '#!/bin/sh\n', mode: 0o100755 },
  ])
const form = (parts: [string, string | Blob, string?][]) => {
  const f = new FormData()
  for (const [k, v, filename] of parts) {
    if (typeof v === 'string') f.append(k, v)
    else f.append(k, v, filename ?? 'upload.zip')
  }
  return f
}

async function expectError(tt: Test, res: Response, status: number, code: string, detail?: RegExp) {
  tt.equal(res.status, status, `status ${status}`)
  const body = (await res.json()) as { code: string; message: string; details?: { code: string; message: string }[] }
  tt.equal(body.code, code)
  if (detail) tt.match(body.details?.[0]?.message ?? body.message, detail)
}

t.test('the real client uploads and extracts; 201 with an empty body', async t => {
  const s = await setup(t)
  const dest = join(s.root, 'site', 'v1')
  const result = await s.client.browsers.fs.uploadZip(BROWSER, {
    dest_path: dest,
    zip_file: await toFile(await goodZip(), 'site.zip', { type: 'application/zip' }),
  })
  t.notOk(result, 'the client sees no result')
  t.equal(await readFile(join(dest, 'dir', 'hello.txt'), 'utf8'), 'hello')
  t.ok(await s.spoolEmpty(), 'spool file removed')

  const res = await s.post(
    form([
      ['dest_path', dest],
      ['zip_file', new Blob([new Uint8Array(await goodZip())])],
    ]),
  )
  t.equal(res.status, 201)
  t.equal(res.headers.get('content-length'), '0')
  t.equal(res.headers.get('content-type'), null)
  t.equal(await res.text(), '')

  const doc = (await (
    await fetch(`${s.server.url}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as { paths: Record<string, Record<string, { operationId: string }>> }
  t.equal(
    doc.paths['/browsers/{id}/fs/upload_zip']?.post?.operationId,
    'uploadZip',
    'documented in the OpenAPI document',
  )
  const calls = await waitFor(async () => {
    const c = await s.apiCalls()
    return c.length >= 2 && c
  })
  t.same(
    calls.slice(0, 2).map(c => [c.operation_id, c.status]),
    [
      ['uploadZip', 201],
      ['uploadZip', 201],
    ],
  )
})

t.test('zip_file before dest_path works too', async t => {
  const s = await setup(t)
  const dest = join(s.root, 'order')
  const res = await s.post(
    form([
      ['zip_file', new Blob([new Uint8Array(await goodZip())])],
      ['dest_path', dest],
    ]),
  )
  t.equal(res.status, 201)
  t.equal(await readFile(join(dest, 'dir', 'hello.txt'), 'utf8'), 'hello')
})

t.test('malformed parts and bad dest_path', async t => {
  const s = await setup(t)
  const zip = new Blob([new Uint8Array(await goodZip())])
  const dest = join(s.root, 'x')
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', dest],
        ['zip_file', 'not a file part'],
      ]),
    ),
    400,
    'bad_request',
    /zip_file: must be a file part/,
  )
  await expectError(t, await s.post(form([['dest_path', dest]])), 400, 'bad_request', /zip_file: missing/)
  await expectError(t, await s.post(form([['zip_file', zip]])), 400, 'bad_request', /dest_path: missing/)
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', 'relative/path'],
        ['zip_file', zip],
      ]),
    ),
    400,
    'bad_request',
    /dest_path: must be an absolute path/,
  )
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', `${s.root}/../escape`],
        ['zip_file', zip],
      ]),
    ),
    400,
    'bad_request',
    /dest_path: must not contain/,
  )
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', join(s.base, 'elsewhere')],
        ['zip_file', zip],
      ]),
    ),
    403,
    'forbidden',
  )
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', '/etc'],
        ['zip_file', zip],
      ]),
    ),
    403,
    'forbidden',
  )
  // a symlink inside the root that points outside it does not open a way out
  await symlink(s.base, join(s.root, 'sneaky'))
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', join(s.root, 'sneaky', 'x')],
        ['zip_file', zip],
      ]),
    ),
    403,
    'forbidden',
  )
  const notMultipart = await fetch(`${s.server.url}/browsers/${BROWSER}/fs/upload_zip`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: '{}',
  })
  await expectError(t, notMultipart, 400, 'bad_request', /multipart/)
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', dest],
        ['zip_file', zip],
      ]),
      TOKEN,
      'other-browser',
    ),
    404,
    'not_found',
  )
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', dest],
        ['zip_file', zip],
      ]),
      READ_ONLY,
    ),
    403,
    'forbidden',
  )
  const raw = (contentType: string, body: string) =>
    fetch(`${s.server.url}/browsers/${BROWSER}/fs/upload_zip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
      body,
    })
  await expectError(t, await raw('multipart/form-data; charset=utf-8', 'x'), 400, 'bad_request', /boundary/i)
  const truncated = `--B\r\nContent-Disposition: form-data; name="dest_path"\r\n\r\n${dest}\r\n--B\r\nContent-Disposition: form-data; name="zip_file"; filename="a.zip"\r\n\r\nPK\x03\x04 cut short`
  await expectError(
    t,
    await raw('multipart/form-data; boundary=B', truncated),
    400,
    'bad_request',
    /malformed multipart|unexpected end/i,
  )
  await expectError(
    t,
    await s.post(
      form([
        ['dest_path', dest],
        ['dest_path', dest],
        ['zip_file', zip],
      ]),
    ),
    400,
    'bad_request',
    /given more than once/,
  )
  t.same((await readdir(s.root)).sort(), ['sneaky'], 'nothing written under the root')
  t.ok(await s.spoolEmpty(), 'no spool files left')
})

t.test('hostile archives: 400 naming the entry, destination untouched (real client)', async t => {
  const s = await setup(t)
  const dest = join(s.root, 'target')
  await mkdir(dest)
  for (const [name, zip, code] of [
    [
      '../evil.txt',
      rawZip([
        { name: 'fine.txt', data: 'x' },
        { name: '../evil.txt', data: 'x' },
      ]),
      'unsafe_entry',
    ],
    [
      'bad.txt',
      rawZip([
        { name: 'fine.txt', data: 'x' },
        { name: 'bad.txt', data: 'payload', crc: 1 },
      ]),
      'invalid_zip',
    ],
  ] as const) {
    const err = (await s.client.browsers.fs
      .uploadZip(BROWSER, { dest_path: dest, zip_file: await toFile(zip, 'h.zip') })
      .catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
    t.ok(err instanceof Kernel.BadRequestError, `400 for ${name}`)
    const body = err.error as { code: string; details: { message: string }[] }
    t.equal(body.code, code)
    t.match(body.details[0]!.message, JSON.stringify(name))
  }
  t.same(await readdir(dest), [], 'destination still empty')
  t.same(await readdir(join(s.root)), ['target'], 'no staging left in the root')
  t.ok(await s.spoolEmpty())
})

/** Raw request so the test controls exactly what is sent and when. */
function rawUpload(
  port: number,
  headers: Record<string, string | number>,
  write: (req: ReturnType<typeof request>) => void,
) {
  return new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/browsers/${BROWSER}/fs/upload_zip`,
        headers: { authorization: `Bearer ${TOKEN}`, ...headers },
      },
      res => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          body += c
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }))
      },
    )
    req.on('error', reject)
    write(req)
  })
}

t.test('413 payload_too_large without reading the rest', async t => {
  const s = await setup(t)
  const port = Number(new URL(s.server.url).port)
  const boundary = 'b0undary'
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="dest_path"\r\n\r\n${join(s.root, 'big')}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="zip_file"; filename="big.zip"\r\nContent-Type: application/zip\r\n\r\n`

  // declared up front: refused before any body byte is sent
  const declared = await rawUpload(
    port,
    { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': 10 * 1024 * 1024 * 1024 },
    req => req.flushHeaders(),
  )
  t.equal(declared.status, 413)
  t.equal(JSON.parse(declared.body).code, 'payload_too_large')

  // chunked, no length: refused once the file crosses the cap while the client is still sending
  let sent = 0
  const streamed = await rawUpload(
    port,
    { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
    req => {
      req.write(head)
      const chunk = Buffer.alloc(64 * 1024, 1)
      // well past the cap, then stall: only a server that gives up early can answer
      for (let i = 0; i < 8; i++) {
        req.write(chunk)
        sent += chunk.length
      }
    },
  )
  t.equal(streamed.status, 413)
  t.equal(JSON.parse(streamed.body).code, 'payload_too_large')
  // answered on a connection that stays open: the rest of the body is drained, not reset (src/api/body-drain.ts)
  t.equal(streamed.headers.connection, 'keep-alive')
  t.ok(sent > MAX)
  t.same(await readdir(s.root), [], 'nothing extracted')
  await waitFor(() => s.spoolEmpty(), 5000, 'spool removed')
  t.ok(await s.spoolEmpty())

  // the real client gets the 413 as an error, not a hang
  const big = Buffer.alloc(MAX + 1024, 7)
  const err = (await s.client.browsers.fs
    .uploadZip(BROWSER, { dest_path: join(s.root, 'big'), zip_file: await toFile(big, 'big.zip') })
    .catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
  t.equal(err.status, 413)
})

t.test('429 too_many_requests past the concurrent-upload cap; the slot is free again once the upload ends', async t => {
  const slots = new UploadSlots(1)
  const s = await setup(t, slots)
  const port = Number(new URL(s.server.url).port)
  const boundary = 'h0ld'
  const dest = join(s.root, 'held')
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="dest_path"\r\n\r\n${dest}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="zip_file"; filename="a.zip"\r\nContent-Type: application/zip\r\n\r\n`
  let held: ReturnType<typeof request> | undefined
  const first = rawUpload(
    port,
    { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
    req => {
      req.write(head)
      held = req
    },
  )
  await waitFor(() => slots.active === 1, 5000, 'the first upload holds the slot')

  const second = await s.post(
    form([
      ['dest_path', join(s.root, 'second')],
      ['zip_file', new Blob([new Uint8Array(await goodZip())])],
    ]),
  )
  t.equal(second.headers.get('retry-after'), '1')
  await expectError(t, second, 429, 'too_many_requests', /at most 1 uploads run at once/)

  held!.end(Buffer.concat([await goodZip(), Buffer.from(`\r\n--${boundary}--\r\n`)]))
  t.equal((await first).status, 201)
  t.equal(slots.active, 0, 'slot released')
  t.equal(
    (
      await s.post(
        form([
          ['dest_path', join(s.root, 'third')],
          ['zip_file', new Blob([new Uint8Array(await goodZip())])],
        ]),
      )
    ).status,
    201,
  )
  t.same((await readdir(s.root)).sort(), ['held', 'third'])
})

t.test('default roots: where the browser user writes; SDK callers get 403 naming the roots outside them', async t => {
  const home = join(await tempDir(t, 'bt-upload-home-'), 'kernel')
  await mkdir(join(home, 'Downloads'), { recursive: true })
  const dataDir = join(await tempDir(t, 'bt-upload-data-'), 'data')
  const roots = await prepareUploadRoots([], dataDir, home)
  t.same(roots, [join(dataDir, 'uploads'), home, join(home, 'Downloads'), '/tmp'])
  t.same(
    await prepareUploadRoots([], dataDir, '/nonexistent'),
    [join(dataDir, 'uploads'), '/tmp'],
    'a home that does not exist (nobody) adds nothing',
  )
  t.same(
    await prepareUploadRoots(['/srv/a', 'rel'], dataDir, home),
    ['/srv/a', resolve('rel')],
    'configured: only those',
  )
  t.same(browserUserRoots('/'), ['/tmp'], 'a home of / is not a root')

  const s = await setup(t, undefined, async () => ({ roots, protectedPaths: [dataDir] }))
  const upload = async (dest: string) =>
    s.client.browsers.fs.uploadZip(BROWSER, {
      dest_path: dest,
      zip_file: await toFile(await goodZip(), 'site.zip', { type: 'application/zip' }),
    })
  // Ordinary absolute VM paths: the browser user's downloads, its home, /tmp.
  for (const dest of [join(home, 'Downloads', 'site'), join(home, 'work'), join(s.base, 'in-tmp')]) {
    t.notOk(await upload(dest), dest)
    t.equal(await readFile(join(dest, 'dir', 'hello.txt'), 'utf8'), 'hello', `extracted at ${dest}`)
  }
  const refused = await upload('/etc/bt-upload-test').catch((e: unknown) => e)
  t.ok(refused instanceof Kernel.PermissionDeniedError, 'the client raises its 403 error')
  const err = refused as InstanceType<typeof Kernel.PermissionDeniedError>
  t.equal(err.status, 403)
  t.equal(
    err.message,
    `403 dest_path "/etc/bt-upload-test" is outside the upload roots (${roots.join(', ')})`,
    'the message names the roots',
  )
  t.same((err.error as { details: unknown }).details, [
    { code: 'forbidden', message: `dest_path must be inside one of the upload roots: ${roots.join(', ')}` },
  ])
  // The data dir may sit under a root (/tmp): only its uploads folder is writable.
  await mkdir(join(dataDir, 'log'), { recursive: true })
  for (const dest of [join(dataDir, 'log'), dataDir, join(dataDir, 'tokens')]) {
    const e = (await upload(dest).catch((x: unknown) => x)) as InstanceType<typeof Kernel.PermissionDeniedError>
    t.equal(e.status, 403, dest)
    t.equal(e.message, `403 dest_path ${JSON.stringify(dest)} is inside the daemon's own files`)
  }
  t.notOk(await upload(join(dataDir, 'uploads', 'ok')), 'the data dir uploads root stays writable')
  // A symlink in a root that leads into the data dir does not open it either.
  await symlink(join(dataDir, 'log'), join(home, 'to-log'))
  const viaLink = (await upload(join(home, 'to-log', 'x')).catch((x: unknown) => x)) as { status?: number }
  t.equal(viaLink.status, 403)
  t.same(await readdir(join(dataDir, 'log')), [], 'nothing written in the data dir')
})

t.test('an unexpected file part before zip_file is a 400, and the daemon stays up', async t => {
  const s = await setup(t)
  for (let i = 0; i < 3; i++) {
    const res = await s.post(
      form([
        ['file', new Blob([new Uint8Array(200 * 1024)])],
        ['zip_file', new Blob([new Uint8Array(await goodZip())])],
        ['dest_path', join(s.root, 'x')],
      ]),
    )
    await expectError(t, res, 400, 'bad_request', /unexpected file part \(expected "zip_file"\)/)
  }
  const ok = await s.post(
    form([
      ['dest_path', join(s.root, 'after')],
      ['zip_file', new Blob([new Uint8Array(await goodZip())])],
    ]),
  )
  t.equal(ok.status, 201, 'the server still answers')
})
