// The extension group through the real API app and the real client (@onkernel/sdk): upload, list
// (paged, filters, projects), get, download (exact bytes, last_used_at), delete, manifest validation,
// duplicate names answered 409 exactly once (no client retries), and the startup sweep.
import t, { type Test } from 'tap'
import Kernel, { toFile } from '@onkernel/sdk'
import { createHash } from 'node:crypto'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Middleware } from 'koa'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import type { ApiState } from '../src/api/operation.js'
import { startApiServer } from '../src/api/server.js'
import { registerExtensionRoutes } from '../src/api/routes/extensions.js'
import { ExtensionStore } from '../src/uploads/extension-store.js'
import { openExtensionMeta, openStore, tempDir } from './helpers/store.js'
import { rawZip, yazlZip } from './helpers/zip.js'

const TOKEN = 'tok-all'
const READ_ONLY = 'tok-read'
const MAX = 512 * 1024
const LIMITS = { maxEntries: 1000, maxTotalBytes: 1 << 30, maxRatio: 200 }

async function setup(tt: Test) {
  const { log, pipeline } = await openStore(tt)
  const dir = join(await tempDir(tt, 'bt-ext-'), 'extensions')
  const store = await ExtensionStore.open({ dir, db: await openExtensionMeta(tt) })
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  tokens.add(READ_ONLY, ['read'])
  const requests: string[] = []
  const count: Middleware<ApiState> = async (ctx, next) => {
    requests.push(`${ctx.method} ${ctx.path}`)
    await next()
  }
  const app = createApiApp({
    browserId: 'br-ext',
    log,
    pipeline,
    tokens,
    outerMiddleware: [count],
    routes: [r => registerExtensionRoutes(r, { store, uploadMaxBytes: MAX, zipLimits: LIMITS })],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  tt.teardown(() => server.close(500))
  // default retry settings on purpose: a 409 must stop them
  const client = new Kernel({ apiKey: TOKEN, baseURL: server.url, timeout: 30_000 })
  const fetchApi = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers)
    if (!headers.has('authorization')) headers.set('authorization', `Bearer ${TOKEN}`)
    return fetch(server.url + path, { ...init, headers })
  }
  return { log, dir, store, server, client, requests, fetchApi }
}

const manifest = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({ manifest_version: 3, name: 'Test Ext', version: '1.0.0', ...fields })
const extZip = (m = manifest(), prefix = '') =>
  yazlZip([
    { name: `${prefix}manifest.json`, data: m },
    { name: `${prefix}background.js`, data: 'console.log(1)' },
  ])
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

async function expectUploadError(
  tt: Test,
  s: Awaited<ReturnType<typeof setup>>,
  zip: Buffer,
  status: number,
  code: string,
  detail: RegExp,
) {
  const err = (await s.client.extensions
    .upload({ file: await toFile(zip, 'ext.zip') })
    .catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
  tt.equal(err.status, status, `${status} ${code}`)
  const body = err.error as { code: string; details?: { code: string; message: string }[] }
  tt.equal(body.code, code)
  tt.match(body.details?.[0]?.message, detail)
}

t.test('upload, get, list, download, delete with the real client', async t => {
  const s = await setup(t)
  const zip = await extZip()
  const up = await s.client.extensions.upload({ file: await toFile(zip, 'ext.zip'), name: 'My-Ext_1.0' })
  t.match(up, { id: /^[a-z2-7]{24}$/, name: 'My-Ext_1.0', size_bytes: zip.length, checksum: sha256(zip) })
  t.ok(!Number.isNaN(Date.parse(up.created_at)), 'created_at is a date-time')
  t.notOk('last_used_at' in up, 'never used yet')

  const anon = await s.client.extensions.upload({ file: await toFile(await extZip(manifest(), 'folder/'), 'ext2.zip') })
  t.notOk('name' in anon, 'no name when none given')

  t.same(await s.client.extensions.get(up.id), up, 'metadata by id')
  t.same(await s.client.extensions.get('my-ext_1.0'), up, 'metadata by name, case-insensitive')

  const res = await s.client.extensions.download('My-Ext_1.0')
  t.equal(res.headers.get('content-type'), 'application/zip')
  t.same(Buffer.from(await res.arrayBuffer()), zip, 'exact uploaded bytes')
  const used = await s.client.extensions.get(up.id)
  t.ok(
    used.last_used_at && Date.parse(used.last_used_at) >= Date.parse(up.created_at),
    'last_used_at set by the download',
  )

  const all = []
  for await (const e of s.client.extensions.list()) all.push(e.id)
  t.same(all, [up.id, anon.id], 'oldest first')

  await s.client.extensions.delete(up.id)
  const gone = (await s.client.extensions.get(up.id).catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
  t.equal(gone.status, 404)
  t.same((await readdir(s.dir)).sort(), [`${anon.id}.zip`], 'archive removed, nothing else in the store dir')
  const again = (await s.client.extensions.delete(up.id).catch((e: unknown) => e)) as InstanceType<
    typeof Kernel.APIError
  >
  t.equal(again.status, 404)
})

t.test('duplicate name: 409 conflict answered once, no retries; projects are separate', async t => {
  const s = await setup(t)
  await s.client.extensions.upload({ file: await toFile(await extZip(), 'a.zip'), name: 'dup' })
  const before = s.requests.length
  const err = (await s.client.extensions
    .upload({ file: await toFile(await extZip(), 'b.zip'), name: 'DUP' })
    .catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
  t.ok(err instanceof Kernel.ConflictError, '409')
  t.equal(err.headers?.get('x-should-retry'), 'false')
  t.equal((err.error as { code: string }).code, 'conflict')
  t.same(s.requests.slice(before), ['POST /extensions'], 'exactly one request reached the server')
  t.same((await readdir(s.dir)).length, 1, 'no second archive')

  const other = await s.client.extensions.upload(
    { file: await toFile(await extZip(), 'c.zip'), name: 'dup' },
    { headers: { 'X-Kernel-Project-Id': 'proj-2' } },
  )
  t.equal(other.name, 'dup', 'same name allowed in another project')
  const inDefault = []
  for await (const e of s.client.extensions.list()) inDefault.push(e.id)
  t.equal(inDefault.length, 1, 'lists are per project')
  const cross = (await s.client.extensions.get(other.id).catch((e: unknown) => e)) as InstanceType<
    typeof Kernel.APIError
  >
  t.equal(cross.status, 404, "another project's extension is not visible by id")
})

t.test('concurrent uploads of one name: exactly one wins', async t => {
  const s = await setup(t)
  const results = await Promise.allSettled(
    Array.from({ length: 4 }, async () =>
      s.client.extensions.upload({ file: await toFile(await extZip(), 'e.zip'), name: 'race' }),
    ),
  )
  t.equal(results.filter(r => r.status === 'fulfilled').length, 1, 'one 201')
  t.same(
    results
      .filter(r => r.status === 'rejected')
      .map(r => ((r as PromiseRejectedResult).reason as InstanceType<typeof Kernel.APIError>).status),
    [409, 409, 409],
  )
  t.equal((await readdir(s.dir)).length, 1, 'one archive stored')
})

t.test('paging and filters', async t => {
  const s = await setup(t)
  const names = ['alpha', 'beta', 'Alphabet', 'gamma', 'delta-alpha']
  const ids: string[] = []
  for (const name of names)
    ids.push((await s.client.extensions.upload({ file: await toFile(await extZip(), `${name}.zip`), name })).id)

  const page = await s.fetchApi('/extensions?limit=2')
  t.equal(page.headers.get('x-has-more'), 'true')
  t.equal(page.headers.get('x-next-offset'), '2')
  t.same(
    ((await page.json()) as { id: string }[]).map(e => e.id),
    ids.slice(0, 2),
  )
  const last = await s.fetchApi('/extensions?limit=2&offset=4')
  t.equal(last.headers.get('x-has-more'), 'false')
  t.equal(last.headers.get('x-next-offset'), '0')

  const walked = []
  for await (const e of s.client.extensions.list({ limit: 2 })) walked.push(e.name)
  t.same(walked, names, 'the client pages through everything in order')

  const byName = []
  for await (const e of s.client.extensions.list({ name: 'ALPHA' })) byName.push(e.name)
  t.same(byName, ['alpha'], 'name: exact, case-insensitive')
  const byQuery = []
  for await (const e of s.client.extensions.list({ query: 'alph' })) byQuery.push(e.name)
  t.same(byQuery, ['alpha', 'Alphabet', 'delta-alpha'], 'query: substring, case-insensitive')
  const byId = []
  for await (const e of s.client.extensions.list({ query: ids[3]! })) byId.push(e.name)
  t.same(byId, ['gamma'], 'query matches an exact id')

  for (const q of ['limit=0', 'limit=101', 'limit=x', 'offset=-1']) {
    const bad = await s.fetchApi(`/extensions?${q}`)
    t.equal(bad.status, 400, `400 for ${q}`)
  }
})

t.test('validation: manifest, zip, name, size, scope', async t => {
  const s = await setup(t)
  await expectUploadError(
    t,
    s,
    await yazlZip([{ name: 'background.js', data: 'x' }]),
    400,
    'bad_request',
    /no manifest\.json/,
  )
  await expectUploadError(
    t,
    s,
    await yazlZip([
      { name: 'a/manifest.json', data: manifest() },
      { name: 'b/x.js', data: 'x' },
    ]),
    400,
    'bad_request',
    /no manifest\.json/,
  )
  await expectUploadError(t, s, await extZip('{ not json'), 400, 'bad_request', /not valid JSON/)
  await expectUploadError(
    t,
    s,
    await extZip(JSON.stringify({ manifest_version: 3, name: 'x' })),
    400,
    'bad_request',
    /lacks "version"/,
  )
  await expectUploadError(
    t,
    s,
    await extZip(JSON.stringify({ name: 'x', version: '1' })),
    400,
    'bad_request',
    /lacks "manifest_version"/,
  )
  await expectUploadError(
    t,
    s,
    await extZip(manifest({ manifest_version: 'three' })),
    400,
    'bad_request',
    /manifest_version/,
  )
  await expectUploadError(t, s, await extZip('[1,2]'), 400, 'bad_request', /not a JSON object/)
  await expectUploadError(t, s, Buffer.from('definitely not a zip file'), 400, 'invalid_zip', /not a readable zip/)
  await expectUploadError(
    t,
    s,
    rawZip([
      { name: 'manifest.json', data: manifest() },
      { name: '../evil.js', data: 'x' },
    ]),
    400,
    'unsafe_entry',
    /"\.\.\/evil\.js"/,
  )

  for (const name of ['', 'has space', 'slash/name', 'x'.repeat(256), 'ünï']) {
    const err = (await s.client.extensions
      .upload({ file: await toFile(await extZip(), 'e.zip'), name })
      .catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
    t.equal(err.status, 400, `400 for name ${JSON.stringify(name.slice(0, 20))}`)
  }
  const ok255 = await s.client.extensions.upload({ file: await toFile(await extZip(), 'e.zip'), name: 'x'.repeat(255) })
  t.equal(ok255.name?.length, 255)

  const big = (await s.client.extensions
    .upload({ file: await toFile(Buffer.alloc(MAX + 1), 'big.zip') })
    .catch((e: unknown) => e)) as InstanceType<typeof Kernel.APIError>
  t.equal(big.status, 413)
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(await extZip())]), 'e.zip')
  const ro = await s.fetchApi('/extensions', {
    method: 'POST',
    body: form,
    headers: { authorization: `Bearer ${READ_ONLY}` },
  })
  t.equal(ro.status, 403)
  const textPart = new FormData()
  textPart.append('file', 'not a file')
  t.equal((await s.fetchApi('/extensions', { method: 'POST', body: textPart })).status, 400)
  t.same(await readdir(s.dir), [`${ok255.id}.zip`], 'only the one good upload is stored; no spool files left')
})

t.test('startup sweep: orphan archives and spool files removed, records without archives dropped', async t => {
  const dir = join(await tempDir(t, 'bt-ext-'), 'extensions')
  const db = await openExtensionMeta(t)
  const first = await ExtensionStore.open({ dir, db })
  const zip = await extZip()
  const spool = join(dir, `${first.spoolPrefix}abc`)
  await writeFile(spool, zip)
  const kept = await first.create('default', 'kept', { path: spool, size: zip.length, sha256: sha256(zip) })
  // what a crash can leave behind: an archive renamed but not recorded, a half-written spool file
  await writeFile(join(dir, 'aaaaaaaaaaaaaaaaaaaaaaaa.zip'), zip)
  await writeFile(join(dir, `${first.spoolPrefix}half`), 'partial')
  // and (by hand) a record whose archive is gone
  await db.put('bbbbbbbbbbbbbbbbbbbbbbbb', {
    id: 'bbbbbbbbbbbbbbbbbbbbbbbb',
    project: 'default',
    name: 'ghost',
    created_at: new Date().toISOString(),
    size_bytes: 1,
    checksum: '0'.repeat(64),
  })

  const reopened = await ExtensionStore.open({ dir, db })
  t.same(await readdir(dir), [`${kept.id}.zip`])
  t.same(
    reopened.list('default', { limit: 10, offset: 0 }).items.map(e => e.name),
    ['kept'],
  )
  t.notOk(reopened.nameTaken('default', 'ghost'))
  t.ok(reopened.nameTaken('default', 'KEPT'))
})
