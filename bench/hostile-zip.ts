// Benchmark: extractZip against pathological archives. For each case: median time
// of RUNS, peak RSS growth (sampled every 5 ms), and the outcome (extracted / refused with code).
// Linearity: the scaled cases run at N and 2N and print time(2N)/time(N) (about 2 when linear; the
// old pairwise path checks were quadratic: 4 and up). Baseline for the 100k-entry extraction:
// Debian `unzip -q` on the same archive, same run.
// Run: npx tsx bench/hostile-zip.ts [--runs N]
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { extractZip } from '../src/uploads/extract-zip.js'
import { UploadError } from '../src/uploads/errors.js'
import { DEFAULT_ZIP_LIMITS } from '../src/uploads/zip-entries.js'
import { rawZip, type RawEntry } from '../test/helpers/zip.js'

const args = process.argv.slice(2)
const RUNS = (() => {
  const i = args.indexOf('--runs')
  return i >= 0 ? Number(args[i + 1]) : 3
})()
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const chain = (depth: number, c = 'd') => Array.from({ length: depth }, () => c).join('/')

interface Case {
  name: string
  build: () => RawEntry[]
}

const cases: Case[] = [
  { name: 'deep name (3,000 components)', build: () => [{ name: `${chain(3000)}/x`, data: 'x' }] },
  {
    name: 'deep name (64 comps, 500 B empty runs between)',
    build: () => [{ name: `a${'/'.repeat(500)}${chain(64)}`, data: 'x' }],
  },
  { name: 'long name (5,000 bytes)', build: () => [{ name: 'n'.repeat(5000), data: 'x' }] },
  {
    name: '16k entries, 4 KiB 63-deep names (paths)',
    build: () =>
      Array.from({ length: 16_000 }, (_, i) => ({
        name: `${i}/${chain(62, 'p'.repeat(60)).slice(0, 3900)}`,
        method: 0,
      })),
  },
  {
    name: '100,001 entries (over the count)',
    build: () => Array.from({ length: 100_001 }, (_, i) => ({ name: `d${i % 100}/f${i}`, method: 0 })),
  },
  {
    name: 'small-entry bomb (20k x 60 KiB zeros)',
    build: () => Array.from({ length: 20_000 }, (_, i) => ({ name: `z/${i}`, data: Buffer.alloc(60 * 1024) })),
  },
  {
    name: 'small-entry bomb, bad entry last (50k)',
    build: () => [
      ...Array.from({ length: 49_999 }, (_, i) => ({ name: `ok/${i}`, method: 0 })),
      { name: 'z', data: Buffer.alloc(1 << 20) },
    ],
  },
  {
    name: '100,000 paths: 99,900 empty files + 100 dirs',
    build: () => Array.from({ length: 99_900 }, (_, i) => ({ name: `d${i % 100}/f${i}`, method: 0 })),
  },
  {
    name: 'overlapping-data bomb (20 x 1 MiB declared)',
    build: () =>
      Array.from({ length: 20 }, (_, i) => ({ name: `o/${i}`, data: Buffer.alloc(1 << 20), compressedSize: 1 << 20 })),
  },
]
const scaled: { name: string; build: (n: number) => RawEntry[]; n: number }[] = [
  // 2N = 49,900 files + 100 directories; the full 100,000 is its own case below
  {
    name: 'empty files in 100 dirs (extracted)',
    n: 24_950,
    build: n => Array.from({ length: n }, (_, i) => ({ name: `d${i % 100}/f${i}`, method: 0 })),
  },
  {
    name: '63-deep unique chains (refused: paths)',
    n: 800,
    build: n => Array.from({ length: n }, (_, i) => ({ name: `${i}/${chain(62)}`, method: 0 })),
  },
]

async function measure(archive: Buffer, dir: string): Promise<{ ms: number; rssMiB: number; outcome: string }> {
  const zip = join(dir, 'in.zip')
  await writeFile(zip, archive)
  const times: number[] = []
  let rssPeak = 0
  let outcome = ''
  for (let r = 0; r < RUNS; r++) {
    const dest = join(dir, `out${r}`)
    global.gc?.()
    const base = process.memoryUsage().rss
    let peak = base
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 5)
    const t0 = performance.now()
    try {
      const res = await extractZip(zip, dest, DEFAULT_ZIP_LIMITS)
      outcome = `extracted ${res.files} files, ${res.dirs} dirs`
    } catch (err) {
      outcome = err instanceof UploadError ? `refused ${err.status} ${err.code}` : `ERROR ${(err as Error).message}`
    }
    times.push(performance.now() - t0)
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage().rss)
    rssPeak = Math.max(rssPeak, peak - base)
  }
  return { ms: median(times), rssMiB: rssPeak / 1024 / 1024, outcome }
}

const dir = await mkdtemp(join(tmpdir(), 'bt-hostile-bench-'))
const row = (name: string, size: number, m: { ms: number; rssMiB: number; outcome: string }, extra = '') =>
  console.log(
    `${name.padEnd(48)} ${(size / 1024 / 1024).toFixed(1).padStart(6)} MiB  ${m.ms.toFixed(0).padStart(6)} ms  RSS +${m.rssMiB.toFixed(1).padStart(5)} ` +
      `MiB  ${m.outcome}${extra}`,
  )
try {
  console.log(`hostile-zip: median of ${RUNS} runs each (archive size, time, peak RSS growth, outcome)`)
  for (const c of cases) {
    const archive = rawZip(c.build())
    row(c.name, archive.length, await measure(archive, dir))
  }
  for (const s of scaled) {
    const small = rawZip(s.build(s.n))
    const big = rawZip(s.build(2 * s.n))
    const a = await measure(small, dir)
    const b = await measure(big, dir)
    row(`${s.name}, N=${s.n}`, small.length, a)
    row(`${s.name}, 2N`, big.length, b, `  time(2N)/time(N) = ${(b.ms / a.ms).toFixed(2)}`)
    if (s.name.includes('extracted')) {
      const zip = join(dir, 'base.zip')
      await writeFile(zip, big)
      const ut: number[] = []
      for (let r = 0; r < RUNS; r++) {
        const t0 = performance.now()
        spawnSync('unzip', ['-q', '-o', zip, '-d', join(dir, `unzip${r}`)])
        ut.push(performance.now() - t0)
      }
      console.log(
        `${'  baseline: unzip -q, same 2N archive'.padEnd(48)} ${median(ut).toFixed(0).padStart(15)} ms  extractZip/unzip = ${(b.ms / median(ut)).toFixed(2)}`,
      )
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true })
}
