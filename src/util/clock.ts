// One injectable clock for every timer of the collectors (and the rules they drive), so timer
// behaviour is unit-tested on a manual clock (test/helpers/fake-timers.ts) without real setTimeout.

/** Opaque timer handle: only ever handed back to the clock that made it. */
export type TimerHandle = unknown

export interface Timers {
  /** Runs fn once after ms. `unref`: the timer does not keep the process alive. */
  set(fn: () => void, ms: number, opts?: { unref?: boolean }): TimerHandle
  /** Cancels a timer of set() or repeat(); unknown or already fired handles are ignored. */
  clear(handle: TimerHandle): void
}

export interface Clock extends Timers {
  /** Monotonic milliseconds. */
  now(): number
  /** Runs fn every ms until cleared. */
  repeat(fn: () => void, ms: number): TimerHandle
}

export const systemClock: Clock = {
  now: () => performance.now(),
  set: (fn, ms, opts) => {
    const t = setTimeout(fn, ms)
    if (opts?.unref) t.unref()
    return t
  },
  repeat: (fn, ms) => setInterval(fn, ms),
  // Node's clearTimeout also clears intervals.
  clear: h => clearTimeout(h as NodeJS.Timeout),
}
