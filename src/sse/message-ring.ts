// The SSE messages of the most recent committed records, as written to live clients, kept in memory
// up to a byte bound. A client that resumes (Last-Event-ID after a `: lagging` cut or a network
// blip) or catches up from a store read continues from here without reading the store: at 10k
// events/s and 100 clients, store re-reads of resuming clients were most of the daemon's CPU.
//
// The ring is complete after `coveredAfter`: it holds every committed record with a greater seq,
// up to `lastSeq`, in seq order (the hub appends every write batch, or clears the ring when it
// stops seeing commits). Evicting the oldest batch moves `coveredAfter` to its last seq.

/** SSE messages of records in seq order, encoded once; `starts[i]` is where the message of `seqs[i]` begins. */
export interface MessageBatch {
  buf: Buffer
  seqs: Float64Array
  starts: Uint32Array
}

/** What the ring has after a seq: messages to write, nothing yet (caught up), or not known (older than the ring). */
export type RingRead = { buf: Buffer; events: number; lastSeq: number } | 'caught-up' | 'behind'

export class MessageRing {
  private batches: MessageBatch[] = []
  private head = 0
  private bytes_ = 0
  private covered: number | undefined

  /** `maxBytes`: message bytes held at most (0 keeps nothing). */
  constructor(readonly maxBytes: number) {}

  /** Frame bytes held (the SSE bytes of the batches, not counting their index arrays). */
  get bytes(): number {
    return this.bytes_
  }
  get batchCount(): number {
    return this.batches.length - this.head
  }
  /** Every committed record with a seq above this is in the ring (undefined: the ring knows nothing). */
  get coveredAfter(): number | undefined {
    return this.covered
  }
  get firstSeq(): number | undefined {
    return this.batchCount > 0 ? this.batches[this.head]!.seqs[0] : undefined
  }
  get lastSeq(): number | undefined {
    const last = this.batches[this.batches.length - 1]
    return this.batchCount > 0 ? last!.seqs[last!.seqs.length - 1] : this.covered
  }

  /** True when the ring can serve everything after `seq` (with what is still to be appended). */
  covers(seq: number): boolean {
    return this.covered !== undefined && seq >= this.covered
  }

  /** Appends the next write batch (its records follow every record appended before); evicts the oldest past maxBytes. */
  append(batch: MessageBatch): void {
    if (batch.seqs.length === 0) return
    const last = this.lastSeq
    if (last !== undefined && batch.seqs[0]! <= last)
      throw new Error(`message ring: batch starting at ${batch.seqs[0]} after ${last}`)
    if (this.covered === undefined) this.covered = batch.seqs[0]! - 1
    this.batches.push(batch)
    this.bytes_ += batch.buf.length
    while (this.bytes_ > this.maxBytes && this.batchCount > 0) {
      const old = this.batches[this.head]!
      this.batches[this.head++] = undefined as unknown as MessageBatch
      this.bytes_ -= old.buf.length
      this.covered = old.seqs[old.seqs.length - 1]!
    }
    // Compact the array once the evicted prefix dominates (amortised O(1) per batch).
    if (this.head > 64 && this.head * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.head)
      this.head = 0
    }
  }

  /** Forgets everything (the hub missed commits, or is closing). */
  clear(): void {
    this.batches = []
    this.head = 0
    this.bytes_ = 0
    this.covered = undefined
  }

  /** The messages of the first batch holding records after `seq`, starting at the first of them (no copy). */
  after(seq: number): RingRead {
    if (!this.covers(seq)) return 'behind'
    // Binary search for the first batch whose last seq is above `seq`.
    let lo = this.head
    let hi = this.batches.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const b = this.batches[mid]!
      if (b.seqs[b.seqs.length - 1]! > seq) hi = mid
      else lo = mid + 1
    }
    if (lo === this.batches.length) return 'caught-up'
    const b = this.batches[lo]!
    const n = b.seqs.length
    let i = 0
    if (b.seqs[0]! <= seq) {
      let l = 0
      let h = n
      while (l < h) {
        const m = (l + h) >>> 1
        if (b.seqs[m]! > seq) h = m
        else l = m + 1
      }
      i = l
    }
    return { buf: i === 0 ? b.buf : b.buf.subarray(b.starts[i]), events: n - i, lastSeq: b.seqs[n - 1]! }
  }
}
