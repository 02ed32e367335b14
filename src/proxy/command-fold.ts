// Repetition folded: per session, method and step, the first FOLD_AFTER answered-ok commands of a
// second are recorded one by one; the further ok ones of that second become one record with their
// count, duration distribution and times, emitted when the second is over (a timer, if no command
// follows) or the connection ends. Input commands keep what an agent's actions are made of: the
// characters typed, summed, and the count of each event type; an input event that marks a moment
// of its own (a press, a release, a named or shortcut key) is never folded: the fold so far is
// emitted before it, so the order of the input stays readable.
import type { InputFacts } from './command-facts.js'

/** Answered-ok commands of one session and method recorded one by one per second before the rest are folded. */
export const FOLD_AFTER = 20
/** Folds (session + method) open at once per connection; past it the oldest is emitted early. */
const MAX_FOLDS = 1024

/** What a folded command brings (the command log's pending record). */
export interface Foldable {
  /** Monotonic ms it was sent. */
  startedAt: number
  requestBytes: number
  input?: InputFacts
}

/** A fold as emitted: the first command stands for it; the rest are the fields of its record. */
export interface FoldRecord {
  duration_ms: number
  request_bytes: number
  response_bytes: number
  count: number
  duration_ms_p50: number
  duration_ms_p90: number
  span_ms: number
  flush_delay_ms: number
  input_chars?: number
  input_types?: Record<string, number>
}

interface Fold<P> {
  second: number
  /** Answered-ok commands of this key in this second. */
  seen: number
  /** The first folded command (its id stands for the fold). */
  first: P | undefined
  durations: number[]
  requestBytes: number
  responseBytes: number
  /** Monotonic ms: the first folded command sent, the last one answered. */
  firstSentAt?: number
  lastAnsweredAt?: number
  chars?: number
  types?: Record<string, number>
}

/** Input events that mark a moment of their own. */
const SINGLE_INPUT_TYPES = new Set([
  'mousePressed',
  'mouseReleased',
  'mouseWheel',
  'touchStart',
  'touchEnd',
  'touchCancel',
  'rawKeyDown',
])

/** Anything may join a fold but an input event that marks a moment of its own (any key with input_key). */
function foldable(input: InputFacts | undefined): boolean {
  if (!input) return true
  if (input.input_key !== undefined) return false
  return input.input_type === undefined || !SINGLE_INPUT_TYPES.has(input.input_type)
}

export class CommandFolds<P extends Foldable> {
  private readonly folds = new Map<string, Fold<P>>()
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly now: () => number,
    private readonly emit: (first: P, fold: FoldRecord) => void,
  ) {}

  /** True when `p` (answered ok just now) was folded; false: record it one by one. */
  add(key: string, p: P, durationMs: number, responseBytes: number): boolean {
    const now = this.now()
    const second = Math.floor(now / 1000)
    let f = this.folds.get(key)
    if (f && f.second !== second) {
      this.flush(key, f)
      f = undefined
    }
    if (!f) {
      if (this.folds.size >= MAX_FOLDS) {
        const [oldKey, old] = this.folds.entries().next().value!
        this.flush(oldKey, old)
      }
      f = { second, seen: 0, first: undefined, durations: [], requestBytes: 0, responseBytes: 0 }
      this.folds.set(key, f)
    }
    if (++f.seen <= FOLD_AFTER) return false
    if (!foldable(p.input)) {
      this.emitFold(f) // the fold goes on after it, with this second's count
      return false
    }
    f.first ??= p
    f.durations.push(durationMs)
    f.requestBytes += p.requestBytes
    f.responseBytes += responseBytes
    f.firstSentAt ??= p.startedAt
    f.lastAnsweredAt = now
    if (p.input?.input_chars !== undefined) f.chars = (f.chars ?? 0) + p.input.input_chars
    const type = p.input?.input_type
    if (type !== undefined) {
      f.types ??= {}
      f.types[type] = (f.types[type] ?? 0) + 1
    }
    this.schedule()
    return true
  }

  /** Emits every fold of a second that is over (all of them when the connection ends). */
  flushAll(all: boolean): void {
    if (all && this.timer) clearTimeout(this.timer)
    if (all) this.timer = undefined
    const second = Math.floor(this.now() / 1000)
    for (const [key, f] of this.folds) if (all || f.second !== second) this.flush(key, f)
    if (!all && [...this.folds.values()].some(f => f.first)) this.schedule()
  }

  /** A second's fold is emitted once the second is over, even if no command follows. */
  private schedule(): void {
    this.timer ??= setTimeout(
      () => {
        this.timer = undefined
        this.flushAll(false)
      },
      1000 - (this.now() % 1000) + 1,
    ).unref()
  }

  private flush(key: string, f: Fold<P>): void {
    this.folds.delete(key)
    this.emitFold(f)
  }

  /** Emits what the fold holds (nothing when empty) and empties it; its second's count stays. */
  private emitFold(f: Fold<P>): void {
    const p = f.first
    if (!p) return
    const d = f.durations.sort((a, b) => a - b)
    const at = (q: number) => d[Math.min(d.length - 1, Math.floor(q * d.length))]!
    const ms = (v: number) => Math.max(0, Math.round(v * 1000) / 1000)
    this.emit(p, {
      duration_ms: d[d.length - 1]!,
      request_bytes: f.requestBytes,
      response_bytes: f.responseBytes,
      count: d.length,
      duration_ms_p50: at(0.5),
      duration_ms_p90: at(0.9),
      span_ms: ms(f.lastAnsweredAt! - f.firstSentAt!),
      flush_delay_ms: ms(this.now() - f.lastAnsweredAt!),
      ...(f.chars !== undefined ? { input_chars: f.chars } : {}),
      ...(f.types !== undefined ? { input_types: f.types } : {}),
    })
    f.first = f.firstSentAt = f.lastAnsweredAt = f.chars = f.types = undefined
    f.durations = []
    f.requestBytes = f.responseBytes = 0
  }
}
