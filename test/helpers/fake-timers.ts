// A manual clock for pure timer rules: set/clear like setTimeout, advance(ms) runs due callbacks in order.
export class FakeTimers {
  now = 0
  private seq = 0
  private readonly queue = new Map<number, { at: number; fn: () => void }>()
  set = (fn: () => void, ms: number): unknown => { const id = ++this.seq; this.queue.set(id, { at: this.now + ms, fn }); return id }
  clear = (h: unknown): void => { this.queue.delete(h as number) }
  get pending(): number { return this.queue.size }
  advance(ms: number): void {
    const end = this.now + ms
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined
      for (const e of this.queue) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e
      if (!next) break
      this.queue.delete(next[0])
      this.now = next[1].at
      next[1].fn()
    }
    this.now = end
  }
}
