// extractZip against a generated corpus of hostile archives (each refused with the right code, the
// entry named, and the destination byte-for-byte untouched) and a round trip of a real tree.
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { chmod, lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { extractZip } from '../src/uploads/extract-zip.js'
import { UploadError } from '../src/uploads/errors.js'
import { sweepSpool } from '../src/uploads/multipart-spool.js'
import type { ZipLimits } from '../src/uploads/zip-entries.js'
import { tempDir } from './helpers/store.js'
import { snapshot } from './helpers/tree.js'
import { rawZip, yazlZip } from './helpers/zip.js'

const LIMITS: ZipLimits = { maxEntries: 1000, maxTotalBytes: 64 * 1024 * 1024, maxRatio: 200 }

/** A populated destination inside a parent that must also stay clean (no staging leftovers). */
async function populatedDest(tt: Test) {
  const parent = await tempDir(tt, 'bt-uploads-')
  const dest = join(parent, 'dest')
  await mkdir(join(dest, 'sub'), { recursive: true })
  await writeFile(join(dest, 'existing.txt'), 'keep me')
  await writeFile(join(dest, 'sub', 'a.txt'), 'old a')
  return { parent, dest }
}

async function expectRejected(
  tt: Test,
  archive: Buffer,
  code: 'invalid_zip' | 'unsafe_entry',
  entry: string | RegExp | null,
  opts: {
    limits?: ZipLimits
    prepare?: (dest: string, parent: string) => Promise<void>
  } = {},
) {
  const { parent, dest } = await populatedDest(tt)
  await opts.prepare?.(dest, parent)
  const zipPath = join(parent, 'in.zip')
  await writeFile(zipPath, archive)
  const before = await snapshot(parent)
  const err = await extractZip(zipPath, dest, opts.limits ?? LIMITS).then(
    () => undefined,
    (e: unknown) => e,
  )
  tt.ok(err instanceof UploadError, `rejected with UploadError (${(err as Error)?.message})`)
  const ue = err as UploadError
  tt.equal(ue.code, code)
  tt.equal(ue.status, 400)
  tt.equal(ue.details.length, 1)
  if (typeof entry === 'string')
    tt.match(ue.details[0]!.message, `entry ${JSON.stringify(entry)}`, 'detail names the entry')
  else if (entry) tt.match(ue.details[0]!.message, entry)
  tt.same(await snapshot(parent), before, 'destination and its parent untouched')
  return ue
}

const SYMLINK = 0o120777

t.test('hostile archives are refused before anything is written', async t => {
  t.test('".." escape', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'ok.txt', data: 'x' },
        { name: '../evil.txt', data: 'x' },
      ]),
      'unsafe_entry',
      '../evil.txt',
    ),
  )
  t.test('nested ".." escape', tt =>
    expectRejected(tt, rawZip([{ name: 'a/b/../../../evil.txt', data: 'x' }]), 'unsafe_entry', 'a/b/../../../evil.txt'),
  )
  t.test('inner ".." that stays inside is still refused', tt =>
    expectRejected(tt, rawZip([{ name: 'a/../b.txt', data: 'x' }]), 'unsafe_entry', 'a/../b.txt'),
  )
  t.test('absolute path', tt =>
    expectRejected(tt, rawZip([{ name: '/tmp/evil.txt', data: 'x' }]), 'unsafe_entry', '/tmp/evil.txt'),
  )
  t.test('drive letter', tt =>
    expectRejected(tt, rawZip([{ name: 'C:/evil.txt', data: 'x' }]), 'unsafe_entry', 'C:/evil.txt'),
  )
  t.test('backslash traversal', tt =>
    expectRejected(tt, rawZip([{ name: '..\\evil.txt', data: 'x' }]), 'unsafe_entry', '..\\evil.txt'),
  )
  t.test('relative symlink leaving dest', tt =>
    expectRejected(
      tt,
      rawZip([{ name: 'a/link', data: '../../etc', method: 0, unixMode: SYMLINK }]),
      'unsafe_entry',
      'a/link',
    ),
  )
  t.test('absolute symlink outside dest', tt =>
    expectRejected(
      tt,
      rawZip([{ name: 'link', data: '/etc/passwd', method: 0, unixMode: SYMLINK }]),
      'unsafe_entry',
      'link',
    ),
  )
  t.test('".." applied to a symlink that points at dest itself', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'self', data: '.', method: 0, unixMode: SYMLINK },
        { name: 'up', data: 'self/..', method: 0, unixMode: SYMLINK },
      ]),
      'unsafe_entry',
      'up',
    ),
  )
  t.test('entry under a symlink entry of the archive', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'link', data: 'sub', method: 0, unixMode: SYMLINK },
        { name: 'link/x.txt', data: 'x' },
      ]),
      'unsafe_entry',
      'link/x.txt',
    ),
  )
  t.test('entry under an existing symlink that leaves dest', async tt => {
    const outside = await tempDir(tt, 'bt-outside-')
    await expectRejected(tt, rawZip([{ name: 'out/x.txt', data: 'x' }]), 'unsafe_entry', 'out/x.txt', {
      prepare: dest => symlink(outside, join(dest, 'out')),
    })
    tt.same(await readdir(outside), [], 'nothing written through the symlink')
  })
  t.test('symlink target through an existing symlink that leaves dest', async tt => {
    const outside = await tempDir(tt, 'bt-outside-')
    await expectRejected(
      tt,
      rawZip([{ name: 'l', data: 'out/passwd', method: 0, unixMode: SYMLINK }]),
      'unsafe_entry',
      'l',
      {
        prepare: dest => symlink(outside, join(dest, 'out')),
      },
    )
  })
  t.test('duplicate entries', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'a.txt', data: '1' },
        { name: 'a.txt', data: '2' },
      ]),
      'unsafe_entry',
      'a.txt',
    ),
  )
  t.test('duplicates after normalisation', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'd/a.txt', data: '1' },
        { name: './d//a.txt', data: '2' },
      ]),
      'unsafe_entry',
      './d//a.txt',
    ),
  )
  t.test('file and directory with one name', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'a', data: '1' },
        { name: 'a/b.txt', data: '2' },
      ]),
      'unsafe_entry',
      'a/b.txt',
    ),
  )
  t.test('encrypted entry', tt =>
    expectRejected(tt, rawZip([{ name: 'secret.txt', data: 'x', flags: 1 }]), 'invalid_zip', 'secret.txt'),
  )
  t.test('special file (FIFO)', tt =>
    expectRejected(tt, rawZip([{ name: 'fifo', unixMode: 0o010644 }]), 'unsafe_entry', 'fifo'),
  )
  t.test('more entries than the limit', tt =>
    expectRejected(
      tt,
      rawZip(Array.from({ length: 6 }, (_, i) => ({ name: `f${i}`, data: 'x' }))),
      'invalid_zip',
      /6 entries; the limit is 5/,
      { limits: { ...LIMITS, maxEntries: 5 } },
    ),
  )
  t.test('total uncompressed size over the cap', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'a', data: 'x'.repeat(600) },
        { name: 'b', data: 'y'.repeat(600) },
      ]),
      'invalid_zip',
      'b',
      { limits: { ...LIMITS, maxTotalBytes: 1000 } },
    ),
  )
  t.test('total size lied about (declared small, data big)', tt =>
    expectRejected(tt, rawZip([{ name: 'a', data: 'x'.repeat(5000), uncompressedSize: 10 }]), 'invalid_zip', 'a'),
  )
  t.test('zip bomb: compression ratio over the bound', async tt => {
    const bomb = await yazlZip([
      { name: 'ok.txt', data: 'fine' },
      { name: 'zeros.bin', data: Buffer.alloc(8 * 1024 * 1024) },
    ])
    await expectRejected(tt, bomb, 'unsafe_entry', 'zeros.bin')
  })
  t.test('CRC mismatch (found while extracting: staging rolled back)', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'sub/a.txt', data: 'new a' },
        { name: 'good.txt', data: 'good' },
        { name: 'bad.txt', data: 'hello world', crc: 0x1234 },
      ]),
      'invalid_zip',
      'bad.txt',
    ),
  )
  t.test('streamed (large) entry with a CRC mismatch', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'first.txt', data: 'x' },
        { name: 'large.bin', data: randomBytes(6 * 1024 * 1024), crc: 7 },
      ]),
      'invalid_zip',
      'large.bin',
    ),
  )
  t.test('streamed (large) entry holding more than declared', tt =>
    expectRejected(
      tt,
      rawZip([{ name: 'large.bin', data: randomBytes(6 * 1024 * 1024), uncompressedSize: 5 * 1024 * 1024 }]),
      'invalid_zip',
      'large.bin',
    ),
  )
  t.test('declared size larger than the data', tt =>
    expectRejected(
      tt,
      rawZip([
        { name: 'first.txt', data: 'x' },
        { name: 'short.txt', data: 'abc', uncompressedSize: 100 },
      ]),
      'invalid_zip',
      'short.txt',
    ),
  )
  t.test('stored entry with mismatched sizes', tt =>
    expectRejected(
      tt,
      rawZip([{ name: 's.txt', data: 'abc', method: 0, uncompressedSize: 10 }]),
      'invalid_zip',
      /size mismatch/,
    ),
  )
  t.test('corrupt deflate data', async tt => {
    const zip = rawZip([{ name: 'big.txt', data: randomBytes(16000).toString('hex') }]) // compressible, but under the ratio limit
    zip.fill(0xff, 40, 80) // inside the compressed data of the only entry
    await expectRejected(tt, zip, 'invalid_zip', 'big.txt')
  })
  t.test('not a zip at all', tt =>
    expectRejected(
      tt,
      Buffer.from('this is not a zip archive, just text'.repeat(10)),
      'invalid_zip',
      /not a readable zip/,
    ),
  )
  t.test('truncated archive', async tt => {
    const zip = await yazlZip([{ name: 'a.txt', data: 'hello'.repeat(100) }])
    await expectRejected(tt, zip.subarray(0, zip.length - 30), 'invalid_zip', null)
  })
  t.test('a file where the destination has a directory', tt =>
    expectRejected(tt, rawZip([{ name: 'sub', data: 'x' }]), 'unsafe_entry', 'sub'),
  )
  t.test('a directory where the destination has a file', tt =>
    expectRejected(tt, rawZip([{ name: 'existing.txt/inner', data: 'x' }]), 'unsafe_entry', 'existing.txt/inner'),
  )
  t.end()
})

t.test('round trip: nested and empty dirs, unicode, modes, symlinks, replacement and merge', async t => {
  const parent = await tempDir(t, 'bt-uploads-')
  const entries = [
    { name: 'a/b/c/deep.txt', data: 'deep' },
    { name: 'empty/', dir: true },
    { name: 'a/empty-inner/', dir: true },
    { name: 'ünïcødé/日本語.txt', data: 'unicode ✓' },
    { name: 'bin/run.sh', data: '#!/bin/sh\necho hi\n', mode: 0o100755 },
    { name: 'bin/suid', data: 'x', mode: 0o104755 },
    { name: 'private.txt', data: 'secret', mode: 0o100600 },
    { name: 'big.bin', data: randomBytes(6 * 1024 * 1024) },
    { name: 'sub/a.txt', data: 'new a' },
  ]
  const zip = Buffer.concat([await yazlZip(entries)])
  // yazl cannot write symlinks: add one through the raw writer in a second archive
  const links = rawZip([{ name: 'links/to-deep', data: '../a/b/c/deep.txt', method: 0, unixMode: SYMLINK }])
  const zipPath = join(parent, 'tree.zip')
  const linksPath = join(parent, 'links.zip')
  await writeFile(zipPath, zip)
  await writeFile(linksPath, links)

  // into a destination that does not exist yet (missing parents too)
  const fresh = join(parent, 'new', 'deeper', 'dest')
  const result = await extractZip(zipPath, fresh, LIMITS)
  t.equal(result.files, 7)
  const snap = await snapshot(fresh)
  t.equal(snap['a/b/c/deep.txt']?.split(' ')[0], 'file')
  t.equal(snap['empty'], 'dir 755', 'directory mode from the archive (yazl writes 0775) without group write')
  t.equal(snap['a/empty-inner']?.split(' ')[0], 'dir')
  t.equal(await readFile(join(fresh, 'ünïcødé', '日本語.txt'), 'utf8'), 'unicode ✓')
  t.equal((await lstat(join(fresh, 'bin/run.sh'))).mode & 0o7777, 0o755, 'executable bit kept')
  t.equal((await lstat(join(fresh, 'bin/suid'))).mode & 0o7777, 0o755, 'setuid stripped')
  t.equal((await lstat(join(fresh, 'private.txt'))).mode & 0o7777, 0o600, 'restrictive mode kept')
  t.same(await readFile(join(fresh, 'big.bin')), entries[7]!.data, 'streamed entry intact')
  t.same((await readdir(join(parent, 'new', 'deeper'))).sort(), ['dest'], 'no staging left behind')

  // the same tree as Debian unzip extracts it
  const viaUnzip = join(parent, 'unzip-out')
  execFileSync('unzip', ['-q', '-o', zipPath, '-d', viaUnzip])
  const theirs = await snapshot(viaUnzip)
  delete theirs['bin/suid'] // unzip keeps setuid only with -K; without it both strip it, but its umask handling differs
  const ours = { ...snap }
  delete ours['bin/suid']
  for (const k of Object.keys(theirs)) {
    if (theirs[k]!.startsWith('dir')) {
      theirs[k] = 'dir'
      ours[k] = 'dir'
      continue
    }
    // unzip keeps group/world write bits; we drop them (mode & 0755)
    theirs[k] = theirs[k]!.replace(/^file (\d+)/, (_, m: string) => `file ${(parseInt(m, 8) & 0o755).toString(8)}`)
  }
  t.same(ours, theirs, 'same tree and contents as unzip; file modes as unzip gives them, without group/world write')

  // into an existing destination: replace, merge, keep unrelated files
  const dest = join(parent, 'existing')
  await mkdir(join(dest, 'sub'), { recursive: true })
  await writeFile(join(dest, 'sub', 'a.txt'), 'old a')
  await writeFile(join(dest, 'sub', 'unrelated.txt'), 'stays')
  await writeFile(join(dest, 'private.txt'), 'old private')
  await chmod(join(dest, 'private.txt'), 0o644)
  await extractZip(zipPath, dest, LIMITS)
  t.equal(await readFile(join(dest, 'sub', 'a.txt'), 'utf8'), 'new a', 'existing file replaced')
  t.equal(await readFile(join(dest, 'sub', 'unrelated.txt'), 'utf8'), 'stays', 'directories merged')
  t.equal(await readFile(join(dest, 'private.txt'), 'utf8'), 'secret')
  t.equal((await lstat(join(dest, 'private.txt'))).mode & 0o777, 0o600, 'replaced file takes the archive mode')
  t.notOk(
    (await readdir(dest)).some(n => n.startsWith('.upload-staging-')),
    'no staging left in dest',
  )

  // symlinks that stay inside are extracted as symlinks
  await extractZip(linksPath, dest, LIMITS)
  t.equal(await readlink(join(dest, 'links', 'to-deep')), '../a/b/c/deep.txt')
  t.equal(await readFile(join(dest, 'links', 'to-deep'), 'utf8'), 'deep')
  // an existing symlink inside dest is a directory to merge into
  await symlink('a', join(dest, 'alias'))
  await writeFile(join(parent, 'alias.zip'), rawZip([{ name: 'alias/via-link.txt', data: 'through an inside link' }]))
  await extractZip(join(parent, 'alias.zip'), dest, LIMITS)
  t.equal(await readFile(join(dest, 'a', 'via-link.txt'), 'utf8'), 'through an inside link')
})

t.test('no file descriptor leaks, on success or on rejection', async t => {
  const parent = await tempDir(t, 'bt-uploads-')
  const fds = async () => (await readdir('/proc/self/fd')).length
  await writeFile(
    join(parent, 'good.zip'),
    await yazlZip([
      { name: 'a.txt', data: 'a' },
      { name: 'big.bin', data: randomBytes(5 * 1024 * 1024) },
    ]),
  )
  await writeFile(
    join(parent, 'bad.zip'),
    rawZip([
      { name: 'l', data: '.', method: 0, unixMode: SYMLINK },
      { name: 'x', data: 'abc', crc: 1 },
    ]),
  )
  await extractZip(join(parent, 'good.zip'), join(parent, 'warm'), LIMITS)
  const before = await fds()
  for (let i = 0; i < 5; i++) {
    await extractZip(join(parent, 'good.zip'), join(parent, `d${i}`), LIMITS)
    await extractZip(join(parent, 'bad.zip'), join(parent, `e${i}`), LIMITS).catch(() => undefined)
  }
  t.equal(await fds(), before)
})

t.test('a failure while moving into place is rolled back', async t => {
  const { parent, dest } = await populatedDest(t)
  await mkdir(join(dest, 'zz'))
  // an immutable directory makes the rename into it fail even for root, after earlier moves succeeded
  try {
    execFileSync('chattr', ['+i', join(dest, 'zz')], { stdio: 'ignore' })
  } catch {
    t.skip('chattr +i not available', () => {})
    return
  }
  t.teardown(() => {
    try {
      execFileSync('chattr', ['-i', join(dest, 'zz')], { stdio: 'ignore' })
    } catch {
      /* already gone */
    }
  })
  await writeFile(
    join(parent, 'in.zip'),
    rawZip([
      { name: 'existing.txt', data: 'replaced?' },
      { name: 'new-top.txt', data: 'new' },
      { name: 'sub/a.txt', data: 'new a' },
      { name: 'sub/b/c.txt', data: 'new c' },
      { name: 'zz/blocked.txt', data: 'x' },
    ]),
  )
  const before = await snapshot(parent)
  const err = (await extractZip(join(parent, 'in.zip'), dest, LIMITS).catch((e: unknown) => e)) as NodeJS.ErrnoException
  t.equal(err.code, 'EPERM', 'the move failed')
  t.same(await snapshot(parent), before, 'every earlier move undone, staging removed')
})

t.test('staging left by a crash is found through its marker and swept', async t => {
  const parent = await tempDir(t, 'bt-uploads-')
  const spool = join(parent, 'spool')
  await writeFile(join(parent, 'a.zip'), rawZip([{ name: 'x.txt', data: 'x' }]))
  await extractZip(join(parent, 'a.zip'), join(parent, 'dest'), LIMITS, {
    markerDir: await mkdir(spool, { recursive: true }).then(() => spool),
  })
  t.same(await readdir(spool), [], 'marker removed after a normal run')
  // what a crash mid-extraction leaves: a staging dir and its marker; plus a forged marker
  await mkdir(join(parent, 'dest', '.upload-staging-0123456789ab', 'tree'), { recursive: true })
  await writeFile(
    join(spool, '.staging-.upload-staging-0123456789ab'),
    join(parent, 'dest', '.upload-staging-0123456789ab'),
  )
  await writeFile(join(spool, '.staging-forged'), join(parent, 'dest'))
  await writeFile(join(spool, '.spool-abc'), 'partial upload')
  await writeFile(join(spool, 'unrelated'), 'kept')
  t.equal(await sweepSpool(spool), 3)
  t.same(await readdir(spool), ['unrelated'])
  t.same(
    await readdir(join(parent, 'dest')),
    ['x.txt'],
    'staging removed, the forged marker did not remove the destination',
  )
})

t.test('relative dest path is a programming error surfaced as 400', async t => {
  const parent = await tempDir(t, 'bt-uploads-')
  await writeFile(join(parent, 'a.zip'), rawZip([{ name: 'a', data: 'x' }]))
  const err = (await extractZip(join(parent, 'a.zip'), 'relative/dir', LIMITS).catch((e: unknown) => e)) as UploadError
  t.equal(err.status, 400)
  t.equal(err.code, 'bad_request')
})
