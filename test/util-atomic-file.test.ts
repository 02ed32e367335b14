// writeFileAtomic: whole file or nothing, even when the disk fills mid-write (ENOSPC injected).
import t from 'tap'
import { link, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic, type AtomicFileFs } from '../src/util/atomic-file.js'
import { tempDir } from './helpers/store.js'

const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })

/** Real fs, except that writing or syncing the temp file fails with ENOSPC. */
function fullDiskFs(failAt: 'write' | 'sync'): AtomicFileFs {
  return {
    rename,
    link,
    unlink,
    open: (async (path: string, flags?: string, mode?: number) => {
      const fh = await open(path, flags, mode)
      if (flags === 'wx') {
        if (failAt === 'write')
          fh.writeFile = async () => {
            await fh.write('par')
            throw enospc()
          } // a partial write, then full
        else
          fh.sync = async () => {
            throw enospc()
          }
      }
      return fh
    }) as AtomicFileFs['open'],
  }
}

t.test('ENOSPC while writing: the target is never created or emptied, no temp file stays', async t => {
  const dir = await tempDir(t)
  for (const failAt of ['write', 'sync'] as const) {
    const target = join(dir, `token-${failAt}`)
    await t.rejects(writeFileAtomic(target, 'secret-value\n', { fs: fullDiskFs(failAt), exclusive: true }), {
      code: 'ENOSPC',
    })
    await t.rejects(stat(target), { code: 'ENOENT' }, `${failAt}: no (empty) token file`)
  }
  const existing = join(dir, 'browser-id')
  await writeFile(existing, 'old-id\n')
  await t.rejects(writeFileAtomic(existing, 'new-id\n', { fs: fullDiskFs('write') }), { code: 'ENOSPC' })
  t.equal(
    await readFile(existing, 'utf8'),
    'old-id\n',
    'a replaced file keeps its old content when the new one cannot be written',
  )
  t.same((await readdir(dir)).sort(), ['browser-id'], 'no temp files left behind')
})

t.test('writes whole files with mode 0600; exclusive never replaces', async t => {
  const dir = await tempDir(t)
  const p = join(dir, 'token')
  await writeFileAtomic(p, 'one\n', { exclusive: true })
  t.equal(await readFile(p, 'utf8'), 'one\n')
  t.equal((await stat(p)).mode & 0o777, 0o600)
  await t.rejects(writeFileAtomic(p, 'two\n', { exclusive: true }), { code: 'EEXIST' })
  t.equal(await readFile(p, 'utf8'), 'one\n')
  await writeFileAtomic(p, 'three\n')
  t.equal(await readFile(p, 'utf8'), 'three\n')
  t.same(await readdir(dir), ['token'])
})
