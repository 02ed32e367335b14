// Per-page budgets: one token bucket pair (events/s and bytes/s) per (target, category), so one
// flooding page cannot fill the log (and push other pages' history out through retention) faster
// than its budget. Pure and clock-injectable; the pipeline decides what a refusal means (a drop that
// still consumes its seq).
import { DEFAULT_SETTINGS } from './default-settings.js'

export interface BudgetOptions {
  /** Sustained events per second per target and category. */
  eventsPerSec: number
  /** Events a target may emit at once in a category before the sustained rate applies. */
  eventsBurst: number
  /** Sustained envelope bytes per second per target and category. */
  bytesPerSec: number
  /** Envelope bytes at once before the sustained rate applies. */
  bytesBurst: number
  /** Buckets kept at most (oldest forgotten first: a forgotten bucket starts full again). */
  maxBuckets?: number
  /** Event rates of their own for some categories (bytes follow the general budget). */
  categoryEvents?: Partial<Record<string, CategoryEventBudget>>
}

export interface CategoryEventBudget {
  eventsPerSec: number
  eventsBurst: number
}

/**
 * Interaction events come from one person at a screen: 50/s sustained with bursts of 100 never
 * drops human or agent typing (30 keys/s, key repeat), yet caps a page that forges them. The
 * interaction collector also stops the binding at the source when this is exhausted.
 */
export const INTERACTION_BUDGET: CategoryEventBudget = { eventsPerSec: 50, eventsBurst: 100 }

export const DEFAULT_BUDGET: BudgetOptions = {
  eventsPerSec: DEFAULT_SETTINGS.budgetEventsPerSec,
  eventsBurst: DEFAULT_SETTINGS.budgetEventsBurst,
  bytesPerSec: DEFAULT_SETTINGS.budgetBytesPerSec,
  bytesBurst: DEFAULT_SETTINGS.budgetBytesBurst,
  categoryEvents: { interaction: INTERACTION_BUDGET },
}

interface Bucket {
  events: number
  bytes: number
  at: number
  eventsPerSec: number
  eventsBurst: number
}

export type BudgetVerdict = 'ok' | 'over_events' | 'over_bytes'

export class PageBudgets {
  private readonly buckets = new Map<string, Bucket>()
  private readonly maxBuckets: number

  constructor(
    private readonly opts: BudgetOptions,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.maxBuckets = opts.maxBuckets ?? 4096
  }

  get size(): number {
    return this.buckets.size
  }

  /** The bucket used last: an event takes from the same one twice, and events come in runs per page. */
  private last: { target: string; category: string; bucket: Bucket } | undefined

  private bucket(target: string, category: string): Bucket {
    const now = this.nowMs()
    const last = this.last
    let b = last !== undefined && last.target === target && last.category === category ? last.bucket : undefined
    if (!b) {
      const key = `${category}\0${target}`
      b = this.buckets.get(key)
      if (!b) {
        if (this.buckets.size >= this.maxBuckets) {
          this.buckets.delete(this.buckets.keys().next().value!)
          this.last = undefined // it may have been the one forgotten
        }
        const rate = this.opts.categoryEvents?.[category] ?? this.opts
        b = {
          events: rate.eventsBurst,
          bytes: this.opts.bytesBurst,
          at: now,
          eventsPerSec: rate.eventsPerSec,
          eventsBurst: rate.eventsBurst,
        }
        this.buckets.set(key, b)
        this.last = { target, category, bucket: b }
        return b
      }
      this.last = { target, category, bucket: b }
    }
    const dt = (now - b.at) / 1000
    if (dt > 0) {
      b.events = Math.min(b.eventsBurst, b.events + dt * b.eventsPerSec)
      b.bytes = Math.min(this.opts.bytesBurst, b.bytes + dt * this.opts.bytesPerSec)
      b.at = now
    }
    return b
  }

  /** Takes one event token (cheap: before the event is validated or serialised). */
  takeEvent(target: string, category: string): boolean {
    const b = this.bucket(target, category)
    if (b.events < 1) return false
    b.events -= 1
    return true
  }

  /** Takes `bytes` byte tokens once the envelope size is known. */
  takeBytes(target: string, category: string, bytes: number): boolean {
    const b = this.bucket(target, category)
    if (b.bytes < bytes) return false
    b.bytes -= bytes
    return true
  }
}
