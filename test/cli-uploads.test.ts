// upload-zip and extension commands against a real daemon with the upload and extension routes.
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startDaemon } from '../src/main.js'
import { parseServeConfig } from '../src/config/config.js'
import { silentLogger } from '../src/log.js'
import { ExtensionStore } from '../src/uploads/extension-store.js'
import { DEFAULT_ZIP_LIMITS } from '../src/uploads/zip-entries.js'
import { registerUploadRoutes } from '../src/api/routes/uploads.js'
import { registerExtensionRoutes } from '../src/api/routes/extensions.js'
import type { ApiRouter } from '../src/api/route-table.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { openExtensionMeta, tempDir } from './helpers/store.js'
import { yazlZip } from './helpers/zip.js'

const TOKEN = 'cli-upload-token'

function capture(env: NodeJS.ProcessEnv = {}) {
  let out = ''
  let err = ''
  const io: CliIO = {
    stdout: {
      write: c => {
        out += typeof c === 'string' ? c : Buffer.from(c).toString('latin1')
        return true
      },
    },
    stderr: {
      write: c => {
        err += typeof c === 'string' ? c : Buffer.from(c).toString()
        return true
      },
    },
    env,
  }
  return { io, out: () => out, err: () => err }
}

t.test('upload-zip and extension upload|list|get|download|delete', async t => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const uploadRoot = join(dir, 'uploads')
  await mkdir(uploadRoot)
  // Extension metadata in its own database (the daemon's is opened inside startDaemon).
  const store = await ExtensionStore.open({ dir: join(dir, 'extensions'), db: await openExtensionMeta(t) })
  // Mounted only when the daemon's API step (src/daemon/serve-stages.ts) has not wired them.
  const wire = (r: ApiRouter) => {
    if (!r.routes.some(x => x.operationId === 'uploadZip')) {
      registerUploadRoutes(r, {
        uploadRoots: [uploadRoot],
        spoolDir: join(dir, 'spool'),
        uploadMaxBytes: 10 * 1024 * 1024,
        zipLimits: DEFAULT_ZIP_LIMITS,
      })
    }
    if (!r.routes.some(x => x.path === '/extensions' && x.method === 'POST')) {
      registerExtensionRoutes(r, { store, uploadMaxBytes: 10 * 1024 * 1024, zipLimits: DEFAULT_ZIP_LIMITS })
    }
  }
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dataDir,
      '--no-browser',
      '--token',
      TOKEN,
      '--proxy-listen',
      'off',
      '--upload-root',
      uploadRoot,
    ],
    {},
  )
  const h = await startDaemon(config, { logger: silentLogger, announce: () => {}, routes: [wire] })
  t.teardown(() => h.close())
  const env = { BROWSER_TELEMETRY_URL: h.url, BROWSER_TELEMETRY_TOKEN: TOKEN }
  const ok = async (cmd: keyof typeof clientCommands, argv: string[]) => {
    const c = capture(env)
    const code = await clientCommands[cmd]!.run(argv, c.io)
    t.equal(code, 0, `${cmd} ${argv.join(' ')}: ${c.err()}`)
    return c
  }

  await t.test('upload-zip extracts the archive at the destination', async t => {
    const zip = join(dir, 'site.zip')
    await writeFile(
      zip,
      await yazlZip([
        { name: 'index.html', data: '<h1>hi</h1>' },
        { name: 'css/app.css', data: 'body{}' },
      ]),
    )
    const dest = join(uploadRoot, 'site')
    const c = await ok('upload-zip', [zip, dest])
    t.equal(c.out(), `extracted ${zip} to ${dest}\n`)
    t.equal(await readFile(join(dest, 'index.html'), 'utf8'), '<h1>hi</h1>')
    t.equal(await readFile(join(dest, 'css/app.css'), 'utf8'), 'body{}')

    const missing = capture(env)
    t.equal(await clientCommands['upload-zip']!.run([join(dir, 'nope.zip'), dest], missing.io), 1)
    t.equal(missing.err(), `browser-telemetry upload-zip: cannot read ${join(dir, 'nope.zip')}: ENOENT\n`)
    const outside = capture(env)
    t.equal(await clientCommands['upload-zip']!.run([zip, '/etc/evil'], outside.io), 1)
    t.match(outside.err(), /^browser-telemetry upload-zip: 4\d\d [a-z_]+: [^\n]+\n$/)
    const args = capture(env)
    t.equal(await clientCommands['upload-zip']!.run([zip], args.io), 2)
    t.equal(args.err(), 'browser-telemetry upload-zip: expected <zip> <dest> (see --help)\n')
  })

  await t.test('extension upload, list, get, download, delete', async t => {
    const bytes = await yazlZip([
      { name: 'manifest.json', data: JSON.stringify({ manifest_version: 3, name: 'Demo', version: '1.0' }) },
      { name: 'bg.js', data: '1' },
    ])
    const zip = join(dir, 'ext.zip')
    await writeFile(zip, bytes)
    const up = await ok('extension', ['upload', zip, '--name', 'demo-ext'])
    const rec = JSON.parse(up.out())
    t.equal(rec.name, 'demo-ext')
    t.equal(rec.size_bytes, bytes.length)
    t.equal(rec.checksum, createHash('sha256').update(bytes).digest('hex'))
    t.match(rec.id, /^\S+$/)
    const other = await ok('extension', ['upload', zip])
    const rec2 = JSON.parse(other.out())

    const list = await ok('extension', ['list'])
    const listed = list
      .out()
      .trimEnd()
      .split('\n')
      .map(l => JSON.parse(l))
    t.same(listed.map((e: { id: string }) => e.id).sort(), [rec.id, rec2.id].sort())
    const one = await ok('extension', ['list', '--limit', '1'])
    t.equal(one.out().trimEnd().split('\n').length, 1)
    const byName = await ok('extension', ['list', '--name', 'demo-ext'])
    t.same(JSON.parse(byName.out()), rec)

    const get = await ok('extension', ['get', 'demo-ext'])
    t.same(JSON.parse(get.out()), rec)

    const file = join(dir, 'back.zip')
    await ok('extension', ['download', 'demo-ext', '-o', file])
    t.same(await readFile(file), bytes, 'downloaded bytes are the uploaded bytes')
    const again = capture(env)
    t.equal(await clientCommands.extension!.run(['download', 'demo-ext', '-o', file], again.io), 1)
    t.equal(again.err(), `browser-telemetry extension download: ${file} exists; choose another -o\n`)

    const del = await ok('extension', ['delete', 'demo-ext'])
    t.equal(del.out(), 'deleted demo-ext\n')
    const gone = capture(env)
    t.equal(await clientCommands.extension!.run(['get', 'demo-ext'], gone.io), 1)
    t.match(gone.err(), /^browser-telemetry extension get: 404 not_found: [^\n]+\n$/)
    const dup = capture(env)
    await ok('extension', ['upload', zip, '--name', 'dup'])
    t.equal(await clientCommands.extension!.run(['upload', zip, '--name', 'dup'], dup.io), 1)
    t.match(dup.err(), /^browser-telemetry extension upload: 409 conflict: /)
    const unknown = capture(env)
    t.equal(await clientCommands.extension!.run(['frobnicate'], unknown.io), 2)
    t.equal(
      unknown.err(),
      'browser-telemetry extension: unknown command "frobnicate" (upload, list, get, download, delete)\n',
    )
  })
})
