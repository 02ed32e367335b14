// What every entry writer of a debug bundle shares: the window and its source, the zip being
// written (with the log reads and the abort signal it owns), the limits, and the manifest the
// writers fill in as they go (it is written last, so it counts what the files hold).
import type { Readable } from 'node:stream'
import type { StoredRecord } from '../store/event-log.js'
import type { BundleLimits, BundleSource, BundleWindow } from './types.js'
import { isoMicros } from './console-text.js'
import type { FrameMeta } from './frames.js'
import { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, type BundleManifest } from './manifest.js'
import { ZipStream } from './zip-stream.js'

export interface BundleContext {
  readonly source: BundleSource
  readonly window: BundleWindow
  readonly limits: BundleLimits
  readonly zip: ZipStream
  /** Aborted when the build fails or the reader goes away (the zip's). */
  readonly signal: AbortSignal
  /** The window's upper seq, fixed when the build began. */
  readonly lastSeq: number
  /** The build's start in Unix microseconds: the frames' upper end when the window has none. */
  readonly createdUs: number
  readonly manifest: BundleManifest
  /** Scripts whose source map the window's stacks use (filled by events.ndjson, read by sourcemaps/). */
  readonly mappedScripts: Set<string>
  /** The recording frames that went into frames/ (recording.webm encodes them). */
  framesIncluded: FrameMeta[]
  /** One zip entry; resolves once the zip consumed it. */
  entry(
    name: string,
    chunks: Iterable<string | Buffer> | AsyncIterable<string | Buffer> | Readable,
    compress?: boolean,
  ): Promise<void>
}

export function bundleContext(
  source: BundleSource,
  window: BundleWindow,
  limits: BundleLimits,
  createdAt: Date,
): BundleContext {
  const zip = new ZipStream(
    source.log,
    window,
    { events: limits.readPageEvents, bytes: limits.readPageBytes },
    createdAt,
    'bundle',
  )
  return {
    source,
    window,
    limits,
    zip,
    signal: zip.signal,
    lastSeq: zip.lastSeq,
    createdUs: createdAt.getTime() * 1000,
    manifest: startManifest(source, window, limits, createdAt, zip.lastSeq),
    mappedScripts: new Set<string>(),
    framesIncluded: [],
    entry: (name, chunks, compress = true) => zip.entry(name, chunks, compress),
  }
}

/** The log's page as the events API serves it (console stacks mapped), noting the scripts mapped. */
export async function served(ctx: BundleContext, page: StoredRecord[]): Promise<StoredRecord[]> {
  return (await ctx.source.sourceMaps?.mapRecords(page, ctx.mappedScripts)) ?? page
}

/** The manifest before any file was written: what is known at the start, the counts at zero. */
function startManifest(
  source: BundleSource,
  window: BundleWindow,
  limits: BundleLimits,
  createdAt: Date,
  lastSeq: number,
): BundleManifest {
  return {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    browser_id: source.browserId,
    daemon_version: source.daemonVersion,
    created_at: createdAt.toISOString(),
    window: {
      since: isoMicros(window.sinceUs),
      until: window.untilUs !== undefined ? isoMicros(window.untilUs) : null,
      since_us: window.sinceUs,
      until_us: window.untilUs ?? null,
      requested: { since: window.requested?.since ?? null, until: window.requested?.until ?? null },
    },
    seq: { first: null, last: null, events: 0, last_committed_at_start: lastSeq },
    gaps: { dropped: [], listed_max: limits.maxListedGaps, total_gaps: 0, total_dropped: 0 },
    recording: { enabled: source.recordingEnabled?.() ?? false, frames: 0, gaps: [], video: null },
    categories: [...source.categories()],
    redaction: {
      ...source.redaction,
      applied:
        'by the daemon before anything was stored: every file of this bundle is made from the stored, masked events',
    },
    files: {
      'events.ndjson': { events: 0 },
      'network.har': { entries: 0, pages: 0, written_early: 0, pages_not_kept: 0 },
      'console.txt': { lines: 0 },
      'actions.json': { actions: 0 },
      screenshots: { files: 0 },
      frames: { files: 0 },
    },
    types: {},
    steps: [],
  }
}
