// Bounded per-session request tracking: entries live until the request finishes or fails, but never
// longer than a TTL and never more than a size cap, so requests that never end cannot grow memory.

export interface RequestTableOptions<V> {
  ttlMs: number
  maxSize: number
  now?: () => number
  /** Told about every entry dropped by TTL or cap (not about delete()). */
  onEvict?: (id: string, value: V) => void
}

export class RequestTable<V> {
  // Map iteration is insertion order, and entries are inserted when first seen, so the oldest come first.
  private readonly entries = new Map<string, { value: V; addedAt: number }>()
  private readonly now: () => number

  constructor(private readonly opts: RequestTableOptions<V>) {
    this.now = opts.now ?? Date.now
  }

  get size(): number { return this.entries.size }

  get(id: string): V | undefined { return this.entries.get(id)?.value }

  /** Adds a new entry (sweeping expired and over-cap ones first) or replaces the value of an existing one. */
  set(id: string, value: V): void {
    const existing = this.entries.get(id)
    if (existing) { existing.value = value; return }
    this.sweep()
    while (this.entries.size >= this.opts.maxSize) this.evictOldest()
    this.entries.set(id, { value, addedAt: this.now() })
  }

  delete(id: string): V | undefined {
    const e = this.entries.get(id)
    if (!e) return undefined
    this.entries.delete(id)
    return e.value
  }

  /** Drops entries older than the TTL. Called on every insert; cheap because it stops at the first young entry. */
  sweep(): void {
    const cutoff = this.now() - this.opts.ttlMs
    for (const [id, e] of this.entries) {
      if (e.addedAt > cutoff) break
      this.entries.delete(id)
      this.opts.onEvict?.(id, e.value)
    }
  }

  clear(): void { this.entries.clear() }

  private evictOldest(): void {
    const first = this.entries.entries().next()
    if (first.done) return
    const [id, e] = first.value
    this.entries.delete(id)
    this.opts.onEvict?.(id, e.value)
  }
}
