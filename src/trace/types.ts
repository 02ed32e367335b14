// What a Playwright trace is built from and within: its source, window, limits and the counts it
// reports (the builder, its context and its entry writers all read these).
import { DEFAULT_BUNDLE_LIMITS, type BundleLimits } from '../bundle/bundle.js'
import type { FrameStore } from '../recording/frame-store.js'
import type { EventLog, StoredRecord } from '../store/event-log.js'

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
