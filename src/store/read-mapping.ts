// What readers apply to the records they serve, beside the log: console stacks mapped by the
// source maps known at read time (src/symbols implements it). Nothing stored is rewritten, so every
// reader (events route, SSE, exports, sinks) serves the same derivation of the same bytes.
import type { StoredRecord } from './event-log.js'

export interface ReadMapping {
  /** Grows whenever a map becomes known: what a reader mapped before may now map further. */
  readonly generation: number
  /** Records as a reader serves them, the maps they need loaded first; `used` collects scripts with a map. */
  mapRecords(records: readonly StoredRecord[], used?: Set<string>): Promise<StoredRecord[]>
  /** The same from the maps in memory, without I/O (live paths: SSE writes, sinks); the same array when nothing changed. */
  mapRecordsNow(records: readonly StoredRecord[]): readonly StoredRecord[]
}

/** One record as a live reader serves it (only console records can carry a stack). */
export function servedNow(mapping: ReadMapping | undefined, rec: StoredRecord): StoredRecord {
  return mapping === undefined || rec.category !== 'console' ? rec : mapping.mapRecordsNow([rec])[0]!
}
