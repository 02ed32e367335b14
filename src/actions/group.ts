// Commands -> drafts of actions, per connection and target (a stream), in the order the client sent
// them. Setup commands fold into one draft per stream wherever they fall; a run of mouse or key
// events is one draft; the script and DOM helpers right before an input or a screenshot belong to
// it; other script runs are their own drafts. Kinds and titles are settled later (derive.ts), once
// the page's own reports (clicks, keys, scrolls) are joined.
import { MODIFIER_KEYS, type Role } from './methods.js'

/** One cdp_command as the derivation keeps it. */
export interface Cmd {
  seq: number
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
  chars?: number
  key?: string
}

export type DraftKind = 'setup' | 'navigate' | 'mouse' | 'keys' | 'scroll' | 'screenshot' | 'evaluate' | 'other'

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
}

/** Script and DOM helpers this close before an input (end to next start) are its actionability checks. */
export const PREP_GAP_US = 1_000_000
/** Key strokes or mouse events further apart than this are separate actions. */
export const STROKE_GAP_US = 2_000_000

function draft(kind: DraftKind, c: Cmd): Draft {
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

function push(d: Draft, c: Cmd): void {
  d.cmds.push(c)
  if (c.start < d.start) d.start = c.start
  if (c.end > d.end) d.end = c.end
  if (c.role === 'mouse') {
    if (c.inputType === undefined) d.untyped++
    else if (c.inputType === 'mousePressed' || c.inputType === 'touchStart') d.presses++
    else if (c.inputType === 'mouseReleased' || c.inputType === 'touchEnd') d.releases++
    else if (c.inputType === 'mouseWheel') d.wheel = true
  } else if (c.role === 'key' || c.role === 'text') {
    if (c.role === 'key' && c.inputType === undefined && c.chars === undefined && c.key === undefined) d.untyped++
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

const sameStep = (a: Cmd, b: Cmd) => a.step === b.step

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
      const untyped = c.inputType === undefined && c.chars === undefined && c.key === undefined
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
 * draft. Script (eval) and helper (prep) commands wait in `pending` until the next action command:
 * the run of them that leads up to it without a gap over PREP_GAP_US (same step) is its
 * actionability check when it is an input or a screenshot; the rest become evaluate drafts (a
 * helper right after an action, with no script between, stays with that action).
 */
export function groupStream(cmds: readonly Cmd[]): Draft[] {
  const out: Draft[] = []
  let setup: Draft | undefined
  let current: Draft | undefined
  let previous: Draft | undefined
  let pending: Cmd[] = []

  const settle = (next: Cmd | undefined): Cmd[] => {
    let chain: Cmd[] = []
    if (next && TAKES_PREP.has(next.role)) {
      let i = pending.length
      let after = next
      while (i > 0) {
        const p = pending[i - 1]!
        if (!sameStep(p, next) || after.start - p.end > PREP_GAP_US) break
        after = p
        i--
      }
      chain = pending.slice(i)
      pending = pending.slice(0, i)
    }
    let group: Draft | undefined = previous
    for (const p of pending) {
      const joins =
        group !== undefined && p.role === 'prep' && sameStep(group.main, p) && p.start - group.end <= PREP_GAP_US
      if (joins) push(group!, p)
      else {
        group = draft(p.role === 'eval' ? 'evaluate' : 'other', p)
        push(group, p)
        out.push(group)
      }
    }
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
    previous = current
  }
  settle(undefined)
  return out
}
