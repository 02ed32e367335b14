// Actions from a window of envelopes: the agent's commands grouped (group.ts), joined with what the
// page reported (the element clicked, keys, scrolls) and with what followed on the same target (the
// effects). ActionBuilder takes envelopes one at a time in seq order and keeps only a small record
// of the ones that matter, so an export can feed it page by page; deriveActions is the one-call form.
import type { Category, Envelope } from '../events/index.js'
import { attemptOf, markAttempts } from './attempts.js'
import { countEffects, noEffects } from './effects.js'
import { groupStream, type Cmd, type Draft } from './group.js'
import { joinInteractions, type Joins } from './join.js'
import { roleOf } from './methods.js'
import { LoadTimes, pageRecord, type PageRec } from './page.js'
import { kindAndTitle } from './titles.js'
import type { Action } from './types.js'

export { JOIN_US } from './join.js'
export { noEffects } from './effects.js'
export { pathOf, URL_TITLE_MAX } from './titles.js'

/** The categories of every event actions read (commands and steps are control events). */
export const ACTION_CATEGORIES: readonly Category[] = ['control', 'page', 'network', 'console', 'interaction']

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

export class ActionBuilder {
  private readonly cmds: Cmd[] = []
  private readonly page = new Map<string, PageRec[]>()
  /** Failed steps whose error names an input call: step id -> error message. */
  private readonly stepErrors = new Map<string, string>()
  /** One copy of each repeated string (connection, target, step ids, methods, selectors). */
  private readonly strings = new Map<string, string>()
  private records = 0

  private intern(s: string): string {
    const known = this.strings.get(s)
    if (known !== undefined) return known
    if (this.strings.size < 100_000) this.strings.set(s, s)
    return s
  }

  /** Records kept so far (commands and page reports): what a caller bounds. */
  get size(): number {
    return this.records
  }

  /** One envelope, in seq order; the ones actions do not read are ignored. */
  add(e: Envelope): void {
    const ev = e.event
    if (ev.type === 'cdp_command') {
      const d = ev.data
      // A fold is emitted after its second: its own times say when its commands ran.
      const folded = d.span_ms !== undefined && d.flush_delay_ms !== undefined
      const end = folded ? Math.round(ev.ts - d.flush_delay_ms! * 1000) : ev.ts
      const c: Cmd = {
        seq: e.seq,
        id: d.id,
        start: Math.round(end - (folded ? d.span_ms! : d.duration_ms) * 1000),
        end,
        method: this.intern(d.method),
        role: roleOf(d.method),
        conn: this.intern(d.connection_id),
        failed: d.outcome !== 'ok',
      }
      if (d.target_id !== undefined) c.target = this.intern(d.target_id)
      if (d.step_id !== undefined) c.step = this.intern(d.step_id)
      if (d.input_type !== undefined) c.inputType = this.intern(d.input_type)
      if (d.input_types !== undefined) {
        const types = Object.keys(d.input_types)
        c.inputTypes = types.map(t => this.intern(t))
        // A fold of one event type (mouse moves) reads like one of its commands.
        if (types.length === 1 && c.inputType === undefined) c.inputType = c.inputTypes[0]
      }
      if (d.input_chars !== undefined) c.chars = d.input_chars
      if (d.input_key !== undefined) c.key = this.intern(d.input_key)
      this.cmds.push(c)
      this.records++
      return
    }
    if (ev.type === 'agent_step_finished') {
      // Only a failed step whose error names an input call matters (attempts.ts).
      const d = ev.data
      if (d.outcome === 'error' && d.error_message !== undefined && attemptOf(d.error_message)) {
        this.stepErrors.set(this.intern(d.step_id), d.error_message)
        this.records++
      }
      return
    }
    const d = ev.data as { target_id?: unknown }
    const target = str(d.target_id)
    if (target === undefined) return
    const rec = pageRecord(e)
    if (!rec) return
    if (rec.text !== undefined && rec.kind !== 'nav') rec.text = this.intern(rec.text)
    let list = this.page.get(target)
    if (!list) this.page.set(target, (list = []))
    list.push(rec)
    this.records++
  }

  /** The actions of everything added, ordered by start (then first seq). */
  finish(): Action[] {
    // Streams: one per connection and target, each in the order its commands were sent: the
    // client's ids. Not the estimated send time (answer ts at ms resolution minus the duration):
    // Playwright sends a click's move, press and release in the same millisecond, and Chromium may
    // answer the move last (mouse moves are acknowledged with the next frame).
    const streams = new Map<string, Cmd[]>()
    for (const c of this.cmds) {
      const key = `${c.conn}\u0000${c.target ?? ''}`
      let s = streams.get(key)
      if (!s) streams.set(key, (s = []))
      s.push(c)
    }
    const loads = new Map<string, LoadTimes>()
    const loadTimes = (target: string) => {
      let l = loads.get(target)
      if (!l) loads.set(target, (l = new LoadTimes(this.page.get(target) ?? [])))
      return l
    }
    const loadedAt = (c: Cmd) => (c.target === undefined ? undefined : loadTimes(c.target).loadedAt(c.start, c.end))
    const drafts: Draft[] = []
    for (const s of streams.values()) {
      s.sort((a, b) => a.id - b.id || a.seq - b.seq)
      drafts.push(...markAttempts(groupStream(s, loadedAt), this.stepErrors))
    }
    const actions = drafts.map(d => ({ d, a: toAction(d) }))
    const joins: Joins = new Map()
    // Per target: the actions in start order partition the target's time into effects windows.
    const byTarget = new Map<string, { d: Draft; a: Action }[]>()
    for (const x of actions) {
      if (x.a.target_id === undefined) continue
      let l = byTarget.get(x.a.target_id)
      if (!l) byTarget.set(x.a.target_id, (l = []))
      l.push(x)
    }
    for (const [target, list] of byTarget) {
      list.sort((x, y) => x.a.start_ts - y.a.start_ts || x.a.command_seqs[0]! - y.a.command_seqs[0]!)
      const recs = this.page.get(target) ?? []
      joinInteractions(joins, list, recs)
      countEffects(joins, list, recs, d => loadedAt(d.main))
    }
    for (const x of actions) settle(joins, x.d, x.a)
    return actions.map(x => x.a).sort((a, b) => a.start_ts - b.start_ts || a.command_seqs[0]! - b.command_seqs[0]!)
  }
}

/** The actions of a window of envelopes (in seq order). */
export function deriveActions(envelopes: Iterable<Envelope>): Action[] {
  const b = new ActionBuilder()
  for (const e of envelopes) b.add(e)
  return b.finish()
}

/** The draft as an action before joins: kind and title are provisional (settle() fixes them). */
function toAction(d: Draft): Action {
  const seqs = d.cmds.map(c => c.seq).sort((a, b) => a - b)
  // A navigation's window holds the client's own calls while the page loads, and those into the
  // contexts the navigation destroys fail routinely: only the navigate command itself decides.
  const failed = d.kind === 'navigate' ? d.main.failed : d.cmds.some(c => c.failed)
  const a: Action = {
    action_id: `a${seqs[0]!}`,
    kind: 'other',
    title: '',
    connection_id: d.conn,
    start_ts: d.start,
    end_ts: d.end,
    outcome: d.attempt || failed ? 'error' : 'ok',
    command_seqs: seqs,
    effects: noEffects(),
  }
  if (d.attempt) a.error_message = d.attempt.error
  const step = stepOf(d)
  if (step !== undefined) a.step_id = step
  if (d.target !== undefined) a.target_id = d.target
  return a
}

/** The draft's step: its main command's, or for setup the one all its commands share. */
function stepOf(d: Draft): string | undefined {
  if (d.kind !== 'setup') return d.main.step ?? d.cmds.find(c => c.step !== undefined)?.step
  const first = d.cmds[0]!.step
  return d.cmds.every(c => c.step === first) ? first : undefined
}

/** Kind and title, now that the page's reports are joined. */
function settle(joins: Joins, d: Draft, a: Action): void {
  const j = joins.get(d) ?? { keyNames: [], keyChars: 0 }
  const [kind, title] = kindAndTitle(d, j)
  a.kind = kind
  a.title = title
}
