// emit(): the one way into the log. gate -> budget -> validate -> ts -> redact -> truncate -> seq/append.
// It says what happened (EmitResult): accepted with its seq, or dropped with a reason, so no caller
// re-validates an event. Subscribers (SSE, metrics) hear about envelopes only after they are
// committed (EventLog.onCommit).
import {
  CONFIGURABLE_CATEGORIES,
  CDP_CATEGORIES,
  categoryOf,
  isEventType,
  validateAssembledEvent,
  type Category,
  type Envelope,
  type EventData,
  type EventType,
  type Source,
  type TelemetryEvent,
  type ValidationIssue,
} from './events/index.js'
import type { EventLog } from './store/event-log.js'
import { silentLogger, type Logger } from './log.js'
import { fitEvent, ENVELOPE_OVERHEAD } from './envelope-fit.js'
import { PageBudgets, DEFAULT_BUDGET, type BudgetOptions } from './budget.js'
import { Redactor } from './redact.js'
import { DEFAULT_SETTINGS } from './default-settings.js'

export type ConfigurableCategory = Exclude<Category, 'monitor'>

/** What a producer hands to emit(): no seq, no ts, no category (fixed by type). */
export type EventInput = {
  [T in EventType]: { type: T; data: EventData<T>; source?: Source; truncated?: boolean }
}[EventType]

/**
 * Why emit() did not take an event. `category_disabled` and `over_budget` are checked before the
 * event is validated (they must stay cheap for a flooding page), so a gated event may also be invalid.
 */
export type DropReason = 'invalid' | 'category_disabled' | 'over_budget'

export interface EmitAccepted {
  /** The seq the event was given. */
  accepted: number
  envelope: Envelope
  /** Resolves true once durable and visible to readers, false if the store had to drop it. */
  committed: Promise<boolean>
  dropped?: undefined
}
export interface EmitDropped {
  dropped: DropReason
  /** For `invalid`: what is wrong, as JSON pointers into the event (`/data/url`), at most 10. */
  issues?: ValidationIssue[]
  /** For `over_budget`: the seq the event consumed (readers see the gap). */
  seq?: number
  accepted?: undefined
}
/** What happened to one event: test `result.dropped === undefined` (or `accepted !== undefined`). */
export type EmitResult = EmitAccepted | EmitDropped

/** The function every producer gets. Producers that do not care may ignore the result. */
export type Emit = (input: EventInput) => EmitResult

export const DEFAULT_CATEGORIES: ConfigurableCategory[] = CONFIGURABLE_CATEGORIES.filter(c => c !== 'screenshot')
export const DEFAULT_MAX_ENVELOPE_BYTES = DEFAULT_SETTINGS.maxEnvelopeBytes

export interface PipelineOptions {
  log: EventLog
  logger?: Logger
  categories?: Iterable<ConfigurableCategory>
  /** Envelope size cap in UTF-8 bytes (default 1 MiB). */
  maxEnvelopeBytes?: number
  /** Secret masking (src/redact.ts); default: the built-in header and parameter lists. */
  redactor?: Redactor
  /** Unix microseconds; injectable so tests can step the clock back. */
  clock?: () => number
  /** Per-page budgets (per target_id and category); defaults DEFAULT_BUDGET, false disables. */
  budget?: BudgetOptions | false
  /** Monotonic milliseconds for the budget buckets (tests). */
  budgetClock?: () => number
}

/** What happened to one emit() call; observers (metrics) hear about every call, dropped ones too. */
export interface EmitObservation {
  type: string
  /** Undefined only for an unknown type. */
  category?: Category
  outcome: 'accepted' | DropReason
  truncated?: boolean
  /** The seq an over_budget event consumed (a gap readers see). */
  seq?: number
}
export type EmitObserver = (o: EmitObservation) => void

export interface PipelineStats {
  accepted: number
  gated: number
  invalid: number
  truncated: number
  /** Over a page's budget: not stored, seq consumed. */
  overBudget: number
}

export class Pipeline {
  readonly log: EventLog
  private enabled: Set<ConfigurableCategory>
  private monitorOn = false
  private readonly redactor: Redactor
  private readonly maxBytes: number
  private readonly clock: () => number
  private readonly logger: Logger
  private lastTs: number
  private invalidLogged = 0
  readonly stats: PipelineStats = { accepted: 0, gated: 0, invalid: 0, truncated: 0, overBudget: 0 }
  private readonly budgets: PageBudgets | undefined
  private overBudgetLogged = 0
  private categoryListeners = new Set<(c: ReadonlySet<Category>) => void>()
  private emitObservers = new Set<EmitObserver>()

  constructor(opts: PipelineOptions) {
    this.log = opts.log
    this.logger = opts.logger ?? silentLogger
    this.enabled = new Set(opts.categories ?? DEFAULT_CATEGORIES)
    this.updateMonitor()
    this.redactor = opts.redactor ?? new Redactor()
    this.maxBytes = opts.maxEnvelopeBytes ?? DEFAULT_MAX_ENVELOPE_BYTES
    this.clock = opts.clock ?? (() => Date.now() * 1000)
    this.lastTs = opts.log.lastStoredTs
    this.budgets = opts.budget === false ? undefined : new PageBudgets(opts.budget ?? DEFAULT_BUDGET, opts.budgetClock)
    this.emit = this.emit.bind(this)
  }

  /** Capture rule: monitor flows iff any CDP category is on; the rest are individually switched. */
  isEnabled(category: Category): boolean {
    return category === 'monitor' ? this.monitorOn : this.enabled.has(category)
  }

  /** The effective enabled set (monitor included when it flows). */
  enabledCategories(): Set<Category> {
    const s = new Set<Category>(this.enabled)
    if (this.monitorOn) s.add('monitor')
    return s
  }

  setCategories(categories: Iterable<ConfigurableCategory>): void {
    this.enabled = new Set(categories)
    this.updateMonitor()
    const eff = this.enabledCategories()
    for (const l of this.categoryListeners) l(eff)
  }

  /** Producers that do costly work (screenshots, CDP domains) listen to switch themselves on and off. */
  onCategoriesChanged(listener: (enabled: ReadonlySet<Category>) => void): () => void {
    this.categoryListeners.add(listener)
    return () => {
      this.categoryListeners.delete(listener)
    }
  }

  /** Observers must be cheap and must not throw; they run synchronously inside emit(). */
  onEmit(observer: EmitObserver): () => void {
    this.emitObservers.add(observer)
    return () => {
      this.emitObservers.delete(observer)
    }
  }

  private observe(o: EmitObservation): void {
    for (const obs of this.emitObservers) {
      try {
        obs(o)
      } catch {
        /* an observer bug must never break emit() */
      }
    }
  }

  private updateMonitor(): void {
    this.monitorOn = CDP_CATEGORIES.some(c => this.enabled.has(c as ConfigurableCategory))
  }

  emit(input: EventInput): EmitResult {
    if (!isEventType(input.type)) {
      const issues = [{ path: '/type', message: `unknown event type ${JSON.stringify(input.type)}` }]
      this.reject(input, issues)
      if (this.emitObservers.size > 0) this.observe({ type: String(input.type), outcome: 'invalid' })
      return { dropped: 'invalid', issues }
    }
    const category = categoryOf(input.type)
    if (!this.isEnabled(category)) {
      this.stats.gated++
      if (this.emitObservers.size > 0) this.observe({ type: input.type, category, outcome: 'category_disabled' })
      return { dropped: 'category_disabled' }
    }
    // Budgets are per page: events that carry a target (everything CDP collectors emit).
    const target = this.budgets ? (input.data as { target_id?: unknown }).target_id : undefined
    if (typeof target === 'string' && !this.budgets!.takeEvent(target, category))
      return this.overBudget(input.type, category, target)
    let ts = Math.floor(this.clock())
    if (ts < this.lastTs) ts = this.lastTs // non-decreasing in seq order even when the wall clock steps back
    const event = this.build(input, category, ts)
    const issues = validateAssembledEvent(event)
    if (issues.length > 0) {
      this.reject(input, issues)
      if (this.emitObservers.size > 0) this.observe({ type: input.type, category, outcome: 'invalid' })
      return { dropped: 'invalid', issues }
    }
    this.lastTs = ts
    this.redactor.event(event) // before the cap and the log: nothing downstream ever sees a secret
    const json = this.fit(event) // serialised once: the log stores exactly this
    // Measured once: the byte budget and the store's encoder both need it.
    const bytes = typeof target === 'string' ? Buffer.byteLength(json) : undefined
    if (bytes !== undefined && !this.budgets!.takeBytes(target as string, category, bytes + ENVELOPE_OVERHEAD)) {
      return this.overBudget(input.type, category, target as string)
    }
    this.stats.accepted++
    const { envelope, committed } = this.log.append(event, json, bytes)
    if (this.emitObservers.size > 0)
      this.observe({ type: input.type, category, outcome: 'accepted', truncated: event.truncated === true })
    return { accepted: envelope.seq, envelope, committed }
  }

  /** Not stored, but its seq is consumed so readers see the gap (DESIGN invariant 7). */
  private overBudget(type: EventType, category: Category, target: string): EmitDropped {
    const seq = this.log.skipSeq()
    this.stats.overBudget++
    // A flooding page drops thousands a second: say it a few times, then only count (/metrics).
    if (this.overBudgetLogged++ < 20)
      this.logger.warn({ type, category, target_id: target, seq }, 'event over the page budget dropped')
    if (this.emitObservers.size > 0) this.observe({ type, category, outcome: 'over_budget', seq })
    return { dropped: 'over_budget', seq }
  }

  private build(input: EventInput, category: Category, ts: number): TelemetryEvent {
    const event = {
      ts,
      type: input.type,
      category,
      source: input.source ?? { kind: 'local_process' },
      data: input.data,
    } as TelemetryEvent
    if (input.truncated) event.truncated = true
    return event
  }

  private reject(input: EventInput, issues: ValidationIssue[]): void {
    this.stats.invalid++
    // A buggy producer could flood the log; say it a few times, then only count.
    if (this.invalidLogged++ < 20) this.logger.warn({ type: input.type, issues }, 'dropped invalid event')
  }

  /** Cuts the event to the envelope cap (src/envelope-fit.ts); returns the event JSON. */
  private fit(event: TelemetryEvent): string {
    const { json, cut } = fitEvent(event, this.maxBytes)
    if (cut) this.stats.truncated++
    return json
  }
}
