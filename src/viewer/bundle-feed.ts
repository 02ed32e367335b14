// The feed of a debug bundle opened in the page: the bundle's events, all held at once (up to the
// viewer's cap), its warnings and its recording. Nothing is fetched: every paging call is answered
// from what is loaded.
import { BundleError, openBundle, type BundleManifest, type BundleRecording } from './bundle-source.js'
import { FeedState, type Feed, type LiveState } from './feed.js'

export class BundleFeed extends FeedState implements Feed {
  readonly mode = 'bundle' as const
  readonly hasOlder = false
  readonly hasNewer = false
  loading = true
  error = ''
  readonly live: LiveState = 'off'
  browserId = ''
  warnings: string[] = []
  manifest?: BundleManifest
  recording?: BundleRecording
  private traceOf?: (traceId: string) => Promise<Blob | undefined>

  constructor(readonly fileName: string) {
    super()
  }

  /** Reads the bundle; the first rows are shown while the rest of a large one is parsed. */
  async open(file: Blob): Promise<void> {
    try {
      const b = await openBundle(file, this.fileName, events => {
        this.events = events
        this.changed()
      })
      this.manifest = b.manifest
      this.browserId = typeof b.manifest?.browser_id === 'string' ? b.manifest.browser_id : this.fileName
      this.events = b.events
      this.warnings = b.warnings
      this.recording = b.recording
      this.traceOf = b.perfTrace
    } catch (err) {
      this.error =
        err instanceof BundleError
          ? `Cannot open ${this.fileName}: ${err.message}`
          : `Cannot open ${this.fileName}: ${(err as Error).message}`
    } finally {
      this.loading = false
      this.changed()
    }
  }

  async loadLatest(): Promise<void> {}
  async loadAroundSeq(): Promise<void> {}
  async loadAroundTime(iso: string): Promise<number> {
    const us = Date.parse(iso) * 1000
    return this.events.find(e => e.event.ts >= us)?.seq ?? this.lastSeq
  }
  async loadOlder(): Promise<void> {}
  async loadNewer(): Promise<void> {}
  startLive(): void {}
  stopLive(): void {}
  async perfTrace(traceId: string): Promise<Blob | undefined> {
    return await this.traceOf?.(traceId)
  }
}
