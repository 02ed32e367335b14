// Debug bundle of a 30-minute session: its size and build time. The session is synthesized into a
// temp data dir on a simulated clock (test/helpers/session-mix.ts: navigations with their requests
// and bodies, console lines, clicks, WebSockets, agent commands, a screenshot every 5 s) plus the
// screen recording's frames (real JPEGs from ffmpeg's test pattern) in a frame store. Baseline, same
// run: reading the same window out of the log as NDJSON (what `read` does, without HTTP). Prints the
// bundle's size against the envelopes' and the frames' bytes, and its build time (without the video)
// vs the baseline (medians of RUNS, interleaved); then one build with recording.webm (ffmpeg; VIDEO=0: not).
//   npx tsx bench/bundle.ts     (MINUTES=30 STEPS_PER_S=5 FPS=1 RUNS=3 VIDEO=1)
import { buildBundle, type BundleSource } from '../src/bundle/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { Redactor } from '../src/events/redact.js'
import { fmt, median, withTempDir } from './common.js'
import { sink, synthSession } from './session.js'

const MINUTES = Number(process.env.MINUTES ?? 30)
const STEPS_PER_S = Number(process.env.STEPS_PER_S ?? 5)
const FPS = Number(process.env.FPS ?? 1)
const RUNS = Number(process.env.RUNS ?? 3)
const VIDEO = process.env.VIDEO !== '0'
const MiB = 1024 * 1024

await withTempDir(async dir => {
  const { log, frames, t0, now } = await synthSession(
    dir,
    { minutes: MINUTES, stepsPerS: STEPS_PER_S, fps: FPS },
    'bundle bench',
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
