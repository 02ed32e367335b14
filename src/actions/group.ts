// Commands -> drafts of actions, per connection and target (a stream), in the order the client sent
// them. Setup commands fold into one draft per stream wherever they fall; a run of mouse or key
// events is one draft; the script and DOM helpers right before an input or a screenshot belong to
// it; other script runs are their own drafts. Kinds and titles are settled later (derive.ts), once
// the page's own reports (clicks, keys, scrolls) are joined.
import { MODIFIER_KEYS, type Role } from './methods.js'

/** One cdp_command as the derivation keeps it. */
export interface Cmd {
  seq: number
  /** The client's command id: CDP clients number commands in the order they send them. */
  id: number
  /** Unix microseconds: sent (ts - duration) and answered (ts). */
  start: number
  end: number
  method: string
  role: Role
  conn: string
  target?: string
  step?: string
  failed: boolean
  inputType?: string
  /** A fold of input events: the event types it holds. */
  inputTypes?: string[]
  chars?: number
  key?: string
}

/** Whether a key or text command says what it did (older proxies recorded key events without it). */
const described = (c: Cmd) =>
  c.inputType !== undefined || c.inputTypes !== undefined || c.chars !== undefined || c.key !== undefined

export type DraftKind =
  | 'setup'
  | 'navigate'
  | 'mouse'
  | 'keys'
  | 'scroll'
  | 'screenshot'
  | 'evaluate'
  | 'other'
  /** An input call that failed before it sent its input (attempts.ts). */
  | 'attempt'

export interface Draft {
  kind: DraftKind
  conn: string
  target?: string
  /** Every command, in the order sent. */
  cmds: Cmd[]
  /** The command that made the draft (its step is the draft's). */
  main: Cmd
  start: number
  end: number
  /** Mouse: presses and releases seen, a wheel, commands without an input type. */
  presses: number
  releases: number
  wheel: boolean
  /** Keys: characters typed, named keys pressed (in order), keys held down now. */
  chars: number
  charsKnown: boolean
  named: string[]
  held: Set<string>
  /** Input events recorded without input_type (older proxies): kinds come from the page's reports. */
  untyped: number
  /** An attempt: what the call was and the error its step ended with. */
  attempt?: Attempt
}

/** A failed input call as its step's error names it. */
export interface Attempt {
  kind: 'click' | 'type' | 'press' | 'other'
  title: string
  error: string
}

/** Script and DOM helpers this close before an input (end to next start) are its actionability checks. */
export const PREP_GAP_US = 1_000_000
/** Key strokes or mouse events further apart than this are separate actions. */
export const STROKE_GAP_US = 2_000_000

export function draft(kind: DraftKind, c: Cmd): Draft {
  return {
    kind,
    conn: c.conn,
    ...(c.target !== undefined ? { target: c.target } : {}),
    cmds: [],
    main: c,
    start: c.start,
    end: c.end,
    presses: 0,
    releases: 0,
    wheel: false,
    chars: 0,
    charsKnown: false,
    named: [],
    held: new Set(),
    untyped: 0,
  }
}

export function push(d: Draft, c: Cmd): void {
  d.cmds.push(c)
  if (c.start < d.start) d.start = c.start
  if (c.end > d.end) d.end = c.end
  if (c.role === 'mouse') {
    if (c.inputType === undefined) d.untyped++
    else if (c.inputType === 'mousePressed' || c.inputType === 'touchStart') d.presses++
    else if (c.inputType === 'mouseReleased' || c.inputType === 'touchEnd') d.releases++
    else if (c.inputType === 'mouseWheel') d.wheel = true
  } else if (c.role === 'key' || c.role === 'text') {
    if (c.role === 'key' && !described(c)) d.untyped++
    if (c.chars !== undefined && c.inputType !== 'keyUp') {
      d.chars += c.chars
      d.charsKnown = true
    }
    if (c.key !== undefined) {
      if (c.inputType === 'keyUp') d.held.delete(c.key)
      else if (c.inputType !== 'char') {
        if (!d.named.includes(c.key)) d.named.push(c.key)
        d.held.add(c.key)
      }
    }
  }
}

export const sameStep = (a: Cmd, b: Cmd) => a.step === b.step

/** Whether command c (nothing else between) carries on the open draft d. */
function continues(d: Draft, c: Cmd): boolean {
  if (!sameStep(d.main, c) || c.start - d.end > STROKE_GAP_US) return false
  switch (d.kind) {
    case 'mouse': {
      if (c.role !== 'mouse') return false
      if (c.inputType === undefined || d.untyped > 0) return c.inputType === undefined && d.untyped > 0
      const open = d.presses > d.releases
      if (c.inputType === 'mouseReleased' || c.inputType === 'touchEnd' || c.inputType === 'touchMove') return true
      if (c.inputType === 'mouseMoved') return open || d.presses === 0
      if (c.inputType === 'mousePressed' || c.inputType === 'touchStart')
        return !d.wheel && (d.presses === 0 || (!open && d.presses < 3))
      if (c.inputType === 'mouseWheel') return d.presses === 0
      return false
    }
    case 'keys': {
      if (c.role === 'text') return d.named.length === 0
      if (c.role !== 'key') return false
      const untyped = !described(c)
      if (untyped || d.untyped > 0) return untyped && d.untyped > 0
      // Key up, char: the stroke goes on. A key down: a new press, unless a modifier is held.
      if (c.inputType === 'keyUp' || c.inputType === 'char') return true
      const heldModifier = [...d.held].some(k => MODIFIER_KEYS.has(k))
      if (heldModifier) return true
      if (c.key !== undefined) return false
      return d.named.length === 0
    }
    case 'other':
      return c.role === 'other' && c.method === d.main.method && c.start - d.end <= PREP_GAP_US
    default:
      return false
  }
}

const KIND_OF_ROLE: Partial<Record<Role, DraftKind>> = {
  navigate: 'navigate',
  mouse: 'mouse',
  key: 'keys',
  text: 'keys',
  scroll: 'scroll',
  screenshot: 'screenshot',
  other: 'other',
}

/** Roles whose action takes the actionability checks sent right before it. */
const TAKES_PREP = new Set<Role>(['mouse', 'key', 'text', 'scroll', 'screenshot'])

/**
 * The drafts of one stream's commands (already in send order). Setup commands go to one setup
 * draft. Script (eval) and helper (prep) commands wait in `pending` until the next action command
 * (or the end), then are shared out: the run that follows the previous action without a gap over
 * PREP_GAP_US is its tail (helpers; for a mouse action also script calls: Playwright checks the hit
 * target after a click; for a navigate, every call of its step sent while its navigation was
 * loading, up to `loadedAt`), the run that leads up to an input or a screenshot the same way is its
 * actionability check, and what lies between becomes evaluate drafts. When the two runs meet (a
 * script that goes straight on), they are cut at the longest pause before a script call.
 */
export function groupStream(cmds: readonly Cmd[], loadedAt?: (navigate: Cmd) => number | undefined): Draft[] {
  const out: Draft[] = []
  let setup: Draft | undefined
  let current: Draft | undefined
  let pending: Cmd[] = []

  /** Shares out `pending` between the previous draft, new evaluate drafts and `next` (returned). */
  const settle = (next: Cmd | undefined): Cmd[] => {
    const prev = current
    // The tail of the previous action: [0, tail).
    let tail = 0
    if (prev) {
      // A navigation still loading: the client's script calls meanwhile (Playwright waiting for
      // the page or an element) are part of going there.
      const loaded = prev.kind === 'navigate' ? loadedAt?.(prev.main) : undefined
      let end = prev.end
      while (tail < pending.length) {
        const p = pending[tail]!
        if (!sameStep(prev.main, p)) break
        if (loaded === undefined || p.start >= loaded) {
          if (p.start - end > PREP_GAP_US) break
          if (p.role === 'eval' && prev.kind !== 'mouse') break
        }
        end = Math.max(end, p.end)
        tail++
      }
    }
    // The actionability check of the next input: [lead, length).
    let lead = pending.length
    if (next && TAKES_PREP.has(next.role)) {
      let after = next
      while (lead > 0) {
        const p = pending[lead - 1]!
        if (!sameStep(p, next) || after.start - p.end > PREP_GAP_US) break
        after = p
        lead--
      }
    }
    if (lead < tail) {
      // One unbroken run: cut before the script call (or at the run's end) after the longest pause.
      let cut = tail
      let longest = -Infinity
      for (let k = lead; k <= tail; k++) {
        if (k < tail && pending[k]!.role !== 'eval') continue
        const before = k === 0 ? prev!.end : pending[k - 1]!.end
        const after = k === pending.length ? next!.start : pending[k]!.start
        if (after - before > longest) {
          longest = after - before
          cut = k
        }
      }
      tail = lead = cut
    }
    for (const p of pending.slice(0, tail)) push(prev!, p)
    let group: Draft | undefined
    for (const p of pending.slice(tail, lead)) {
      if (group && p.role === 'prep' && sameStep(group.main, p) && p.start - group.end <= PREP_GAP_US) push(group, p)
      else {
        group = draft(p.role === 'eval' ? 'evaluate' : 'other', p)
        push(group, p)
        out.push(group)
      }
    }
    const chain = pending.slice(lead)
    pending = []
    return chain
  }

  for (const c of cmds) {
    if (c.role === 'setup') {
      if (!setup) {
        setup = draft('setup', c)
        out.push(setup)
      }
      push(setup, c)
      continue
    }
    if (c.role === 'eval' || c.role === 'prep') {
      pending.push(c)
      continue
    }
    if (current && pending.length === 0 && continues(current, c)) {
      push(current, c)
      continue
    }
    const chain = settle(c)
    current = draft(KIND_OF_ROLE[c.role] ?? 'other', c)
    for (const p of chain) push(current, p)
    push(current, c)
    out.push(current)
  }
  settle(undefined)
  return joinTyping(out)
}

/** A draft of typed text: characters, with nothing but Shift among its keys (Shift+A types "A"). */
export function isTyping(d: Draft): boolean {
  return d.kind === 'keys' && d.untyped === 0 && d.charsKnown && d.named.every(k => k === 'Shift')
}

/**
 * One typing run is one action: a draft of typed text that goes straight on from the previous one
 * (a capital typed with Shift starts a draft of its own above) joins it, when nothing else of the
 * stream came between, in the same step and no more than STROKE_GAP_US apart.
 */
function joinTyping(drafts: Draft[]): Draft[] {
  const out: Draft[] = []
  let last: Draft | undefined
  for (const d of drafts) {
    if (d.kind === 'setup') {
      out.push(d)
      continue
    }
    const first = d.cmds[0]!
    if (
      last &&
      isTyping(last) &&
      isTyping(d) &&
      (first.role === 'key' || first.role === 'text') &&
      sameStep(last.main, d.main) &&
      d.start - last.end <= STROKE_GAP_US
    ) {
      for (const c of d.cmds) push(last, c)
      continue
    }
    out.push(d)
    last = d
  }
  return out
}
