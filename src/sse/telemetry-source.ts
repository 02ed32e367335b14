// What the telemetry read and stream routes need of a browser's events. The daemon's event log is
// one such source; `fleet serve` gives each browser's copy in the fleet stream (src/fleet) the same
// shape, so both serve the same routes with the same paging rules.
import type { ReadQuery, ReadResult, StoredRecord } from '../store/event-log.js'

/** Pages of one browser's events; cursors are telemetry seqs (see EventLog.read). */
export interface EventReader {
  read(q: ReadQuery): Promise<ReadResult>
}

/** A live feed of a source, started by FollowedSource.follow. */
export interface Following {
  /** Highest seq the source held when the feed started (every later record reaches the feed). */
  readonly lastSeq: number
  stop(): void
}

/** A source an SSE stream can follow: its pages, plus every record stored after a point. */
export interface FollowedSource extends EventReader {
  /**
   * Starts the feed. Every record stored after it started reaches onRecords, in seq order (a
   * record at or below lastSeq may also arrive; streams skip what they sent). onEnd: the feed
   * broke and will deliver nothing more.
   */
  follow(onRecords: (records: StoredRecord[]) => void, onEnd: (err: Error) => void): Promise<Following>
}
