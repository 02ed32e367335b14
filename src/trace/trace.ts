// A Playwright trace of a window, streamed: the zip the trace viewer opens (trace.trace,
// trace.network, resources/), built from the stored envelopes and the recording's frames in passes
// over the log a page at a time, like the debug bundle. Everything comes from the stored envelopes,
// which the pipeline masked before storing them.
import type { Readable } from 'node:stream'
import { bundleFileName, DEFAULT_BUNDLE_LIMITS, type BundleLimits } from '../bundle/bundle.js'
import { writeEntries, ZipStream, type EntryWriter, type ZipStreamStats } from '../bundle/zip-stream.js'
import type { FrameStore } from '../recording/frame-store.js'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import { traceContext, type TraceContext } from './context.js'
import { bodyFiles, filmStrip, networkFile, traceFile } from './entries.js'

/** Where a trace's contents come from (the daemon's parts, or a test's). */
export interface TraceSource {
  browserId: string
  log: EventLog
  /** The recording's frame store; without one (or without frames in the window) the screenshots are the film strip. */
  frames?: Pick<FrameStore, 'list' | 'read'>
  /** Console stacks mapped as the events API maps them (src/symbols). */
  mapRecords?: (records: readonly StoredRecord[]) => Promise<StoredRecord[]>
  /** `process.platform` of the daemon's machine (the context line). */
  platform?: string
}

export interface TraceWindow {
  /** Unix microseconds, inclusive. */
  sinceUs: number
  /** Unix microseconds, exclusive; undefined: up to the last event committed when the export began. */
  untilUs?: number
  /** Only this target's pages, requests, console and frames (steps and browser-wide events stay). */
  targetId?: string
}

/** As the bundle's: log page size, HAR bounds, film strip frames, action records. */
export type TraceLimits = Omit<BundleLimits, 'maxListedGaps'>

const { maxListedGaps: _gaps, ...bundleLimits } = DEFAULT_BUNDLE_LIMITS
export const DEFAULT_TRACE_LIMITS: TraceLimits = {
  ...bundleLimits,
  // Finished exchanges wait for the ones begun before them: past 8 MiB they go out of order, which
  // the viewer does not mind (it sorts by time), and memory stays low.
  har: { ...bundleLimits.har, maxHeldBytes: 8 * 1024 * 1024 },
}

/** What the export wrote (counts; tests and the CLI read them). */
export interface TraceSummary {
  actions: number
  steps: number
  resources: number
  bodies: number
  console: number
  page_errors: number
  events: number
  frames: number
  frames_from: 'recording' | 'screenshots' | 'none'
  /** Screenshot lines written: an action's "Before"/"After" as the recording frame on screen. */
  screenshots: number
  pages: number
  /** Actions past maxActionRecords were not derived from here on. */
  actions_cut_at_seq?: number
}

export interface TraceBuild {
  readonly output: Readable
  readonly stats: ZipStreamStats
  readonly done: Promise<TraceSummary>
  abort(reason?: Error): void
}

/** `browser-telemetry-<browser id>-<UTC time>.trace.zip`. */
export function traceFileName(browserId: string, at: Date): string {
  return bundleFileName(browserId, at, '.trace.zip')
}

/**
 * The trace, entry by entry, in zip order. Order matters: trace.trace's actions show the film
 * strip's frames as their "Before"/"After", so the strip is written (and known) first.
 */
const TRACE_ENTRIES: readonly EntryWriter<TraceContext>[] = [
  { name: 'resources/ (bodies)', write: bodyFiles },
  { name: 'resources/ (film strip)', write: filmStrip },
  { name: 'trace.network', write: ctx => ctx.zip.entry('trace.network', networkFile(ctx)) },
  { name: 'trace.trace', write: ctx => ctx.zip.entry('trace.trace', traceFile(ctx)) },
]

export function buildTrace(
  source: TraceSource,
  window: TraceWindow,
  limits: TraceLimits = DEFAULT_TRACE_LIMITS,
  now: () => Date = () => new Date(),
): TraceBuild {
  const createdAt = now()
  const zs = new ZipStream(
    source.log,
    window,
    { events: limits.readPageEvents, bytes: limits.readPageBytes },
    createdAt,
    'trace',
  )
  const done = (async () => {
    try {
      const ctx = await traceContext(zs, source, window, limits, createdAt.getTime() * 1000)
      await writeEntries(TRACE_ENTRIES, ctx)
      await zs.end()
      return ctx.summary
    } catch (err) {
      // After the headers went out the only honest signal is a broken stream (as the bundle's).
      zs.abort(err as Error)
      throw err
    }
  })()
  done.catch(() => {})
  return { output: zs.output, stats: zs.stats, done, abort: (reason?: Error) => zs.abort(reason) }
}
