// One listener bag for everything that must be undone together (event unsubscribes, timer clears,
// collectors' detaches): what attach() adds, detach() removes, symmetrically and exactly once.

/** Removes what was set up. Must be idempotent. */
export type Dispose = () => void

export class Disposer {
  private readonly fns = new Set<Dispose>()
  private done = false

  /**
   * Registers an undo step; once disposed, runs it at once (a late registration never leaks).
   * Returns a function that runs the step early and forgets it.
   */
  add(fn: Dispose): Dispose {
    if (this.done) {
      this.run(fn)
      return () => undefined
    }
    this.fns.add(fn)
    return () => {
      if (this.fns.delete(fn)) this.run(fn)
    }
  }

  get disposed(): boolean {
    return this.done
  }
  /** Undo steps still registered (leak checks). */
  get size(): number {
    return this.fns.size
  }

  /** Runs every step in reverse order of registration; one throwing step never stops the others. Idempotent. */
  dispose(): void {
    if (this.done) return
    this.done = true
    const fns = [...this.fns].reverse()
    this.fns.clear()
    for (const fn of fns) this.run(fn)
  }

  constructor(private readonly onError: (err: unknown) => void = () => undefined) {}

  private run(fn: Dispose): void {
    try {
      fn()
    } catch (err) {
      this.onError(err)
    }
  }
}
