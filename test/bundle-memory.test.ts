// The bundle is streamed: the live heap while a bundle is built does not grow with the log. A child
// process (--expose-gc, so the heap is measured after full collections) builds the bundle of a small
// and of an eight times larger log; both stay under one bound, and the larger barely costs more.
import t from 'tap'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const MiB = 1024 * 1024

async function measure(mib: number) {
  const { stdout } = await run(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', join(import.meta.dirname, 'helpers', 'bundle-memory-child.ts'), String(mib)],
    { cwd: join(import.meta.dirname, '..'), maxBuffer: 1024 * 1024 },
  )
  return JSON.parse(stdout) as { logBytes: number; zipBytes: number; events: number; growth: number }
}

t.test('live heap while bundling does not follow the log size', async t => {
  t.setTimeout(300_000)
  const small = await measure(8)
  const large = await measure(64)
  t.ok(large.logBytes >= 64 * MiB && large.zipBytes > 48 * MiB, `large: ${JSON.stringify(large)}`)
  t.ok(small.logBytes >= 8 * MiB, `small: ${JSON.stringify(small)}`)
  // Bound: a read page (1 MiB) and its parsed copies, the stream buffers, the HAR's open exchanges.
  t.ok(
    large.growth < 16 * MiB,
    `live heap grew ${(large.growth / MiB).toFixed(1)} MiB for a ${(large.logBytes / MiB).toFixed(0)} MiB log (bound 16 MiB)`,
  )
  t.ok(
    large.growth - small.growth < 6 * MiB,
    `8x the log costs ${((large.growth - small.growth) / MiB).toFixed(1)} MiB more (bound 6 MiB)`,
  )
})
