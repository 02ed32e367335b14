// Child of trace-export.ts: one export of a synthesized session in a process of its own, from the
// compiled code the daemon runs (npm run build), so its RSS is the export's. Opens the data dir,
// builds the bundle (without the video) or the Playwright trace of the window, writes it to a file or
// discards it, and prints {ms, peakMb, startMb, heapMb, externalMb, bytes} as JSON (peaks sampled
// every 20 ms; startMb: the process before the export began).
//   node bench/trace-export-child.mjs <dir> bundle|trace <since µs> <until µs> [out.zip]
import { createWriteStream } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { buildBundle } from '../dist/src/bundle/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../dist/src/events/index.js'
import { Redactor } from '../dist/src/events/redact.js'
import { FrameStore } from '../dist/src/recording/frame-store.js'
import { EventLog } from '../dist/src/store/event-log.js'
import { buildTrace } from '../dist/src/trace/index.js'

const MiB = 1024 * 1024
const [dir, kind, since, until, out] = process.argv.slice(2)
const log = await EventLog.open({
  path: join(dir, 'log'),
  retentionIntervalMs: 0,
  maxBytes: 16 * 1024 * MiB,
  maxAgeMs: 1e15,
})
const frames = await FrameStore.open({ dir: join(dir, 'recording'), maxBytes: 4 * 1024 * MiB, maxPendingFrames: 64 })
const window = { sinceUs: Number(since), untilUs: Number(until) }
const startMb = process.memoryUsage.rss() / MiB
let peak = 0
let peakHeap = 0
let peakExternal = 0
const sample = () => {
  const m = process.memoryUsage()
  peak = Math.max(peak, m.rss)
  peakHeap = Math.max(peakHeap, m.heapUsed)
  peakExternal = Math.max(peakExternal, m.external + m.arrayBuffers)
}
const sampler = setInterval(sample, 20)
const start = performance.now()
const build =
  kind === 'trace'
    ? buildTrace({ browserId: 'bench', log, frames }, window)
    : buildBundle(
        {
          browserId: 'bench',
          daemonVersion: 'bench',
          log,
          frames,
          ffmpeg: null,
          categories: () => CONFIGURABLE_CATEGORIES,
          redaction: new Redactor().policy(),
        },
        window,
      )
await pipeline(
  build.output,
  out
    ? createWriteStream(out)
    : new Writable({
        write(_c, _e, cb) {
          cb()
        },
      }),
)
await build.done
const ms = performance.now() - start
clearInterval(sampler)
sample()
await frames.close()
await log.close()
process.stdout.write(
  JSON.stringify({
    ms,
    peakMb: peak / MiB,
    startMb,
    heapMb: peakHeap / MiB,
    externalMb: peakExternal / MiB,
    bytes: build.stats.bytesOut,
  }) + '\n',
)
