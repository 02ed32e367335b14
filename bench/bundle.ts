// Debug bundle of a 30-minute session: its size and build time. The session is synthesized into a
// temp data dir on a simulated clock (test/helpers/session-mix.ts: navigations with their requests
// and bodies, console lines, clicks, WebSockets, agent commands, a screenshot every 5 s) plus the
// screen recording's frames (real JPEGs from ffmpeg's test pattern) in a frame store. Baseline, same
// run: reading the same window out of the log as NDJSON (what `read` does, without HTTP). Prints the
// bundle's size against the envelopes' and the frames' bytes, and its build time (without the video)
// vs the baseline (medians of RUNS, interleaved); then one build with recording.webm (ffmpeg; VIDEO=0: not).
//   npx tsx bench/bundle.ts     (MINUTES=30 STEPS_PER_S=5 FPS=1 RUNS=3 VIDEO=1)
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { buildBundle, type BundleSource } from '../src/bundle/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { Redactor } from '../src/events/redact.js'
import { EventLog } from '../src/store/event-log.js'
import { FrameStore } from '../src/recording/frame-store.js'
import { sessionStep } from '../test/helpers/session-mix.js'
import { fmt, median, withTempDir } from './common.js'

const MINUTES = Number(process.env.MINUTES ?? 30)
const STEPS_PER_S = Number(process.env.STEPS_PER_S ?? 5)
const FPS = Number(process.env.FPS ?? 1)
const RUNS = Number(process.env.RUNS ?? 3)
const VIDEO = process.env.VIDEO !== '0'
const MiB = 1024 * 1024

/** 30 distinct 1280x720 JPEGs of ffmpeg's moving test pattern (a recording's frames cycle through them). */
function testJpegs(): Buffer[] {
  const all = execFileSync(
    'ffmpeg',
    [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=s=1280x720:r=30',
      '-frames:v',
      '30',
      '-q:v',
      '8',
      '-f',
      'mjpeg',
      'pipe:1',
    ],
    { maxBuffer: 64 * MiB },
  )
  const out: Buffer[] = []
  for (let i = 0; i < all.length;) {
    const end = all.indexOf(Buffer.from([0xff, 0xd9]), i)
    if (end < 0) break
    out.push(all.subarray(i, end + 2))
    i = end + 2
  }
  return out
}

/** A screenshot-sized PNG stand-in (the PNG signature, then incompressible bytes), base64. */
function pngLike(bytes: number): string {
  const b = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) b[i] = (i * 2654435761) >>> 24
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b)
  return b.toString('base64')
}

async function sink(readable: NodeJS.ReadableStream): Promise<number> {
  let n = 0
  await pipeline(
    readable,
    new Writable({
      write(c: Buffer, _e, cb) {
        n += c.length
        cb()
      },
    }),
  )
  return n
}

await withTempDir(async dir => {
  const t0 = 1_700_000_000_000_000
  let now = t0
  const log = await EventLog.open({
    path: join(dir, 'log'),
    retentionIntervalMs: 0,
    maxBytes: 16 * 1024 * MiB,
    maxAgeMs: 1e15,
  })
  const pipe = new Pipeline({
    log,
    categories: CONFIGURABLE_CATEGORIES,
    clock: () => now,
    sheddingClock: () => now / 1000,
  })
  const frames = await FrameStore.open({ dir: join(dir, 'recording'), maxBytes: 4 * 1024 * MiB, maxPendingFrames: 64 })
  const jpegs = testJpegs()
  const png = pngLike(120 * 1024)
  const steps = MINUTES * 60 * STEPS_PER_S
  const stepUs = 1_000_000 / STEPS_PER_S
  let nextFrameUs = t0
  let frameCount = 0
  const synthStart = performance.now()
  for (let n = 0; n < steps; n++) {
    now = t0 + n * stepUs
    // A screenshot every 5 s of the session (the collector's default interval).
    for (const input of sessionStep(n, { png, screenshotEvery: 5 * STEPS_PER_S })) pipe.emit(input)
    while (FPS > 0 && nextFrameUs <= now) {
      frames.add({
        ts: nextFrameUs,
        target_id: 'PAGE',
        after_seq: log.lastSeq,
        width: 1280,
        height: 720,
        jpeg: jpegs[frameCount++ % jpegs.length]!,
      })
      nextFrameUs += 1_000_000 / FPS
    }
    if (n % 500 === 499) await log.flush()
    // The store keeps at most maxPendingFrames waiting for the disk: let it write, as a real page's pace would.
    if (n % 20 === 19) await frames.flush()
  }
  await log.flush()
  await frames.flush()
  now = t0 + steps * stepUs
  console.log(
    `bundle bench: ${MINUTES} min session, ${log.lastSeq} events, ${frames.stats().frames} frames ` +
      `(${fmt(frames.stats().bytes / MiB, 1)} MiB); synthesized in ${fmt((performance.now() - synthStart) / 1000, 1)} s`,
  )

  const source: BundleSource = {
    browserId: 'bench',
    daemonVersion: 'bench',
    log,
    frames,
    recordingEnabled: () => true,
    ffmpeg: null, // the runs below measure the bundle without recording.webm; the video is timed once after
    categories: () => CONFIGURABLE_CATEGORIES,
    redaction: new Redactor().policy(),
  }
  const window = { sinceUs: t0, untilUs: now + 1 }
  const bundleMs: number[] = []
  const ndjsonMs: number[] = []
  let zipBytes = 0
  let ndjsonBytes = 0
  let manifest: Awaited<ReturnType<typeof buildBundle>['done']> | undefined
  for (let run = 0; run < RUNS; run++) {
    let start = performance.now()
    let cursor: number | undefined
    let ndjson = 0
    for (;;) {
      const page = await log.read({
        order: 'asc',
        limit: 500,
        untilUs: window.untilUs,
        ...(cursor ? { cursor } : { sinceUs: t0 }),
      })
      for (const r of page.records) ndjson += r.json.length + 1
      if (!page.hasMore) break
      cursor = page.nextCursor
    }
    ndjsonMs.push(performance.now() - start)
    start = performance.now()
    const build = buildBundle(source, window, undefined, () => new Date(now / 1000))
    zipBytes = await sink(build.output)
    manifest = await build.done
    bundleMs.push(performance.now() - start)
    ndjsonBytes = ndjson
  }
  const m = manifest!
  console.log(
    `  bundle without video: ${fmt(zipBytes / MiB, 1)} MiB zip for ${fmt(ndjsonBytes / MiB, 1)} MiB of envelopes (${fmt(zipBytes / ndjsonBytes, 2)}x) ` +
      `and ${fmt(frames.stats().bytes / MiB, 1)} MiB of frames; events ${m.files['events.ndjson'].events}, ` +
      `HAR entries ${m.files['network.har'].entries}, console lines ${m.files['console.txt'].lines}, screenshots ${m.files.screenshots.files}, ` +
      `frames ${m.files.frames.files}`,
  )
  const b = median(bundleMs)
  const r = median(ndjsonMs)
  console.log(
    `  build time: bundle ${fmt(b / 1000, 2)} s vs NDJSON read ${fmt(r / 1000, 2)} s (${fmt(b / r, 1)}x), medians of ${RUNS}; ` +
      `${fmt(zipBytes / MiB / (b / 1000), 1)} MiB/s of zip`,
  )
  if (VIDEO) {
    const start = performance.now()
    const build = buildBundle({ ...source, ffmpeg: undefined }, window, undefined, () => new Date(now / 1000))
    const withVideo = await sink(build.output)
    const mv = await build.done
    console.log(
      `  with recording.webm (ffmpeg, once): ${fmt((performance.now() - start) / 1000, 2)} s, ${fmt(withVideo / MiB, 1)} MiB zip; video ` +
        (mv.files['recording.webm']
          ? `${fmt(mv.files['recording.webm'].bytes / MiB, 1)} MiB, ${mv.files['recording.webm'].frames} frames`
          : `none (${mv.recording.video_note})`),
    )
  }
  await frames.close()
  await log.close()
})
