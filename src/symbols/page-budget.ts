// How much learning one page may cause: a token bucket per page (its target), refilled at the
// page rate, one token per script. A page naming thousands of new scripts waits its turn; the
// learning loop takes another page's script meanwhile.

export interface PageRate {
  perSecond: number
  burst: number
}

export interface Clock {
  now(): number
  sleep(ms: number): Promise<void>
}

const DEFAULT_RATE: PageRate = { perSecond: 20, burst: 40 }
/** Pages whose budget is remembered at most (the oldest is forgotten: it starts again full). */
const MAX_PAGES = 1000

const realClock: Clock = {
  now: () => performance.now(),
  sleep: ms => new Promise<void>(resolve => setTimeout(resolve, ms).unref()),
}

export class PageBudgets {
  private readonly pages = new Map<string, { tokens: number; at: number }>()

  constructor(
    private readonly rate: PageRate = DEFAULT_RATE,
    private readonly clock: Clock = realClock,
  ) {}

  /** Spends one of the page's tokens and returns 0, or returns the ms until it has one again. */
  take(page: string): number {
    const now = this.clock.now()
    let b = this.pages.get(page)
    if (!b) {
      if (this.pages.size >= MAX_PAGES) this.pages.delete(this.pages.keys().next().value!)
      b = { tokens: this.rate.burst, at: now }
      this.pages.set(page, b)
    }
    b.tokens = Math.min(this.rate.burst, b.tokens + ((now - b.at) * this.rate.perSecond) / 1000)
    b.at = now
    if (b.tokens >= 1) {
      b.tokens--
      return 0
    }
    return Math.max(1, Math.ceil(((1 - b.tokens) * 1000) / this.rate.perSecond))
  }

  sleep(ms: number): Promise<void> {
    return this.clock.sleep(ms)
  }
}
