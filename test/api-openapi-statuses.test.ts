// The OpenAPI document lists every status a route really answers: a real daemon (no browser) is
// driven into each route's refusals (no token, a token without the scope, another browser, bad
// path, query and body values, wrong content types, oversize bodies, a duplicate name, uploads
// past the concurrency cap) and every status seen must be in that operation's responses.
import t from 'tap'
import Kernel, { toFile } from '@onkernel/sdk'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { openExtensionMeta, tempDir } from './helpers/store.js'
import { yazlZip } from './helpers/zip.js'
import { BROWSER_ID, startApi } from './helpers/api.js'
import { ExtensionStore } from '../src/uploads/extension-store.js'
import { registerExtensionRoutes } from '../src/api/routes/extensions.js'
import { registerUploadRoutes } from '../src/api/routes/uploads.js'
import { UploadSlots } from '../src/uploads/upload-slots.js'

const TOKENS = { all: 'tok-all-0123456789', read: 'tok-read-0123456789', cdp: 'tok-cdp-0123456789' }
const UPLOAD_MAX = 64 * 1024
const LIMITS = { maxEntries: 1000, maxTotalBytes: 1 << 30, maxRatio: 200 }

type Op = { operationId: string; responses: Record<string, unknown>; parameters?: Param[]; requestBody?: Body } & {
  'x-required-scope'?: string | null
}
type Param = {
  name: string
  in: string
  schema: { type?: string; enum?: unknown[]; const?: unknown; anyOf?: unknown[] }
}
type Body = { content: Record<string, unknown> }

t.test('every status a route answers is in its documented responses', async t => {
  t.setTimeout(300_000)
  const dir = await tempDir(t, 'bt-openapi-statuses-')
  const tokenFile = join(dir, 'tokens')
  await writeFile(
    tokenFile,
    `${TOKENS.all} read,write,publish,cdp all\n${TOKENS.read} read reader\n${TOKENS.cdp} cdp driver\n`,
    { mode: 0o600 },
  )
  const config = parseServeConfig(
    [
      ...['--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--no-browser', '--token-file', tokenFile],
      ...['--upload-max-bytes', String(UPLOAD_MAX), '--upload-max-concurrent', '1', '--max-stream-clients', '1'],
    ],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger })
  t.teardown(() => d.close())
  const doc = (await (await fetch(`${d.url}/openapi.json`, { headers: auth(TOKENS.all) })).json()) as {
    paths: Record<string, Record<string, Op>>
  }
  const seen = new Map<string, Set<number>>()
  const see = (op: string, status: number) => {
    if (!seen.has(op)) seen.set(op, new Set())
    seen.get(op)!.add(status)
  }
  const send = async (op: string, method: string, url: string, init: RequestInit = {}) => {
    let res: Response
    try {
      res = await fetch(d.url + url, { method: method.toUpperCase(), redirect: 'manual', ...init })
    } catch (err) {
      // A body refused before it was read may cut the connection under a client still sending.
      t.comment(`${op} ${method} ${url}: ${String((err as Error).cause ?? err)}`)
      return 0
    }
    await res.body?.cancel().catch(() => undefined)
    see(op, res.status)
    return res.status
  }

  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op.operationId === 'streamBrowserTelemetryEvents') continue // driven below (a stream stays open)
      const path = (id = d.browserId, other = 'nope-0') =>
        template.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'id' ? id : other))
      const scope = op['x-required-scope']
      const json = op.requestBody?.content['application/json'] !== undefined
      const multipart = op.requestBody?.content['multipart/form-data'] !== undefined
      const body = (): RequestInit =>
        json
          ? { body: '{}', headers: { ...auth(TOKENS.all), 'content-type': 'application/json' } }
          : multipart
            ? { body: form([['name', 'x']]), headers: auth(TOKENS.all) }
            : { headers: auth(TOKENS.all) }
      const withToken = (token: string): RequestInit => ({ ...body(), headers: { ...body().headers, ...auth(token) } })
      await send(op.operationId, method, path(), body())
      await send(op.operationId, method, path(), { ...body(), headers: {} })
      await send(op.operationId, method, path(), withToken('not-a-token'))
      if (scope) await send(op.operationId, method, path(), withToken(scope === 'cdp' ? TOKENS.read : TOKENS.cdp))
      if (template.startsWith('/browsers/{id}')) await send(op.operationId, method, path('other-browser'), body())
      if (/\{(?!id\})\w+\}/.test(template)) await send(op.operationId, method, path(d.browserId, '..%2F'), body())
      for (const p of op.parameters ?? []) {
        if (p.in !== 'query') continue
        const bad = p.schema.type === 'integer' ? '-1.5' : p.schema.type === 'array' ? 'zz,' : 'zz-not-a-value'
        await send(op.operationId, method, `${path()}?${p.name}=${encodeURIComponent(bad)}`, body())
        await send(op.operationId, method, `${path()}?${p.name}=1&${p.name}=2`, body())
      }
      if (json) {
        const headers = { ...auth(TOKENS.all), 'content-type': 'application/json' }
        await send(op.operationId, method, path(), { body: '{not json', headers })
        await send(op.operationId, method, path(), { body: '[]', headers })
        await send(op.operationId, method, path(), {
          body: '{}',
          headers: { ...auth(TOKENS.all), 'content-type': 'text/plain' },
        })
        await send(op.operationId, method, path(), { body: JSON.stringify({ x: 'y'.repeat(3 << 20) }), headers })
      }
      if (multipart) {
        const headers = { ...auth(TOKENS.all), 'content-type': 'application/json' }
        await send(op.operationId, method, path(), { body: '{}', headers })
        const big = form([
          ['file', new Blob([new Uint8Array(UPLOAD_MAX * 2)])],
          ['zip_file', new Blob([new Uint8Array(UPLOAD_MAX * 2)])],
        ])
        await send(op.operationId, method, path(), { body: big, headers: auth(TOKENS.all) })
        const notZip = form([
          ['file', new Blob(['not a zip'])],
          ['zip_file', new Blob(['not a zip'])],
          ['dest_path', '/etc'],
        ])
        await send(op.operationId, method, path(), { body: notZip, headers: auth(TOKENS.all) })
      }
    }
  }

  // The extension upload's own refusals, through the real client: a name taken (409), too big (413).
  const client = new Kernel({ apiKey: TOKENS.all, baseURL: d.url, maxRetries: 0 })
  const zip = await yazlZip([{ name: 'manifest.json', data: '{"manifest_version":3,"name":"x","version":"1"}' }])
  await client.extensions.upload({ file: await toFile(zip, 'x.zip'), name: 'taken' })
  for (const [file, name] of [
    [zip, 'taken'],
    [Buffer.alloc(UPLOAD_MAX * 2), 'big'],
  ] as const) {
    const err = (await client.extensions.upload({ file: await toFile(file, 'x.zip'), name }).catch(e => e)) as {
      status: number
    }
    see('uploadExtension', err.status)
  }
  t.same([...seen.get('uploadExtension')!].filter(s => [409, 413].includes(s)).sort(), [409, 413])

  // Past the upload cap (shared by both upload routes): 429. The cap's one slot is taken here, in
  // an app with the same route groups, so the refusal does not race a held upload.
  const slots = new UploadSlots(1)
  const store = await ExtensionStore.open({ dir: join(dir, 'capped-extensions'), db: await openExtensionMeta(t) })
  const capped = await startApi(t, {
    deps: {
      routes: [
        r => registerExtensionRoutes(r, { store, uploadMaxBytes: UPLOAD_MAX, zipLimits: LIMITS, slots }),
        r =>
          registerUploadRoutes(r, {
            uploadRoots: ['/tmp'],
            spoolDir: join(dir, 'spool'),
            uploadMaxBytes: UPLOAD_MAX,
            zipLimits: LIMITS,
            slots,
          }),
      ],
    },
  })
  const release = slots.take()
  for (const call of [
    async () => capped.client.extensions.upload({ file: await toFile(zip, 'x.zip') }),
    async () =>
      capped.client.browsers.fs.uploadZip(BROWSER_ID, { dest_path: '/tmp/x', zip_file: await toFile(zip, 'x.zip') }),
  ]) {
    const err = (await call().catch((e: unknown) => e)) as { status: number }
    t.equal(err.status, 429)
  }
  release()
  see('uploadExtension', 429)
  see('uploadZip', 429)

  // The stream: past --max-stream-clients (1), a bad Last-Event-ID, the usual refusals.
  const stream = `/browsers/${d.browserId}/telemetry/stream`
  const ac = new AbortController()
  const open = await fetch(d.url + stream, { headers: auth(TOKENS.all), signal: ac.signal })
  see('streamBrowserTelemetryEvents', open.status)
  await send('streamBrowserTelemetryEvents', 'get', stream, { headers: auth(TOKENS.all) })
  ac.abort()
  await send('streamBrowserTelemetryEvents', 'get', stream, { headers: { ...auth(TOKENS.all), 'last-event-id': 'x' } })
  await send('streamBrowserTelemetryEvents', 'get', stream, { headers: auth(TOKENS.cdp) })
  await send('streamBrowserTelemetryEvents', 'get', stream, {})
  await send('streamBrowserTelemetryEvents', 'get', `/browsers/other/telemetry/stream`, { headers: auth(TOKENS.all) })
  t.same([...seen.get('streamBrowserTelemetryEvents')!].sort(), [200, 400, 401, 403, 404, 429])

  // Every status seen is documented for its operation.
  const documented = new Map<string, Set<number>>()
  for (const item of Object.values(doc.paths))
    for (const op of Object.values(item)) documented.set(op.operationId, new Set(Object.keys(op.responses).map(Number)))
  for (const [op, statuses] of [...seen].sort()) {
    const missing = [...statuses].filter(s => !documented.get(op)!.has(s)).sort()
    t.same(
      missing,
      [],
      `${op}: answered ${[...statuses].sort().join(', ')}; documented ${[...documented.get(op)!].sort().join(', ')}`,
    )
  }
  t.equal(seen.size, documented.size, 'every documented operation was driven')
  // Routes that write are refused with 507 while the disk is full (the write guard): documented too.
  for (const item of Object.values(doc.paths))
    for (const op of Object.values(item))
      if (op['x-required-scope'] === 'write' || op['x-required-scope'] === 'publish')
        t.ok(op.responses['507'], `${op.operationId}: 507 documented`)
})

const auth = (token: string) => ({ authorization: `Bearer ${token}` })

function form(parts: [string, string | Blob][]): FormData {
  const f = new FormData()
  for (const [k, v] of parts) {
    if (typeof v === 'string') f.append(k, v)
    else f.append(k, v, 'upload.zip')
  }
  return f
}
