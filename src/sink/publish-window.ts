// The send side of the shipper, free of any transport: records queued in seq order (read ahead of
// the window), and the window of records sent but not yet acknowledged.
import type { StoredRecord } from '../store/event-log.js'
import { Queue } from '../util/queue.js'

/** One record sent and not yet acknowledged. */
export interface InFlight {
  seq: number
  ts: number
  bytes: number
  sentAt: number
  acked: boolean
  /** Refused for good by the destination: passed by the watermark, counted as skipped. */
  skipped?: boolean
}

export class PublishWindow {
  /** Records queued for sending, in seq order. */
  readonly queue = new Queue<StoredRecord>()
  /** Sent, by seq; a Map keeps insertion order, which is seq order: the first entry is the oldest. */
  private readonly inflight = new Map<number, InFlight>()

  get inFlight(): number {
    return this.inflight.size
  }

  /** The oldest unacknowledged record. */
  oldest(): InFlight | undefined {
    for (const entry of this.inflight.values()) return entry
    return undefined
  }

  sent(rec: StoredRecord, now: number): void {
    this.inflight.set(rec.seq, {
      seq: rec.seq,
      ts: rec.ts,
      bytes: rec.envelopeBytes?.byteLength ?? rec.json.length,
      sentAt: now,
      acked: false,
    })
  }

  get(seq: number): InFlight | undefined {
    return this.inflight.get(seq)
  }

  /**
   * Removes the acknowledged run at the head of the window, oldest first, handing each to `each`
   * (the watermark moves over these only); false when the head is still unacknowledged.
   */
  takeAckedRun(each: (entry: InFlight) => void): boolean {
    let moved = false
    for (const entry of this.inflight.values()) {
      if (!entry.acked) break
      this.inflight.delete(entry.seq)
      each(entry)
      moved = true
    }
    return moved
  }

  /** Nothing sent unacknowledged and nothing queued. */
  get empty(): boolean {
    return this.inflight.size === 0 && this.queue.length === 0
  }

  /** Drops everything: the oldest unacknowledged ts (if any) is returned, for the lag. */
  clear(): number | undefined {
    const ts = this.oldest()?.ts
    this.inflight.clear()
    this.queue.clear()
    return ts
  }
}
