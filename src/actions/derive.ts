// Actions from a window of envelopes: the agent's commands grouped (group.ts), joined with what the
// page reported (the element clicked, keys, scrolls) and with what followed on the same target (the
// effects). ActionBuilder takes envelopes one at a time in seq order and keeps only a small record
// of the ones that matter, so an export can feed it page by page; deriveActions is the one-call form.
import type { Category, Envelope } from '../events/index.js'
import { Redactor } from '../events/redact.js'
import { groupStream, type Cmd, type Draft } from './group.js'
import { isNamedKey, MODIFIER_KEYS, roleOf } from './methods.js'
import type { Action, ActionEffects, ActionKind } from './types.js'

/** What the page reported, reduced to what actions need (never a typed character). */
type PageKind =
  | 'nav'
  | 'settled'
  | 'request'
  | 'failed'
  | 'console_error'
  | 'dialog'
  | 'download'
  | 'crash'
  | 'click'
  | 'key'
  | 'scroll'
interface PageRec {
  seq: number
  ts: number
  kind: PageKind
  /** nav: the URL; click and key: the element's selector; scroll: the scrolled element's. */
  text?: string
  /** key: the key's name when it is a named key (Enter), else undefined (a character). */
  key?: string
  /** failed: the request, so a response >= 400 and a failure of one request count once. */
  request?: string
}

/** The categories of every event actions read (commands and steps are control events). */
export const ACTION_CATEGORIES: readonly Category[] = ['control', 'page', 'network', 'console', 'interaction']

/** An interaction this long after an action's last answer still belongs to it (page reports arrive late). */
export const JOIN_US = 1_000_000

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

export class ActionBuilder {
  private readonly cmds: Cmd[] = []
  private readonly page = new Map<string, PageRec[]>()
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
      const c: Cmd = {
        seq: e.seq,
        id: d.id,
        start: Math.round(ev.ts - d.duration_ms * 1000),
        end: ev.ts,
        method: this.intern(d.method),
        role: roleOf(d.method),
        conn: this.intern(d.connection_id),
        failed: d.outcome !== 'ok',
      }
      if (d.target_id !== undefined) c.target = this.intern(d.target_id)
      if (d.step_id !== undefined) c.step = this.intern(d.step_id)
      if (d.input_type !== undefined) c.inputType = this.intern(d.input_type)
      if (d.input_chars !== undefined) c.chars = d.input_chars
      if (d.input_key !== undefined) c.key = this.intern(d.input_key)
      this.cmds.push(c)
      this.records++
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
    const drafts: Draft[] = []
    for (const s of streams.values()) {
      s.sort((a, b) => a.id - b.id || a.seq - b.seq)
      drafts.push(...groupStream(s))
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
      countEffects(joins, list, recs)
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

function pageRecord(e: Envelope): PageRec | undefined {
  const ev = e.event
  const at = { seq: e.seq, ts: ev.ts }
  switch (ev.type) {
    case 'page_navigation':
      return ev.data.parent_frame_id === undefined ? { ...at, kind: 'nav', text: ev.data.url ?? '' } : undefined
    case 'page_navigation_settled':
      return { ...at, kind: 'settled' }
    case 'network_request':
      return { ...at, kind: 'request' }
    case 'network_response':
      return ev.data.status >= 400
        ? { ...at, kind: 'failed', request: `${ev.data.session_id ?? ''}\u0000${ev.data.request_id}` }
        : undefined
    case 'network_loading_failed':
      return { ...at, kind: 'failed', request: `${ev.data.session_id ?? ''}\u0000${ev.data.request_id}` }
    case 'console_error':
      return { ...at, kind: 'console_error' }
    case 'console_log':
      return ev.data.level === 'error' ? { ...at, kind: 'console_error' } : undefined
    case 'page_dialog_opened':
      return { ...at, kind: 'dialog' }
    case 'page_download_started':
      return { ...at, kind: 'download' }
    case 'page_crashed':
      return { ...at, kind: 'crash' }
    case 'interaction_click':
      return { ...at, kind: 'click', text: ev.data.selector }
    case 'interaction_key': {
      const rec: PageRec = { ...at, kind: 'key', text: ev.data.selector }
      if (isNamedKey(ev.data.key)) rec.key = ev.data.key
      return rec
    }
    case 'interaction_scroll_settled':
      return { ...at, kind: 'scroll', text: ev.data.target_selector }
    default:
      return undefined
  }
}

/** Effects of an action that caused nothing (also the start of a sum). */
export const noEffects = (): ActionEffects => ({
  navigations: 0,
  requests: 0,
  failed_requests: 0,
  console_errors: 0,
  dialogs: 0,
  downloads: 0,
  crashed: false,
})

/** The draft as an action before joins: kind and title are provisional (settle() fixes them). */
function toAction(d: Draft): Action {
  const seqs = d.cmds.map(c => c.seq).sort((a, b) => a - b)
  const a: Action = {
    action_id: `a${seqs[0]!}`,
    kind: 'other',
    title: '',
    connection_id: d.conn,
    start_ts: d.start,
    end_ts: d.end,
    outcome: d.cmds.some(c => c.failed) ? 'error' : 'ok',
    command_seqs: seqs,
    effects: noEffects(),
  }
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

/** Page reports joined to the input action they came from (per draft, by the draft object). */
interface Joined {
  clickSelector?: string
  keySelector?: string
  /** Named keys the page saw (Enter), and how many characters (never which). */
  keyNames: string[]
  keyChars: number
  scrollSelector?: string
  navUrl?: string
}
type Joins = Map<Draft, Joined>
const joinedOf = (joins: Joins, d: Draft): Joined => {
  let j = joins.get(d)
  if (!j) joins.set(d, (j = { keyNames: [], keyChars: 0 }))
  return j
}

/**
 * Each click, key and scroll report goes to the latest input action of its target that started at
 * or before it and answered no more than JOIN_US before it: clicks to mouse actions, keys to key
 * actions, scrolls to scroll and mouse actions. list is in start order.
 */
function joinInteractions(joins: Joins, list: readonly { d: Draft; a: Action }[], recs: readonly PageRec[]): void {
  const starts = list.map(x => x.a.start_ts)
  for (const r of recs) {
    if (r.kind !== 'click' && r.kind !== 'key' && r.kind !== 'scroll') continue
    const wants = r.kind === 'key' ? ['keys'] : r.kind === 'click' ? ['mouse'] : ['mouse', 'scroll']
    for (let i = lastAtOrBefore(starts, r.ts), tries = 0; i >= 0 && tries < 4; i--, tries++) {
      const d = list[i]!.d
      if (r.ts > d.end + JOIN_US) break
      if (!wants.includes(d.kind)) continue
      const j = joinedOf(joins, d)
      if (r.kind === 'click') {
        if (j.clickSelector !== undefined) continue
        j.clickSelector = r.text
      } else if (r.kind === 'key') {
        j.keySelector ??= r.text
        if (r.key !== undefined) j.keyNames.push(r.key)
        else j.keyChars++
      } else j.scrollSelector ??= r.text
      break
    }
  }
}

/** Index of the last value <= x in an ascending array (-1 when none). */
function lastAtOrBefore(sorted: readonly number[], x: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (sorted[mid]! <= x) lo = mid + 1
    else hi = mid
  }
  return lo - 1
}

/**
 * Effects: each report of the target counts for the action whose window holds it: from the action's
 * start until the next action on the target starts, or for a navigate until the
 * page_navigation_settled that follows its navigation, if that comes first. Both lists are in
 * order (actions by start, reports by seq, whose ts never decreases), so one merge pass.
 */
function countEffects(joins: Joins, list: readonly { d: Draft; a: Action }[], recs: readonly PageRec[]): void {
  let i = -1
  let closed = false
  const failed = new Set<string>()
  const close = (a: Action, at: number) => {
    a.effects_end_ts = at
    closed = true
  }
  for (const r of recs) {
    while (i + 1 < list.length && list[i + 1]!.a.start_ts <= r.ts) {
      if (i >= 0 && !closed) close(list[i]!.a, list[i + 1]!.a.start_ts)
      i++
      closed = false
      failed.clear()
    }
    if (i < 0 || closed) continue
    const { d, a } = list[i]!
    const e = a.effects
    switch (r.kind) {
      case 'nav':
        e.navigations++
        if (d.kind === 'navigate') {
          const j = joinedOf(joins, d)
          if (j.navUrl === undefined) {
            j.navUrl = r.text
            if (r.ts > a.end_ts) a.end_ts = r.ts
          }
        }
        break
      case 'settled':
        if (d.kind === 'navigate' && joinedOf(joins, d).navUrl !== undefined) close(a, r.ts)
        break
      case 'request':
        e.requests++
        break
      case 'failed':
        if (!failed.has(r.request!)) {
          failed.add(r.request!)
          e.failed_requests++
        }
        break
      case 'console_error':
        e.console_errors++
        break
      case 'dialog':
        e.dialogs++
        break
      case 'download':
        e.downloads++
        break
      case 'crash':
        e.crashed = true
        break
      default:
        break
    }
  }
  // Windows that no report closed end where the next action starts.
  for (let k = 0; k + 1 < list.length; k++) list[k]!.a.effects_end_ts ??= list[k + 1]!.a.start_ts
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`

/** A navigation title's URL part at most (path and query), in characters; longer ones end in "…". */
export const URL_TITLE_MAX = 120
/** The URL rule the pipeline applies, applied again: a window may come from a bundle or an older daemon. */
const urlRedactor = new Redactor()

/**
 * The title of a URL: its path and query (http, https, file), secrets in the query masked by the
 * URL redaction rule, cut to URL_TITLE_MAX; the URL itself for about:, else its scheme. Without the
 * query, one page of a single-page app opened with different parameters would read the same.
 */
export function pathOf(url: string): string {
  if (url.startsWith('about:')) return url
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return '(unknown page)'
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'file:') return `${u.protocol}…`
  // The query as written (not re-encoded by URL), without the fragment.
  const q = url.indexOf('?')
  const hash = url.indexOf('#')
  const query = q >= 0 && (hash < 0 || q < hash) ? url.slice(q, hash < 0 ? url.length : hash) : ''
  return cut(u.pathname + (query.length > 1 ? `?${urlRedactor.params(query.slice(1))}` : ''), URL_TITLE_MAX)
}

/** `s` cut to at most `max` code points, the last one "…" when cut. */
function cut(s: string, max: number): string {
  if (s.length <= max) return s
  const points = [...s]
  return points.length <= max ? s : points.slice(0, max - 1).join('') + '…'
}

/** Kind and title, now that the page's reports are joined. */
function settle(joins: Joins, d: Draft, a: Action): void {
  const j = joins.get(d) ?? { keyNames: [], keyChars: 0 }
  const [kind, title] = kindAndTitle(d, j)
  a.kind = kind
  a.title = title
}

function kindAndTitle(d: Draft, j: Joined): [ActionKind, string] {
  switch (d.kind) {
    case 'setup':
      return ['setup', `set up (${plural(d.cmds.length, 'command')})`]
    case 'navigate': {
      const verb = d.main.method === 'Page.reload' ? 'reload' : 'go to'
      return [
        'navigate',
        j.navUrl !== undefined ? `${verb} ${pathOf(j.navUrl)}` : verb === 'reload' ? 'reload' : 'navigate',
      ]
    }
    case 'screenshot':
      return ['screenshot', 'take a screenshot']
    case 'evaluate':
      return ['evaluate', 'evaluate']
    case 'scroll':
      return ['scroll', j.scrollSelector !== undefined ? `scroll ${j.scrollSelector}` : 'scroll']
    case 'mouse': {
      const at = j.clickSelector !== undefined ? ` ${j.clickSelector}` : ''
      if (d.wheel) return ['scroll', j.scrollSelector !== undefined ? `scroll ${j.scrollSelector}` : 'scroll']
      if (d.presses >= 2) return ['click', `double-click${at}`]
      if (d.presses === 1) return ['click', `click${at}`]
      if (d.untyped > 0) {
        if (j.clickSelector !== undefined || d.untyped >= 2) return ['click', `click${at}`]
        if (j.scrollSelector !== undefined) return ['scroll', `scroll ${j.scrollSelector}`]
      }
      return ['other', 'move the mouse']
    }
    case 'keys': {
      const into = j.keySelector !== undefined ? ` into ${j.keySelector}` : ''
      if (
        d.untyped > 0 &&
        d.untyped === d.cmds.filter(c => c.role === 'key').length &&
        !d.cmds.some(c => c.role === 'text')
      ) {
        // Recorded without input fields: what the page saw decides (named keys, or how many characters).
        if (j.keyNames.length > 0 && j.keyChars === 0) return ['press', `press ${dedupe(j.keyNames).join('+')}`]
        if (j.keyChars > 0) return ['type', `type ${plural(j.keyChars, 'character')}${into}`]
        return ['press', 'press a key']
      }
      if (d.named.length > 0) {
        const extra = d.charsKnown && d.named.every(k => MODIFIER_KEYS.has(k)) ? '+character' : ''
        return ['press', `press ${d.named.join('+')}${extra}`]
      }
      if (d.charsKnown) return ['type', `type ${plural(d.chars, 'character')}${into}`]
      return ['type', `type text${into}`]
    }
    default: {
      const n = d.cmds.length
      return ['other', n > 1 ? `${d.main.method} ×${n}` : d.main.method]
    }
  }
}

const dedupe = (xs: string[]) => [...new Set(xs)]
