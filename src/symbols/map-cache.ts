// Parsed maps in memory, bounded by their estimated heap: least recently used first out. A map is
// parsed once and reused by every frame, event and reader until it is pushed out.
import type { ParsedMap } from './source-map.js'

export class MapCache {
  private readonly maps = new Map<string, ParsedMap>()
  private bytes_ = 0
  /** Maps parsed into the cache, and pushed out by the bound (the bench and /metrics-style checks read them). */
  parsed = 0
  evicted = 0

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.bytes_
  }
  get size(): number {
    return this.maps.size
  }

  /** The map, marked as just used. */
  get(id: string): ParsedMap | undefined {
    const m = this.maps.get(id)
    if (m) {
      this.maps.delete(id)
      this.maps.set(id, m)
    }
    return m
  }

  has(id: string): boolean {
    return this.maps.has(id)
  }

  /** Adds a map (a caller never adds one larger than maxBytes: the parse bound keeps it below). */
  put(id: string, map: ParsedMap): void {
    const old = this.maps.get(id)
    if (old) {
      this.maps.delete(id)
      this.bytes_ -= old.bytes
    }
    this.maps.set(id, map)
    this.bytes_ += map.bytes
    this.parsed++
    for (const [key, m] of this.maps) {
      if (this.bytes_ <= this.maxBytes || key === id) break
      this.maps.delete(key)
      this.bytes_ -= m.bytes
      this.evicted++
    }
  }

  clear(): void {
    this.maps.clear()
    this.bytes_ = 0
  }
}
