// One idea: a debug bundle, one zip of a time window (events, HAR, console, the agent's actions,
// screenshots, recording frames, source maps, manifest), streamed. Nothing is held whole: every file
// is a stream that reads the log a page at a time only when the zip asks for more bytes, so a reader
// that stops reading stops the reads, and the files go into the zip one after another (each read
// pass starts only when the one before ended). Everything comes from the stored envelopes, which the
// pipeline masked before storing them.
import type { Readable } from 'node:stream'
import { writeEntries, type EntryWriter, type ZipStreamStats } from './zip-stream.js'
import type { BundleManifest } from './manifest.js'
import { bundleContext, type BundleContext } from './context.js'
import { actionsFile, consoleFile, eventsFile, harFile, screenshots } from './log-entries.js'
import { frameFiles, perfTraceFiles, sourceMapFiles, videoFile } from './stored-entries.js'
import { DEFAULT_BUNDLE_LIMITS, type BundleLimits, type BundleSource, type BundleWindow } from './types.js'

export type { BundleSourceMaps } from './sourcemaps.js'
export type { BundlePerfTraces } from './perf-traces.js'

export { DEFAULT_BUNDLE_LIMITS, type BundleLimits, type BundleSource, type BundleWindow } from './types.js'

/** What a bundle build reports while and after it runs (tests and the bench read it). */
export type BundleStats = ZipStreamStats

export interface BundleBuild {
  /** The zip, to be piped to its reader; it errors (and never ends cleanly) if the build fails. */
  readonly output: Readable
  readonly stats: BundleStats
  /** Resolves with the manifest once the last byte is handed out; rejects when the build failed or was aborted. */
  readonly done: Promise<BundleManifest>
  /** Stops reading and writing; `output` is destroyed. */
  abort(reason?: Error): void
}

/** The file name offered for download: `browser-telemetry-<browser id>-<UTC time>.zip` (or another ending). */
export function bundleFileName(browserId: string, at: Date, ending = '.zip'): string {
  const safe = browserId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64)
  const t = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  return `browser-telemetry-${safe}-${t}${ending}`
}

/** A text file of the bundle: one entry whose chunks the generator yields as the zip pulls. */
function streamed(name: string, file: (ctx: BundleContext) => AsyncIterable<string>): EntryWriter<BundleContext> {
  return { name, write: ctx => ctx.entry(name, file(ctx)) }
}

/**
 * The bundle, entry by entry, in zip order. Order matters: sourcemaps/ lists the maps events.ndjson
 * used, recording.webm encodes what frames/ took, and manifest.json, last, counts all of them.
 */
const BUNDLE_ENTRIES: readonly EntryWriter<BundleContext>[] = [
  streamed('events.ndjson', eventsFile),
  streamed('network.har', harFile),
  streamed('console.txt', consoleFile),
  streamed('actions.json', actionsFile),
  { name: 'sourcemaps/', write: sourceMapFiles },
  { name: 'screenshots/', write: screenshots },
  { name: 'perf-traces/', write: perfTraceFiles },
  { name: 'frames/', write: frameFiles },
  { name: 'recording.webm', write: videoFile },
  { name: 'manifest.json', write: ctx => ctx.entry('manifest.json', [JSON.stringify(ctx.manifest, null, 2) + '\n']) },
]

export function buildBundle(
  source: BundleSource,
  window: BundleWindow,
  limits: BundleLimits = DEFAULT_BUNDLE_LIMITS,
  now: () => Date = () => new Date(),
): BundleBuild {
  const ctx = bundleContext(source, window, limits, now())
  const zs = ctx.zip
  const abort = (reason?: Error) => zs.abort(reason)
  const done = (async () => {
    try {
      await writeEntries(BUNDLE_ENTRIES, ctx)
      await zs.end()
      return ctx.manifest
    } catch (err) {
      // After the headers went out the only honest signal is a broken stream: never a valid-looking
      // truncated zip (the central directory is written only by zip.end()).
      abort(err as Error)
      throw err
    }
  })()
  done.catch(() => {}) // the caller may not wait for it; output carries the failure
  return { output: zs.output, stats: zs.stats, done, abort }
}
