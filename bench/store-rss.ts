// Benchmark 4: RSS of a process running the daemon's ingest core after 1M events (goal <= 120 MB).
// Baseline in the same run: the same child doing nothing but opening the log (N=0).
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { median, withTempDir, fmt } from './common.js'

const N = Number(process.env.N ?? 1_000_000)
const RUNS = Number(process.env.RUNS ?? 3)
execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' })
const child = join(import.meta.dirname, 'store-rss-child.mjs')
// The daemon's runtime settings (scripts/start.sh, systemd unit): small young generation, few malloc arenas.
const run = (dir: string, n: number) =>
  JSON.parse(
    execFileSync(process.execPath, ['--max-semi-space-size=2', child, dir, String(n)], {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
      env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    }),
  )
const peaks: number[] = []
const baselines: number[] = []
for (let i = 0; i < RUNS; i++) {
  await withTempDir(async dir => {
    const idle = run(join(dir, 'idle'), 0)
    const r = run(join(dir, 'full'), N)
    baselines.push(idle.afterMb)
    peaks.push(r.peakMb)
    console.log(
      `run ${i + 1}: idle ${fmt(idle.afterMb, 1)} MB, after ${N} events peak ${fmt(r.peakMb, 1)} MB (last seq ${r.lastSeq})`,
    )
  })
}
console.log(
  `store-rss: median peak RSS ${fmt(median(peaks), 1)} MB after ${N} events (goal <= 120 MB), idle process ${fmt(median(baselines), 1)} MB, ratio ` +
    `${fmt(median(peaks) / median(baselines))}`,
)
