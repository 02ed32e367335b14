// A Playwright trace of a window, streamed: the zip the trace viewer opens (trace.trace,
// trace.network, resources/), built from the stored envelopes and the recording's frames in passes
// over the log a page at a time, like the debug bundle. Everything comes from the stored envelopes,
// which the pipeline masked before storing them.
import type { Readable } from 'node:stream'
import { bundleFileName } from '../bundle/bundle.js'
import { writeEntries, ZipStream, type EntryWriter, type ZipStreamStats } from '../bundle/zip-stream.js'
import { traceContext, type TraceContext } from './context.js'
import {
  DEFAULT_TRACE_LIMITS,
  type TraceLimits,
  type TraceSource,
  type TraceSummary,
  type TraceWindow,
} from './types.js'
import { bodyFiles, filmStrip, networkFile, traceFile } from './entries.js'

export {
  DEFAULT_TRACE_LIMITS,
  type TraceLimits,
  type TraceSource,
  type TraceSummary,
  type TraceWindow,
} from './types.js'

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
