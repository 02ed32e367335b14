// Child of test/bundle-memory.test.ts (run with --expose-gc): writes a session of about MIB MiB into
// a fresh log, then builds its bundle into a sink that discards it, sampling the live heap (after a
// full GC) while the build runs. Prints one JSON line.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { buildBundle } from '../../src/bundle/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../../src/events/index.js'
import { Pipeline } from '../../src/pipeline/pipeline.js'
import { Redactor } from '../../src/events/redact.js'
import { EventLog } from '../../src/store/event-log.js'
import { sessionStep } from './session-mix.js'

const gc = (globalThis as { gc?: () => void }).gc!
const mib = Number(process.argv[2])
const dir = await mkdtemp(join(tmpdir(), 'bt-bundle-mem-'))
try {
  const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0, maxBytes: 4 * 1024 ** 3 })
  const pipe = new Pipeline({ log, categories: CONFIGURABLE_CATEGORIES, clock: () => Date.now() * 1000 })
  let written = 0
  for (let n = 0; written < mib * 1024 * 1024; n++) {
    let last: Promise<boolean> = Promise.resolve(true)
    for (const e of sessionStep(n, { bodyChars: 30_000, randomBodies: true })) {
      const r = pipe.emit(e)
      if (r.dropped === undefined) {
        last = r.committed
        written += JSON.stringify(r.envelope).length
      }
    }
    if (n % 50 === 49) await last
  }
  await log.flush()
  gc()
  const live = () => {
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const base = live()
  let peak = base
  let zipBytes = 0
  const build = buildBundle(
    { browserId: 'mem', daemonVersion: '0', log, categories: () => [], redaction: new Redactor().policy() },
    { sinceUs: 0 },
  )
  const timeline: string[] = []
  const sample = setInterval(() => {
    gc()
    peak = Math.max(peak, live())
    if (process.env.BT_MEM_TRACE) timeline.push(`${build.stats.pagesRead}:${((live() - base) / 1048576).toFixed(1)}`)
  }, 50)
  await pipeline(
    build.output,
    new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _e, cb) {
        zipBytes += chunk.length
        cb()
      },
    }),
  )
  const manifest = await build.done
  clearInterval(sample)
  gc()
  peak = Math.max(peak, live())
  if (process.env.BT_MEM_TRACE) process.stderr.write(timeline.join(' ') + '\n')
  process.stdout.write(
    JSON.stringify({ logBytes: written, zipBytes, events: manifest.seq.events, growth: peak - base, base, peak }) +
      '\n',
  )
  await log.close()
} finally {
  await rm(dir, { recursive: true, force: true })
}
