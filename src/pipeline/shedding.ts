// Load shedding. Every event is admitted while the daemon keeps up; events are shed only while a
// measured resource is under pressure, and then from the loudest sources (target + category) first,
// so a quiet page never loses events because a loud one floods. The pressure measured is the
// store's backlog: encoded bytes appended and not yet committed. It is where a page that sends
// faster than the daemon can store shows up (as memory); the event loop itself is protected at the
// input (the CDP client handles messages in bounded slices and pauses the browser socket).
// Two fixed caps stay as a last line, sized so no legitimate page reaches them: per target, a
// share of the retention bytes (a page must not push every other page's history out of
// retention), and the interaction category's human rate (forged input events).
// Pure and clock-injectable; the pipeline decides what a refusal means (a drop that consumes its seq).
import { DEFAULT_SETTINGS } from '../defaults.js'

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

export interface ShedOptions {
  /**
   * Store backlog (encoded bytes appended, not yet committed) above which the loudest sources are
   * shed. The share of the loudest source's rate at which shedding starts falls as the backlog
   * grows: 1/2 of it up to 2x this, 1/8 up to 3x, 1/64 up to 4x; from 4x every source louder than
   * QUIET_EVENTS_PER_SEC. A quieter source is never shed.
   */
  backlogBytes: number
  /** Envelope bytes one target may store at once (the page cap's bucket). */
  pageCapBytes: number
  /** Time in which the page cap refills completely (its sustained rate is pageCapBytes per this). */
  pageCapWindowMs: number
  /** Fixed event caps of their own for some categories (interaction). */
  categoryEvents?: Partial<Record<string, CategoryEventBudget>>
  /** Sources (target + category) and targets tracked at most (oldest forgotten first). */
  maxSources?: number
}

export const DEFAULT_BACKLOG_BYTES = DEFAULT_SETTINGS.shedBacklogBytes
/** Retention bytes per page-cap bucket: a page can replace at most a quarter of the stored history at once. */
export const PAGE_CAP_SHARE = 4
export const PAGE_CAP_WINDOW_MS = 10 * 60 * 1000

/** The defaults for a store that keeps `retentionBytes`. */
export function defaultShedding(retentionBytes: number): ShedOptions {
  return {
    backlogBytes: DEFAULT_BACKLOG_BYTES,
    pageCapBytes: Math.floor(retentionBytes / PAGE_CAP_SHARE),
    pageCapWindowMs: PAGE_CAP_WINDOW_MS,
    categoryEvents: { interaction: INTERACTION_BUDGET },
  }
}

/** Loudness is counted in events per window of this length (this one and the one before). */
const WINDOW_MS = 1000
/**
 * Sources at or below this many events per second are never shed: a page loading (a few hundred
 * events per load) or logging now and then keeps everything however loud its neighbours are.
 * Bounded in sum by the attached-target cap.
 */
export const QUIET_EVENTS_PER_SEC = 100

interface Source {
  /** Window index of `cur`. */
  win: number
  cur: number
  prev: number
  /** Token bucket of a category with a fixed cap (undefined: none). */
  tokens?: number
  at?: number
  cap?: CategoryEventBudget
}

interface PageBucket {
  bytes: number
  at: number
}

/** ok; shed (under pressure, a loud source); over_budget (a fixed cap). */
export type ShedVerdict = 'ok' | 'shed' | 'over_budget'

export class LoadShedder {
  private readonly sources = new Map<string, Source>()
  private readonly pages = new Map<string, PageBucket>()
  private readonly maxSources: number
  private win = 0
  /** Highest per-source event count in this window and the one before. */
  private curMax = 0
  private prevMax = 0
  /** The source used last: events come in runs per page and category. */
  private lastKey: { target: string; category: string; source: Source } | undefined

  constructor(
    private readonly opts: ShedOptions,
    /** The store's backlog in bytes now (read once per event: must be a field read). */
    private readonly backlog: () => number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.maxSources = opts.maxSources ?? 4096
  }

  get size(): number {
    return this.sources.size
  }

  /** Decides for one event of a target before it is validated or serialised (cheap: a flood passes here). */
  admit(target: string, category: string): ShedVerdict {
    const now = this.nowMs()
    const s = this.count(target, category, now)
    const n = s.cur
    if (s.cap) {
      s.tokens = Math.min(s.cap.eventsBurst, s.tokens! + ((now - s.at!) / 1000) * s.cap.eventsPerSec)
      s.at = now
      if (s.tokens < 1) return 'over_budget'
      s.tokens -= 1
    }
    const level = this.backlog() / this.opts.backlogBytes
    if (level <= 1) return 'ok'
    const loud = n > s.prev ? n : s.prev
    if (loud <= QUIET_EVENTS_PER_SEC) return 'ok'
    if (level >= 4) return 'shed'
    const max = this.curMax > this.prevMax ? this.curMax : this.prevMax
    const share = level < 2 ? 1 / 2 : level < 3 ? 1 / 8 : 1 / 64
    return loud >= max * share ? 'shed' : 'ok'
  }

  /**
   * For an event refused before it was built (the CDP client's backlog is the pressure there):
   * counts it like admit() and says whether its source is loud enough to be shed. A source at or
   * below QUIET_EVENTS_PER_SEC never is.
   */
  loud(target: string, category: string): boolean {
    const s = this.count(target, category, this.nowMs())
    return (s.cur > s.prev ? s.cur : s.prev) > QUIET_EVENTS_PER_SEC
  }

  /** Counts one event of a source in the current window; returns the source. */
  private count(target: string, category: string, now: number): Source {
    const win = Math.floor(now / WINDOW_MS)
    if (win !== this.win) {
      this.prevMax = win === this.win + 1 ? this.curMax : 0
      this.curMax = 0
      this.win = win
    }
    const s = this.source(target, category)
    if (s.win !== win) {
      s.prev = s.win === win - 1 ? s.cur : 0
      s.cur = 0
      s.win = win
    }
    const n = ++s.cur
    if (n > this.curMax) this.curMax = n
    return s
  }

  /** Takes `bytes` from the target's page cap once the envelope size is known; false when over it. */
  takeBytes(target: string, bytes: number): boolean {
    const now = this.nowMs()
    let b = this.pages.get(target)
    if (!b) {
      if (this.pages.size >= this.maxSources) this.pages.delete(this.pages.keys().next().value!)
      b = { bytes: this.opts.pageCapBytes, at: now }
      this.pages.set(target, b)
    } else if (now > b.at) {
      b.bytes = Math.min(
        this.opts.pageCapBytes,
        b.bytes + ((now - b.at) / this.opts.pageCapWindowMs) * this.opts.pageCapBytes,
      )
      b.at = now
    }
    if (b.bytes < bytes) return false
    b.bytes -= bytes
    return true
  }

  private source(target: string, category: string): Source {
    const last = this.lastKey
    if (last !== undefined && last.target === target && last.category === category) return last.source
    const key = `${category}\0${target}`
    let s = this.sources.get(key)
    if (!s) {
      if (this.sources.size >= this.maxSources) this.sources.delete(this.sources.keys().next().value!)
      s = { win: this.win, cur: 0, prev: 0 }
      const cap = this.opts.categoryEvents?.[category]
      if (cap) {
        s.cap = cap
        s.tokens = cap.eventsBurst
        s.at = this.nowMs()
      }
      this.sources.set(key, s)
    }
    this.lastKey = { target, category, source: s }
    return s
  }
}
