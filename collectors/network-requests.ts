// Bounded per-session request tracking: entries live until the request finishes or fails, but never
// longer than a TTL and never more than a size cap, so requests that never end cannot grow memory.

export interface RequestTableOptions<V> {
  ttlMs: number
  maxSize: number
  /** Estimated bytes of all entries at most (with sizeOf); oldest evicted first. */
  maxBytes?: number
  sizeOf?: (value: V) => number
  now?: () => number
  /** Told about every entry dropped by TTL or cap (not about delete()). */
  onEvict?: (id: string, value: V) => void
}

export class RequestTable<V> {
  // Map iteration is insertion order, and entries are inserted when first seen, so the oldest come first.
  private readonly entries_ = new Map<string, { value: V; addedAt: number; bytes: number }>()
  private readonly now: () => number
  private bytes_ = 0

  constructor(private readonly opts: RequestTableOptions<V>) {
    this.now = opts.now ?? Date.now
  }

  get size(): number {
    return this.entries_.size
  }
  /** Estimated bytes held (0 without sizeOf). */
  get bytes(): number {
    return this.bytes_
  }

  get(id: string): V | undefined {
    return this.entries_.get(id)?.value
  }

  /** Adds a new entry (sweeping expired and over-cap ones first) or replaces the value of an existing one. */
  set(id: string, value: V): void {
    const bytes = this.opts.sizeOf?.(value) ?? 0
    const existing = this.entries_.get(id)
    if (existing) {
      existing.value = value
      this.bytes_ += bytes - existing.bytes
      existing.bytes = bytes
    } else {
      this.sweep()
      while (this.entries_.size >= this.opts.maxSize) this.evictOldest()
      this.entries_.set(id, { value, addedAt: this.now(), bytes })
      this.bytes_ += bytes
    }
    // Over the byte bound: oldest first, but never the entry just written.
    const maxBytes = this.opts.maxBytes ?? Infinity
    while (this.bytes_ > maxBytes && this.entries_.size > 1 && this.entries_.keys().next().value !== id)
      this.evictOldest()
  }

  delete(id: string): V | undefined {
    const e = this.entries_.get(id)
    if (!e) return undefined
    this.entries_.delete(id)
    this.bytes_ -= e.bytes
    return e.value
  }

  /** Drops entries older than the TTL. Called on every insert; cheap because it stops at the first young entry. */
  sweep(): void {
    const cutoff = this.now() - this.opts.ttlMs
    for (const [id, e] of this.entries_) {
      if (e.addedAt > cutoff) break
      this.entries_.delete(id)
      this.bytes_ -= e.bytes
      this.opts.onEvict?.(id, e.value)
    }
  }

  /** Every entry (id, value), oldest first. */
  entries(): [string, V][] {
    return [...this.entries_.entries()].map(([id, e]) => [id, e.value])
  }

  clear(): void {
    this.entries_.clear()
    this.bytes_ = 0
  }

  private evictOldest(): void {
    const first = this.entries_.entries().next()
    if (first.done) return
    const [id, e] = first.value
    this.entries_.delete(id)
    this.bytes_ -= e.bytes
    this.opts.onEvict?.(id, e.value)
  }
}
