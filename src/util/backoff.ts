// Retry delays that double from a first delay up to a cap, and start over after a success.

export class Backoff {
  private current: number

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
  ) {
    this.current = initialMs
  }

  /** The delay to wait now; the one after it doubles (up to the cap). */
  next(): number {
    const d = this.current
    this.current = Math.min(this.current * 2, this.maxMs)
    return d
  }

  reset(): void {
    this.current = this.initialMs
  }
}
