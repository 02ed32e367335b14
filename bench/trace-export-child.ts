// One export of a synthesized session in a process of its own, so its RSS is the export's: opens the
// data dir, builds the bundle (without the video) or the Playwright trace of the window, writes it to
// a file (or discards it), and prints {ms, peakMb, bytes} as JSON. Used by bench/trace-export.ts.
//   node --import tsx bench/trace-export-child.ts <dir> bundle|trace <since µs> <until µs> [out.zip]
import { createWriteStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { buildBundle } from '../src/bundle/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { Redactor } from '../src/events/redact.js'
import { buildTrace } from '../src/trace/index.js'
import { openSession, sink } from './session.js'

const [dir, kind, since, until, out] = process.argv.slice(2)
const { log, frames } = await openSession(dir!)
const window = { sinceUs: Number(since), untilUs: Number(until) }
let peak = process.memoryUsage.rss()
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20)
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
let bytes = 0
if (out) {
  await pipeline(build.output, createWriteStream(out))
  bytes = build.stats.bytesOut
} else bytes = await sink(build.output)
await build.done
const ms = performance.now() - start
clearInterval(sampler)
peak = Math.max(peak, process.memoryUsage.rss())
await frames.close()
await log.close()
process.stdout.write(JSON.stringify({ ms, peakMb: peak / 1024 / 1024, bytes }) + '\n')
