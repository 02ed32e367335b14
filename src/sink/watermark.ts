// A sink's watermark on disk: every seq at or below it is at the destination. Kept in the event
// log's module metadata, written about once a second and at stop (one write at a time).
import type { EventLog } from '../store/event-log.js'
import type { Logger } from '../log.js'

/** Metadata name of the NATS watermark: tied to the destination stream and prefix, not to a server URL. */
export const watermarkName = (stream: string, prefix: string) => `ship:${stream}:${prefix}`

export class StoredWatermark {
  private readonly name: string
  private persisted = 0
  private persisting: Promise<void> | undefined

  constructor(
    private readonly log: Pick<EventLog, 'readMeta' | 'writeMeta'>,
    name: string,
    private readonly logger: Logger,
  ) {
    this.name = name
  }

  /** The watermark the last run persisted (0: none). */
  async load(): Promise<number> {
    const stored = await this.log.readMeta(this.name)
    this.persisted = stored && stored.length >= 8 ? Number(stored.readBigUInt64BE(0)) : 0
    return this.persisted
  }

  /** Writes `seq` unless it is already on disk; a write under way is awaited instead of doubled. */
  async persist(seq: number): Promise<void> {
    if (this.persisting) return this.persisting
    if (seq === this.persisted) return
    const value = Buffer.alloc(8)
    value.writeBigUInt64BE(BigInt(seq))
    this.persisting = this.log
      .writeMeta(this.name, value)
      .then(
        () => {
          this.persisted = seq
        },
        (err: Error) => {
          this.logger.error({ err }, 'could not persist the shipped watermark')
        },
      )
      .finally(() => {
        this.persisting = undefined
      })
    return this.persisting
  }
}
