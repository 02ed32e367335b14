// What the page reads its events from: the daemon (EventFeed: paged history and the live stream)
// or a debug bundle opened from disk (BundleFeed: everything at once, no daemon). The page works
// with this one shape; a bundle's feed answers the paging calls with what it already holds.
import type { Envelope } from './model.js'

export type LiveState = 'off' | 'connecting' | 'live' | 'retrying'

export interface Feed {
  readonly mode: 'live' | 'bundle'
  readonly events: Envelope[]
  readonly hasOlder: boolean
  readonly hasNewer: boolean
  readonly loading: boolean
  readonly error: string
  readonly live: LiveState
  /** Bumped on every change; the UI re-derives rows when it moves. */
  readonly version: number
  readonly browserId: string
  readonly firstSeq: number
  readonly lastSeq: number
  subscribe(l: () => void): () => void
  loadLatest(): Promise<void>
  loadAroundSeq(seq: number): Promise<void>
  /** Returns the first seq at or after the time (0 when none). */
  loadAroundTime(iso: string): Promise<number>
  loadOlder(): Promise<void>
  loadNewer(): Promise<void>
  startLive(onAuthError: (e: Error) => void): void
  stopLive(): void
  /** A performance trace's file (gzip JSON); undefined when the daemon or the bundle no longer has it. */
  perfTrace(traceId: string): Promise<Blob | undefined>
}

/** What both feeds share: the envelopes held, their bounds, and telling the page of changes. */
export abstract class FeedState {
  events: Envelope[] = []
  /** Bumped on every change; the UI re-derives rows when it moves. */
  version = 0
  private readonly listeners = new Set<() => void>()

  subscribe(l: () => void): () => void {
    this.listeners.add(l)
    return () => {
      this.listeners.delete(l)
    }
  }
  protected changed(): void {
    this.version++
    for (const l of this.listeners) l()
  }

  get firstSeq(): number {
    return this.events[0]?.seq ?? 0
  }
  get lastSeq(): number {
    return this.events.at(-1)?.seq ?? 0
  }
}
