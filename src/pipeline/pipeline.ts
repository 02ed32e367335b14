// emit(): the one way into the log. gate -> shed -> validate -> ts -> redact -> truncate -> seq/append.
// An unbuilt event (the CDP intake under backlog) takes the gate and the shedding only.
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
} from '../events/index.js'
import type { EventLog } from '../store/event-log.js'
import { silentLogger, type Logger } from '../log.js'
import { fitEvent, ENVELOPE_OVERHEAD } from './envelope-fit.js'
import { LoadShedder, defaultShedding, type ShedOptions } from './shedding.js'
import { Redactor } from '../events/redact.js'
import { DEFAULT_SETTINGS } from '../defaults.js'

export type ConfigurableCategory = Exclude<Category, 'monitor'>

/** What a producer hands to emit(): no seq, no ts, no category (fixed by type). */
export type EventInput = {
  [T in EventType]: { type: T; data: EventData<T>; source?: Source; truncated?: boolean }
}[EventType]

/**
 * Why emit() did not take an event. `category_disabled`, `shed` (the store is falling behind and
 * the event's page and category are among the loudest) and `over_budget` (a fixed cap: the
 * interaction rate; the page cap, checked once the envelope size is known) are checked before the
 * event is validated (they must stay cheap for a flooding page), so such an event may also be invalid.
 */
export type DropReason = 'invalid' | 'category_disabled' | 'over_budget' | 'shed'

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
  /** For `over_budget` and `shed`: the seq the event consumed (readers see the gap). */
  seq?: number
  accepted?: undefined
}
/** What happened to one event: test `result.dropped === undefined` (or `accepted !== undefined`). */
export type EmitResult = EmitAccepted | EmitDropped

/** The function every producer gets. Producers that do not care may ignore the result. */
export type Emit = (input: EventInput) => EmitResult

/**
 * An event not built yet, known only by its type and page: the CDP client's intake hands a raw
 * console message over before parsing it while its backlog is over its bound, so a flood is shed
 * without being parsed and the socket is read on.
 */
export interface UnbuiltInput {
  type: 'console_log' | 'console_error'
  target_id: string
  unbuilt: true
}
/** An unbuilt event that was not shed: build it and emit it as usual. */
export interface EmitPending {
  pending: true
  accepted?: undefined
  dropped?: undefined
}
/** emit() of an unbuilt event: dropped (its category off, or shed with its seq consumed) or pending. */
export type EmitUnbuilt = (input: UnbuiltInput) => EmitDropped | EmitPending

export const DEFAULT_CATEGORIES: ConfigurableCategory[] = CONFIGURABLE_CATEGORIES.filter(c => c !== 'screenshot')
export const DEFAULT_MAX_ENVELOPE_BYTES = DEFAULT_SETTINGS.maxEnvelopeBytes

export interface PipelineOptions {
  log: EventLog
  logger?: Logger
  categories?: Iterable<ConfigurableCategory>
  /** Envelope size cap in UTF-8 bytes (default 1 MiB). */
  maxEnvelopeBytes?: number
  /** Secret masking (src/events/redact.ts); default: the built-in header and parameter lists. */
  redactor?: Redactor
  /** Unix microseconds; injectable so tests can step the clock back. */
  clock?: () => number
  /** Load shedding and the fixed caps (src/pipeline/shedding.ts); default defaultShedding(512 MiB), false disables. */
  shedding?: ShedOptions | false
  /** Monotonic milliseconds for the shedding windows and caps (tests). */
  sheddingClock?: () => number
  /** The store backlog the shedding reads (tests); default the log's pendingBytes. */
  backlog?: () => number
}

/** What happened to one emit() call; observers (metrics) hear about every call, dropped ones too. */
export interface EmitObservation {
  type: string
  /** Undefined only for an unknown type. */
  category?: Category
  outcome: 'accepted' | DropReason
  truncated?: boolean
  /** The seq an over_budget or shed event consumed (a gap readers see). */
  seq?: number
}
export type EmitObserver = (o: EmitObservation) => void

export interface PipelineStats {
  accepted: number
  gated: number
  invalid: number
  truncated: number
  /** Over a fixed cap: not stored, seq consumed. */
  overBudget: number
  /** Shed under pressure: not stored, seq consumed. */
  shed: number
}

/** A drop reason is logged at most once per this interval, with the count since its last line. */
const DROP_LOG_INTERVAL_MS = 10_000

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
  readonly stats: PipelineStats = { accepted: 0, gated: 0, invalid: 0, truncated: 0, overBudget: 0, shed: 0 }
  private readonly shedder: LoadShedder | undefined
  /** Per drop reason: when it was last logged (performance.now) and the drops since. */
  private readonly dropLog = new Map<DropReason, { at: number; since: number }>()
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
    const log = opts.log
    this.shedder =
      opts.shedding === false
        ? undefined
        : new LoadShedder(
            opts.shedding ?? defaultShedding(512 * 1024 * 1024),
            opts.backlog ?? (() => log.pendingBytes),
            opts.sheddingClock,
          )
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

  emit(input: UnbuiltInput): EmitDropped | EmitPending
  emit(input: EventInput): EmitResult
  emit(input: EventInput | UnbuiltInput): EmitResult | EmitPending {
    if ('unbuilt' in input) return this.unbuilt(input)
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
    // Shedding and caps are per page: events that carry a target (everything CDP collectors emit).
    const target = this.shedder ? (input.data as { target_id?: unknown }).target_id : undefined
    if (typeof target === 'string') {
      const verdict = this.shedder!.admit(target, category)
      if (verdict !== 'ok') return this.drop(input.type, category, target, verdict)
    }
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
    // Measured once: the page cap and the store's encoder both need it.
    const bytes = typeof target === 'string' ? Buffer.byteLength(json) : undefined
    if (bytes !== undefined && !this.shedder!.takeBytes(target as string, bytes + ENVELOPE_OVERHEAD))
      return this.drop(input.type, category, target as string, 'over_budget')
    this.stats.accepted++
    const { envelope, committed } = this.log.append(event, json, bytes)
    if (this.emitObservers.size > 0)
      this.observe({ type: input.type, category, outcome: 'accepted', truncated: event.truncated === true })
    return { accepted: envelope.seq, envelope, committed }
  }

  /**
   * The intake's pressure is its own backlog, already over its bound: only the source's loudness
   * decides, and a source at or below QUIET_EVENTS_PER_SEC is never shed.
   */
  private unbuilt(input: UnbuiltInput): EmitDropped | EmitPending {
    const category = categoryOf(input.type)
    if (!this.isEnabled(category)) {
      this.stats.gated++
      if (this.emitObservers.size > 0) this.observe({ type: input.type, category, outcome: 'category_disabled' })
      return { dropped: 'category_disabled' }
    }
    if (!this.shedder || !this.shedder.loud(input.target_id, category)) return { pending: true }
    return this.drop(input.type, category, input.target_id, 'shed')
  }

  /** Not stored, but its seq is consumed so readers see the gap. */
  private drop(type: EventType, category: Category, target: string, reason: 'over_budget' | 'shed'): EmitDropped {
    const seq = this.log.skipSeq()
    if (reason === 'shed') this.stats.shed++
    else this.stats.overBudget++
    // A flooding page drops thousands a second: one line per reason per interval, then only count (/metrics).
    let l = this.dropLog.get(reason)
    if (!l) this.dropLog.set(reason, (l = { at: -Infinity, since: 0 }))
    l.since++
    const now = performance.now()
    if (now - l.at >= DROP_LOG_INTERVAL_MS) {
      this.logger.warn(
        { type, category, target_id: target, seq, reason, dropped: l.since, backlog_bytes: this.log.pendingBytes },
        reason === 'shed'
          ? 'events shed: the daemon is falling behind a loud page (store or CDP backlog)'
          : 'events over a fixed cap dropped',
      )
      l.at = now
      l.since = 0
    }
    if (this.emitObservers.size > 0) this.observe({ type, category, outcome: reason, seq })
    return { dropped: reason, seq }
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

  /** Cuts the event to the envelope cap (src/pipeline/envelope-fit.ts); returns the event JSON. */
  private fit(event: TelemetryEvent): string {
    const { json, cut } = fitEvent(event, this.maxBytes)
    if (cut) this.stats.truncated++
    return json
  }
}
