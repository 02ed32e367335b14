// What the sink core asks of a transport, and what a transport tells it back. Free of any
// destination: the NATS link and the OTLP link both implement ShipLink.
import type { StoredRecord } from '../store/event-log.js'

/** What the sink asks of its destination. */
export interface ShipTransport {
  /** Prepares the destination; resolves with the highest seq it already holds of us (0: none or unknown). */
  resync(): Promise<number>
  /** Sends one record; throws when it cannot be handed over. Its ack arrives through LinkEvents.ack. */
  publish(rec: StoredRecord): void
}

/** A transport's whole life as the sink drives it: started once, stopped once. */
export interface ShipLink extends ShipTransport {
  /** Starts connecting in the background; LinkEvents tell how it goes. */
  start(): void
  stop(): Promise<void>
  /** Sends what it holds back (a batch being filled) now; the sink calls it before stopping. */
  flush?(): void
  /** Everything unacknowledged is void (the sink re-sends from its watermark): drop batches, ignore late answers. */
  reset?(): void
}

/** A destination's answer that refuses one record. `skip`: the record is dropped for good (counted), not re-sent. */
export interface Refusal {
  kind: string
  message: string
  skip?: boolean
}

/** What the link tells the sink. */
export interface LinkEvents {
  /** Connected (or reconnected): resync before sending. */
  up(): void
  /** The destination can be asked (`resync`) now. */
  ready(): void
  /** Connection lost: everything unacknowledged is void. */
  down(): void
  /** An answer for one record: stored, or refused. */
  ack(seq: number, refusal?: Refusal): void
  /**
   * The destination moved (a clustered stream elected a new leader): what was sent to the old one may
   * never be answered, so re-send from the watermark and ask again now, without waiting out a backoff.
   */
  moved?(): void
  /** The destination asks to wait this long before anything is re-sent (Retry-After). */
  retryAfter?(ms: number): void
  error(kind: string, message: string): void
}
