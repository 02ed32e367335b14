// What a bundle is built from and within: its source, window and limits (the builder, its context
// and its entry writers all read these).
import type { HarStreamBounds } from '../har/index.js'
import type { RedactionPolicy } from '../events/redact.js'
import type { EventLog } from '../store/event-log.js'
import type { BundleSourceMaps } from './sourcemaps.js'
import type { BundleFrames } from './frames.js'
import type { BundlePerfTraces } from './perf-traces.js'

/** Where a bundle's contents come from (the daemon's parts, or a test's). */
export interface BundleSource {
  browserId: string
  daemonVersion: string
  log: EventLog
  /** The recording's frame store; absent when the daemon has none (the bundle says recording was off). */
  frames?: BundleFrames
  /** Whether the screen recording is on now. */
  recordingEnabled?: () => boolean
  /** ffmpeg for recording.webm: a path, undefined to look on PATH, null never to encode. */
  ffmpeg?: string | null
  /** Event categories captured now. */
  categories: () => readonly string[]
  redaction: RedactionPolicy
  /** Source maps: console stacks mapped as the events API maps them, and the maps used, in sourcemaps/. */
  sourceMaps?: BundleSourceMaps
  /** Performance traces started in the window go in perf-traces/. */
  perfTraces?: BundlePerfTraces
}

export interface BundleWindow {
  /** Unix microseconds, inclusive. */
  sinceUs: number
  /** Unix microseconds, exclusive; undefined: up to the last event committed when the bundle began. */
  untilUs?: number
  /** The parameters as the caller wrote them, for the manifest. */
  requested?: { since?: string; until?: string }
}

export interface BundleLimits {
  /** Stored bytes one log read materialises at most. */
  readPageBytes: number
  /** Events per log read at most. */
  readPageEvents: number
  /** HAR: bytes of unfinished exchanges held, pages kept, how long a finished exchange waits for its page. */
  har: HarStreamBounds
  /** Dropped-seq gaps listed in the manifest (all are counted). */
  maxListedGaps: number
  /** Recording frames included at most (their index is written after them). */
  maxFrames: number
  /** Records the actions derivation holds at most (one per command and page report, ~250 bytes each). */
  maxActionRecords: number
}

export const DEFAULT_BUNDLE_LIMITS: BundleLimits = {
  readPageBytes: 1024 * 1024,
  readPageEvents: 500,
  har: { maxHeldBytes: 32 * 1024 * 1024, maxPages: 10_000, settleUs: 10_000_000 },
  maxListedGaps: 1000,
  maxFrames: 100_000,
  maxActionRecords: 200_000,
}
