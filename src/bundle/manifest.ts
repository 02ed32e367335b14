// manifest.json of a bundle: what the bundle holds and under which rules it was made. Tools read it
// (its field names are a contract, like the file names), so it only grows new fields.
import type { Step } from '../actions/index.js'
import type { RedactionPolicy } from '../events/redact.js'
import type { FrameGap } from './frames.js'

export const BUNDLE_FORMAT = 'browser-telemetry-bundle'
export const BUNDLE_FORMAT_VERSION = 1

/** Seqs missing between two consecutive events of the window (dropped: shedding, an unclean stop). */
export interface SeqGap {
  from: number
  to: number
  count: number
}

export interface BundleManifest {
  format: typeof BUNDLE_FORMAT
  format_version: number
  browser_id: string
  daemon_version: string
  /** When the bundle was made (RFC 3339). */
  created_at: string
  /** The time window: since inclusive, until exclusive (null: up to the newest event when the bundle began). */
  window: {
    since: string
    until: string | null
    since_us: number
    until_us: number | null
    /** The parameters as given (durations are relative to created_at). */
    requested: { since: string | null; until: string | null }
  }
  /** The seqs in events.ndjson (first/last null when the window is empty). */
  seq: { first: number | null; last: number | null; events: number; last_committed_at_start: number }
  /** Dropped seqs as the API and the viewer show them: listed up to `listed_max`, counted in full. */
  gaps: { dropped: SeqGap[]; listed_max: number; total_gaps: number; total_dropped: number }
  /**
   * The screen recording: frames in frames/, the runs of frame ids the store could not keep (with
   * why) that happened in the window, and recording.webm when ffmpeg was there to encode it.
   */
  recording: {
    enabled: boolean
    frames: number
    gaps: FrameGap[]
    video: string | null
    video_note?: string
    /** The tab recording.webm shows (one tab: two visible tabs' frames would alternate). */
    video_target_id?: string
  }
  /** Event categories being captured when the bundle was made. */
  categories: string[]
  /** Applied before anything was stored, so every file of the bundle is masked by it. */
  redaction: RedactionPolicy & { applied: string }
  files: {
    'events.ndjson': { events: number }
    'network.har': { entries: number; pages: number; written_early: number; pages_not_kept: number }
    'console.txt': { lines: number }
    /** cut_at_seq: the derivation held its most records; events from this seq on were not read. */
    'actions.json': { actions: number; cut_at_seq?: number }
    screenshots: { files: number }
    frames: { files: number }
    /** The source maps the window's stacks use (sourcemaps/*.map, listed in sourcemaps/index.json). */
    sourcemaps?: { files: number }
    /** Performance traces started in the window (perf-traces/<trace_id>.json.gz, listed in perf-traces/index.json). */
    'perf-traces'?: { files: number }
    'recording.webm'?: { frames: number; duration_ms: number; bytes: number; chapters: number }
  }
  /** Event types in events.ndjson with their counts. */
  types: Record<string, number>
  /** The agent's steps of the window (agent_step_started joined with its finish), by start. */
  steps: Step[]
}

/** Gaps between consecutive seqs, counted in full and listed up to `max`. */
export class GapTracker {
  readonly dropped: SeqGap[] = []
  totalGaps = 0
  totalDropped = 0
  private last = 0

  constructor(readonly max: number) {}

  see(seq: number): void {
    if (this.last > 0 && seq > this.last + 1) {
      const g = { from: this.last + 1, to: seq - 1, count: seq - this.last - 1 }
      this.totalGaps++
      this.totalDropped += g.count
      if (this.dropped.length < this.max) this.dropped.push(g)
    }
    this.last = seq
  }
}
