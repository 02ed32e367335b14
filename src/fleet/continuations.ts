// What makes the next page of a fleet read cheap, and nothing else: where recently answered pages
// ended (a hint: one probe instead of a binary search) and the pull readers left where they ended
// (no seek, no new consumer). Only a speed-up: answers are the same without it, e.g. when a
// client's next page goes to another fleet serve process.
import type { FleetLogStats } from './jetstream.js'
import type { PullReader } from './pull.js'

/** Readers kept for the next page at most, and for how long (below the consumers' inactive_threshold). */
const MAX_KEPT_READERS = 256
const KEPT_READER_MS = 15_000
/** Page-end positions remembered (a few hundred bytes each). */
const MAX_HINTS = 10_000

export class Continuations {
  /** Where the last record of a recently answered page sits, by `<browser token> <next cursor>`. */
  private readonly hints = new Map<string, { seq: number; position: number }>()
  /** Readers left where a page ended, by `<browser token> <filter> <next cursor>`. */
  private readonly readers = new Map<string, { reader: PullReader; at: number }>()

  constructor(private readonly stats: FleetLogStats) {}

  /** Remembers where the record ending a page sits (the client sends that page's X-Next-Offset next). */
  hint(token: string, cursor: number, last: { seq: number; position: number }): void {
    const key = `${token} ${cursor}`
    this.hints.delete(key)
    this.hints.set(key, { seq: last.seq, position: last.position })
    if (this.hints.size > MAX_HINTS) this.hints.delete(this.hints.keys().next().value!)
  }

  hintOf(token: string, cursor: number): { seq: number; position: number } | undefined {
    const h = this.hints.get(`${token} ${cursor}`)
    if (h) this.stats.hinted++
    return h
  }

  /** Keeps a reader whose next record is the first of `filter` with seq >= cursor, for the page that continues there. */
  keepReader(token: string, filter: string, cursor: number, reader: PullReader): void {
    const key = `${token} ${filter} ${cursor}`
    this.readers.get(key)?.reader.close()
    this.readers.delete(key)
    this.readers.set(key, { reader, at: Date.now() })
    if (this.readers.size > MAX_KEPT_READERS) {
      const [oldest, kept] = this.readers.entries().next().value!
      this.readers.delete(oldest)
      kept.reader.close()
    }
  }

  /** The kept reader for this continuation, if one is fresh (taken: one request uses it). */
  takeReader(token: string, filter: string, cursor: number): PullReader | undefined {
    const key = `${token} ${filter} ${cursor}`
    const kept = this.readers.get(key)
    if (!kept) return undefined
    this.readers.delete(key)
    if (Date.now() - kept.at > KEPT_READER_MS) {
      kept.reader.close()
      return undefined
    }
    this.stats.keptReaders++
    return kept.reader
  }

  /** A new connection replaces the old one: its consumers are gone. */
  closeReaders(): void {
    for (const { reader } of this.readers.values()) reader.close()
    this.readers.clear()
  }
}
