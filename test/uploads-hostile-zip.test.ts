// Pathological archives: deep names, long names, 100k entries, small-entry and
// overlapping bombs, modes, free space (statfs, 507) and ENOSPC mid-extraction (507, destination
// untouched) with injected faults and, when root may mount, on a real tiny tmpfs. Timing is not
// asserted here: bench/hostile-zip.ts prints time and RSS for each case and its scaling.
import t, { type Test } from 'tap'
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import * as fsp from 'node:fs/promises'
import { lstat, mkdir, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { extractZip } from '../src/uploads/extract-zip.js'
import { UploadError } from '../src/uploads/errors.js'
import { DEFAULT_ZIP_LIMITS, type ZipLimits } from '../src/uploads/zip-entries.js'
import { tempDir } from './helpers/store.js'
import { snapshot } from './helpers/tree.js'
import { rawZip, type RawEntry } from './helpers/zip.js'

const LIMITS: ZipLimits = { maxEntries: 1000, maxTotalBytes: 64 * 1024 * 1024, maxRatio: 200 }

/** A destination with content, inside a parent that must also stay clean. */
async function populated(tt: Test) {
  const parent = await tempDir(tt, 'bt-hostile-')
  const dest = join(parent, 'dest')
  await mkdir(join(dest, 'sub'), { recursive: true })
  await writeFile(join(dest, 'keep.txt'), 'keep me')
  await writeFile(join(dest, 'sub', 'a.txt'), 'old a')
  return { parent, dest }
}

async function refused(
  tt: Test,
  archive: Buffer,
  status: number,
  code: string,
  detail: RegExp,
  opts: { limits?: ZipLimits; extract?: typeof extractZip } = {},
) {
  const { parent, dest } = await populated(tt)
  await writeFile(join(parent, 'in.zip'), archive)
  const before = await snapshot(parent)
  const err = (await (opts.extract ?? extractZip)(join(parent, 'in.zip'), dest, opts.limits ?? LIMITS).then(
    () => undefined,
    (e: unknown) => e,
  )) as UploadError
  tt.ok(err instanceof UploadError, `refused: ${(err as Error)?.message?.slice(0, 200)}`)
  tt.equal(err.status, status)
  tt.equal(err.code, code)
  tt.match(err.details[0]?.message ?? err.message, detail)
  tt.ok((err.details[0]?.message ?? '').length < 1024, 'the error stays small whatever the name')
  tt.same(await snapshot(parent), before, 'nothing written')
}

async function extracted(tt: Test, archive: Buffer, limits = LIMITS) {
  const parent = await tempDir(tt, 'bt-hostile-')
  await writeFile(join(parent, 'in.zip'), archive)
  return { dest: join(parent, 'out'), result: await extractZip(join(parent, 'in.zip'), join(parent, 'out'), limits) }
}

const chain = (depth: number, component = 'd') => Array.from({ length: depth }, () => component).join('/')

t.test('deep names: 64 components extracted, 65 and 3,000 refused with 400', async t => {
  const { dest } = await extracted(t, rawZip([{ name: `${chain(63)}/leaf.txt`, data: 'deep' }]))
  t.equal(await fsp.readFile(join(dest, chain(63), 'leaf.txt'), 'utf8'), 'deep')
  await refused(
    t,
    rawZip([{ name: `${chain(64)}/leaf.txt`, data: 'x' }]),
    400,
    'unsafe_entry',
    /more than 64 path components/,
  )
  // 3,000 deep is 6,000 bytes: whichever cap is hit first, a 400 at once
  await refused(
    t,
    rawZip([{ name: `${chain(3000)}/leaf.txt`, data: 'x' }]),
    400,
    'unsafe_entry',
    /more than 64 path components|longer than 4096 bytes/,
  )
  // empty and "." components do not count, and do not hide real ones
  await refused(
    t,
    rawZip([{ name: `a${'/'.repeat(500)}${'./'.repeat(500)}${chain(64)}`, data: 'x' }]),
    400,
    'unsafe_entry',
    /more than 64 path components/,
  )
})

t.test(
  'long names: 3,800 bytes extracted; 4,097 and 5,000 bytes, or a 256-byte component, refused with 400',
  async t => {
    const name = (bytes: number) => {
      const parts: string[] = []
      let n = 0
      while (n < bytes) {
        const c = Math.min(200, bytes - n - (parts.length ? 1 : 0))
        parts.push('n'.repeat(c))
        n += c + (parts.length > 1 ? 1 : 0)
      }
      return parts.join('/')
    }
    t.equal(Buffer.byteLength(name(3800)), 3800)
    const { dest } = await extracted(t, rawZip([{ name: name(3800), data: 'long' }]))
    t.equal(await fsp.readFile(join(dest, name(3800)), 'utf8'), 'long')
    await refused(t, rawZip([{ name: name(4097), data: 'x' }]), 400, 'unsafe_entry', /longer than 4096 bytes/)
    await refused(t, rawZip([{ name: 'x'.repeat(5000), data: 'x' }]), 400, 'unsafe_entry', /longer than 4096 bytes/)
    await refused(
      t,
      rawZip([{ name: `ok/${'c'.repeat(256)}`, data: 'x' }]),
      400,
      'unsafe_entry',
      /component longer than 255 bytes/,
    )
    // a name that fits the caps but not the destination's PATH_MAX is a 400 too, never a 500
    await refused(t, rawZip([{ name: name(4090), data: 'x' }]), 400, 'unsafe_entry', /too long at this destination/)
  },
)

// Extracting all 100,000 entries is measured in bench/hostile-zip.ts (it is file creation, tens of
// seconds on a loaded CI machine); here 10,000 are extracted and 100,001 refused from the count alone.
t.test(
  '10,000 entries extracted; 100,001, or implied directories past the 100,000 limit, refused with 400',
  async t => {
    const many = (n: number, dirs: number): RawEntry[] =>
      Array.from({ length: n }, (_, i) => ({ name: `d${i % dirs}/f${i}`, method: 0 }))
    const { dest, result } = await extracted(
      t,
      rawZip([...many(9_900, 100), ...Array.from({ length: 100 }, (_, i) => ({ name: `d${i}/`, method: 0 }))]),
      DEFAULT_ZIP_LIMITS,
    )
    t.equal(result.files, 9_900)
    t.equal(result.dirs, 100)
    t.equal((await readdir(join(dest, 'd7'))).length, 99)
    await refused(t, rawZip(many(100_001, 100)), 400, 'invalid_zip', /100001 entries; the limit is 100000/, {
      limits: DEFAULT_ZIP_LIMITS,
    })
    // 99,990 files in 20 directories the archive does not list: 100,010 paths
    await refused(t, rawZip(many(99_990, 20)), 400, 'invalid_zip', /more than 100000 paths/, {
      limits: DEFAULT_ZIP_LIMITS,
    })
  },
)

t.test('bombs: many small entries each over the ratio; entries that declare overlapping data', async t => {
  // 2,000 entries of 60 KiB zeros: each about 1000:1 although under 64 KiB
  const small = Array.from({ length: 2000 }, (_, i) => ({ name: `z/${i}`, data: Buffer.alloc(60 * 1024) }))
  await refused(
    t,
    rawZip(small),
    400,
    'unsafe_entry',
    /entry "z\/0": compression ratio \d+:1 exceeds the limit of 200:1/,
    { limits: { ...LIMITS, maxEntries: 5000 } },
  )
  // 1 KiB entries of zeros compress about 100:1: fine one by one, and for the archive
  const { result } = await extracted(
    t,
    rawZip(Array.from({ length: 50 }, (_, i) => ({ name: `k/${i}`, data: Buffer.alloc(1024) }))),
  )
  t.equal(result.bytes, 50 * 1024)
  // each entry claims 1 MiB of compressed data (like overlapping entries sharing one stream): per-entry
  // ratios look harmless, but the archive is a few KiB for 20 MiB of output
  const overlapping = Array.from({ length: 20 }, (_, i) => ({
    name: `o/${i}`,
    data: Buffer.alloc(1024 * 1024),
    compressedSize: 1024 * 1024,
  }))
  await refused(t, rawZip(overlapping), 400, 'invalid_zip', /total compression ratio \d+:1 exceeds the limit of 200:1/)
})

t.test('modes: files & 0755, directories 0755 whatever the archive says', async t => {
  const { dest } = await extracted(
    t,
    rawZip([
      { name: 'open/', unixMode: 0o40777 },
      { name: 'open/world.txt', data: 'w', unixMode: 0o100777 },
      { name: 'open/rw.txt', data: 'w', unixMode: 0o100666 },
      { name: 'implied/deeper/file.txt', data: 'i', unixMode: 0o100646 },
      { name: 'private.txt', data: 'p', unixMode: 0o100600 },
    ]),
  )
  const mode = async (p: string) => ((await lstat(join(dest, p))).mode & 0o7777).toString(8)
  t.same(
    await Promise.all(
      [
        'open',
        'open/world.txt',
        'open/rw.txt',
        'implied',
        'implied/deeper',
        'implied/deeper/file.txt',
        'private.txt',
      ].map(mode),
    ),
    ['755', '755', '644', '755', '755', '644', '600'],
  )
})

const enospc = () =>
  Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' })

/**
 * extractZip with Node's fs replaced in every module of the extraction that touches the disk (each
 * is mocked by itself: the mocks of one import do not reach the modules it loads).
 */
async function extractWithMocks(t: Test, fsMocks: Record<string, unknown>): Promise<typeof extractZip> {
  // The error classes stay the test's own (a freshly loaded copy would fail instanceof). Keys name
  // our modules as the TypeScript loader resolves them (.ts).
  const mocks = { ...fsMocks, '../src/uploads/errors.ts': await import('../src/uploads/errors.js') }
  const checks = await t.mockImport('../src/uploads/destination-checks.js', mocks)
  const data = await t.mockImport('../src/uploads/entry-data.js', mocks)
  const mod = await t.mockImport<typeof import('../src/uploads/extract-zip.js')>('../src/uploads/extract-zip.js', {
    ...mocks,
    '../src/uploads/destination-checks.ts': checks,
    '../src/uploads/entry-data.ts': data,
  })
  return mod.extractZip
}

t.test('free space: 507 before anything is written when statfs says it cannot fit', async t => {
  const extract = await extractWithMocks(t, {
    'node:fs/promises': { ...fsp, statfs: async (p: string) => ({ ...(await fsp.statfs(p)), bavail: 10 }) },
  })
  await refused(
    t,
    rawZip([
      { name: 'sub/a.txt', data: 'new a' },
      { name: 'big.bin', data: Buffer.alloc(200 * 1024, 1), method: 0 },
    ]),
    507,
    'insufficient_storage',
    /needs \d+ bytes; the destination filesystem has 40960 free/,
    { extract },
  )
})

t.test('ENOSPC mid-extraction (injected): 507, the destination untouched', async t => {
  let writes = 0
  const extract = await extractWithMocks(t, {
    'node:fs': {
      ...fs,
      writeSync: (...args: Parameters<typeof fs.writeSync>) => {
        if (++writes > 3) throw enospc()
        return (fs.writeSync as (...a: unknown[]) => number)(...args)
      },
    },
  })
  const entries = Array.from({ length: 10 }, (_, i) => ({
    name: i % 2 ? `sub/n${i}.txt` : `top${i}.txt`,
    data: `content ${i}`,
  }))
  await refused(
    t,
    rawZip([{ name: 'sub/a.txt', data: 'new a' }, ...entries]),
    507,
    'insufficient_storage',
    /disk filled up/,
    { extract },
  )
  t.ok(writes > 3, 'the fault was hit')
})

t.test('a real full filesystem (tmpfs, 256 KiB): 507 from statfs, and from ENOSPC with statfs fooled', async t => {
  if (process.getuid?.() !== 0) {
    t.skip('needs root to mount a tmpfs', () => {})
    return
  }
  const outside = await tempDir(t, 'bt-tmpfs-archive-')
  const mnt = await tempDir(t, 'bt-tmpfs-')
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'tmpfs', mnt], { stdio: 'pipe' })
  } catch (err) {
    t.skip(`cannot mount a tmpfs here: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`, () => {})
    return
  }
  t.teardown(() => {
    execFileSync('umount', [mnt])
  })
  const dest = join(mnt, 'dest')
  await mkdir(join(dest, 'sub'), { recursive: true })
  await writeFile(join(dest, 'sub', 'a.txt'), 'old a')
  const archive = join(outside, 'in.zip')
  await writeFile(
    archive,
    rawZip([
      { name: 'sub/a.txt', data: 'new a' },
      ...Array.from({ length: 8 }, (_, i) => ({ name: `f${i}.bin`, data: Buffer.alloc(64 * 1024, i), method: 0 })),
    ]),
  )
  const before = await snapshot(mnt)
  // honest statfs: refused before writing
  const first = (await extractZip(archive, dest, LIMITS).catch((e: unknown) => e)) as UploadError
  t.equal(first.status, 507)
  t.match(first.message, /needs \d+ bytes/)
  t.same(await snapshot(mnt), before, 'nothing written')
  // statfs fooled into reporting room: the kernel's ENOSPC mid-extraction is a 507 too, and nothing changed
  const extract = await extractWithMocks(t, {
    'node:fs/promises': { ...fsp, statfs: async (p: string) => ({ ...(await fsp.statfs(p)), bavail: 1 << 30 }) },
  })
  const second = (await extract(archive, dest, LIMITS).catch((e: unknown) => e)) as UploadError
  t.equal(second.status, 507)
  t.equal(second.code, 'insufficient_storage')
  t.match(second.message, /disk filled up/)
  t.same(await snapshot(mnt), before, 'destination untouched, staging removed')
})
