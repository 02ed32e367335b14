// A manual clock (src/util/clock.ts Clock) for timer rules and collectors: set/repeat/clear like
// setTimeout/setInterval, advance(ms) runs due callbacks in time order, now() is the manual time.
import type { Clock, TimerHandle } from '../../src/util/clock.js'

interface Entry {
  at: number
  fn: () => void
  every?: number
}

export class FakeClock implements Clock {
  private time = 0
  private seq = 0
  private readonly queue = new Map<number, Entry>()
  now = (): number => this.time
  set = (fn: () => void, ms: number): TimerHandle => {
    const id = ++this.seq
    this.queue.set(id, { at: this.time + ms, fn })
    return id
  }
  repeat = (fn: () => void, ms: number): TimerHandle => {
    const id = ++this.seq
    this.queue.set(id, { at: this.time + ms, fn, every: ms })
    return id
  }
  clear = (h: TimerHandle): void => {
    this.queue.delete(h as number)
  }
  /** Timers waiting to fire. */
  get pending(): number {
    return this.queue.size
  }
  /** Delays of the timers waiting to fire, from now, soonest first. */
  get dueIn(): number[] {
    return [...this.queue.values()].map(e => e.at - this.time).sort((a, b) => a - b)
  }
  advance(ms: number): void {
    const end = this.time + ms
    for (;;) {
      let next: [number, Entry] | undefined
      for (const e of this.queue) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e
      if (!next) break
      const [id, entry] = next
      this.time = entry.at
      if (entry.every !== undefined) entry.at += Math.max(1, entry.every)
      else this.queue.delete(id)
      entry.fn()
    }
    this.time = end
  }
}

/** The former name (the clock grew now() and repeat()). */
export { FakeClock as FakeTimers }
