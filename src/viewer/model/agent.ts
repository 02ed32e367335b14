// The Agent panel: steps -> actions -> commands as one list of tree rows. Steps and actions come
// from src/actions (the same derivation the API and the bundle serve); the tree is built here:
// steps nest by parent, each action sits under its step, and every setup action goes into one
// Setup group listed last, so the first screen shows what the agent did, not how it prepared.
import { deriveActions, noEffects, stepsOf, type Action, type ActionEffects, type Step } from '../../actions/index.js'
import type { Envelope } from './data.js'

/** What the panel is built from: the window's actions and steps, and the commands by seq. */
export interface AgentData {
  actions: Action[]
  steps: Step[]
  commands: Map<number, Envelope>
}

export function deriveAgent(events: readonly Envelope[]): AgentData {
  const commands = new Map<number, Envelope>()
  for (const e of events) if (e.event.type === 'cdp_command') commands.set(e.seq, e)
  return { actions: deriveActions(events), steps: stepsOf(events), commands }
}

interface TreeRow {
  /** Unique in the panel: `step:<id>`, `action:<id>`, `setup`, `cmd:<seq>`. */
  key: string
  depth: number
  /** The first command's seq under it (for cross-panel positioning), or the command's own. */
  seq: number
  /** Unix µs: its start. */
  ts: number
  /** Whether it has rows under it, and whether they are shown. */
  parent: boolean
  open: boolean
}
export interface StepRow extends TreeRow {
  kind: 'step'
  step: Step
  /** Effects of every action under it (nested steps included), and how many actions. */
  effects: ActionEffects
  actions: number
  failed: boolean
}
export interface ActionRow extends TreeRow {
  kind: 'action'
  action: Action
}
export interface SetupRow extends TreeRow {
  kind: 'setup'
  actions: Action[]
  commands: number
  failed: boolean
}
export interface CommandRow extends TreeRow {
  kind: 'cmd'
  env: Envelope
}
export type AgentRow = StepRow | ActionRow | SetupRow | CommandRow

export interface AgentFilter {
  /** Case-insensitive text in a step's name, an action's title, a command's method. */
  q: string
  /** An action kind ('' for all). */
  kind: string
  target: string
}

export const emptyEffects = noEffects

function addEffects(into: ActionEffects, e: ActionEffects): void {
  into.navigations += e.navigations
  into.requests += e.requests
  into.failed_requests += e.failed_requests
  into.console_errors += e.console_errors
  into.dialogs += e.dialogs
  into.downloads += e.downloads
  into.crashed ||= e.crashed
}

/** The badges of a row's effects, in a fixed order: what went wrong or asks for attention. */
export function effectBadges(e: ActionEffects): { kind: string; label: string }[] {
  const out: { kind: string; label: string }[] = []
  const n = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`
  if (e.failed_requests > 0)
    out.push({ kind: 'failed', label: n(e.failed_requests, 'failed request', 'failed requests') })
  if (e.console_errors > 0) out.push({ kind: 'console', label: n(e.console_errors, 'console error', 'console errors') })
  if (e.dialogs > 0) out.push({ kind: 'dialog', label: n(e.dialogs, 'dialog', 'dialogs') })
  if (e.downloads > 0) out.push({ kind: 'download', label: n(e.downloads, 'download', 'downloads') })
  if (e.crashed) out.push({ kind: 'crash', label: 'crashed' })
  return out
}

/** The time span a selected step or action (not setup) narrows the other panels to: [from, to], to 0 = open-ended. */
export function spanOf(row: AgentRow): { from: number; to: number } | undefined {
  switch (row.kind) {
    case 'step':
      return { from: row.step.start_ts, to: row.step.end_ts ?? 0 }
    case 'action': {
      // Setup spans the whole life of a connection: narrowing to it would hide nothing useful.
      const a = row.action
      if (a.kind === 'setup') return undefined
      return { from: a.start_ts, to: a.effects_end_ts !== undefined ? Math.max(a.end_ts, a.effects_end_ts) : 0 }
    }
    default:
      return undefined
  }
}

interface Node {
  step: Step
  children: (Node | Action)[]
  effects: ActionEffects
  actions: number
  failed: boolean
  seq: number
}
const isNode = (x: Node | Action): x is Node => (x as Node).step !== undefined
const startOf = (x: Node | Action) => (isNode(x) ? x.step.start_ts : x.start_ts)

/** Whether an action (and so the step holding it) passes the panel's filters. */
function actionMatcher(data: AgentData, f: AgentFilter): (a: Action) => boolean {
  const q = f.q.toLowerCase()
  const cmdMatches = (seq: number) => {
    const e = data.commands.get(seq)
    return e !== undefined && e.event.type === 'cdp_command' && e.event.data.method.toLowerCase().includes(q)
  }
  return (a: Action) =>
    (!f.kind || a.kind === f.kind) &&
    (!f.target || a.target_id === f.target) &&
    (!q || a.title.toLowerCase().includes(q) || a.command_seqs.some(cmdMatches))
}

/** The unpruned tree: a node per step, matching actions under their steps, setup actions apart. */
function buildTree(
  data: AgentData,
  matches: (a: Action) => boolean,
): { nodes: Map<string, Node>; roots: (Node | Action)[]; setup: Action[] } {
  const nodes = new Map<string, Node>()
  for (const s of data.steps)
    nodes.set(s.step_id, { step: s, children: [], effects: emptyEffects(), actions: 0, failed: false, seq: Infinity })
  const roots: (Node | Action)[] = []
  const setup: Action[] = []
  for (const a of data.actions) {
    if (a.kind === 'setup') {
      if (matches(a)) setup.push(a)
      continue
    }
    if (!matches(a)) continue
    const node = a.step_id !== undefined ? nodes.get(a.step_id) : undefined
    if (node) node.children.push(a)
    else roots.push(a)
  }
  for (const n of nodes.values()) {
    const parent = n.step.parent_step_id !== undefined ? nodes.get(n.step.parent_step_id) : undefined
    if (parent && parent !== n) parent.children.push(n)
    else roots.push(n)
  }
  return { nodes, roots, setup }
}

/**
 * Totals bottom-up (pruning children in place); a step is kept when it or anything under it
 * matches. `seen` stops a cycle of parent ids from recursing forever.
 */
function keepStep(n: Node, seen: Set<Node>, q: string, f: AgentFilter): boolean {
  if (seen.has(n)) return false
  seen.add(n)
  n.children = n.children.filter(c => !isNode(c) || keepStep(c, seen, q, f))
  for (const c of n.children) {
    if (isNode(c)) {
      addEffects(n.effects, c.effects)
      n.actions += c.actions
      n.failed ||= c.failed
      n.seq = Math.min(n.seq, c.seq)
    } else {
      addEffects(n.effects, c.effects)
      n.actions++
      n.failed ||= c.outcome === 'error'
      n.seq = Math.min(n.seq, c.command_seqs[0] ?? Infinity)
    }
  }
  n.failed ||= n.step.outcome === 'error'
  const self = !q || n.step.name.toLowerCase().includes(q)
  return (self && !f.kind && !f.target) || n.children.length > 0
}

/** The keys of the rows holding `key`, nearest first (what must be open for it to be seen). */
function ancestorsOf(key: string, data: AgentData, nodes: ReadonlyMap<string, Node>): string[] {
  if (key.startsWith('cmd:')) {
    const seq = Number(key.slice(4))
    const a = data.actions.find(x => x.command_seqs.includes(seq))
    return a ? [`action:${a.action_id}`, ...ancestorsOf(`action:${a.action_id}`, data, nodes)] : []
  }
  if (key.startsWith('action:')) {
    const a = data.actions.find(x => `action:${x.action_id}` === key)
    if (!a) return []
    if (a.kind === 'setup') return ['setup']
    return a.step_id !== undefined && nodes.has(a.step_id)
      ? [`step:${a.step_id}`, ...ancestorsOf(`step:${a.step_id}`, data, nodes)]
      : []
  }
  if (key.startsWith('step:')) {
    const parent = nodes.get(key.slice(5))?.step.parent_step_id
    return parent !== undefined && nodes.has(parent)
      ? [`step:${parent}`, ...ancestorsOf(`step:${parent}`, data, nodes)]
      : []
  }
  return []
}

const byStart = (a: Node | Action, b: Node | Action) => startOf(a) - startOf(b)

/** Writes the pruned tree out as rows, depth first, descending only into the rows shown open. */
class RowWriter {
  readonly rows: AgentRow[] = []
  private readonly guard = new Set<Node>()
  constructor(
    private readonly data: AgentData,
    private readonly shown: ReadonlySet<string>,
  ) {}

  action(a: Action, depth: number): void {
    const key = `action:${a.action_id}`
    const isOpen = this.shown.has(key)
    this.rows.push({
      kind: 'action',
      key,
      depth,
      seq: a.command_seqs[0]!,
      ts: a.start_ts,
      parent: true,
      open: isOpen,
      action: a,
    })
    if (!isOpen) return
    for (const seq of a.command_seqs) {
      const env = this.data.commands.get(seq)
      if (env)
        this.rows.push({
          kind: 'cmd',
          key: `cmd:${seq}`,
          depth: depth + 1,
          seq,
          ts: env.event.ts,
          parent: false,
          open: false,
          env,
        })
    }
  }

  node(n: Node, depth: number): void {
    if (this.guard.has(n)) return
    this.guard.add(n)
    const key = `step:${n.step.step_id}`
    const isOpen = this.shown.has(key)
    this.rows.push({
      kind: 'step',
      key,
      depth,
      seq: Number.isFinite(n.seq) ? n.seq : 0,
      ts: n.step.start_ts,
      parent: n.children.length > 0,
      open: isOpen,
      step: n.step,
      effects: n.effects,
      actions: n.actions,
      failed: n.failed,
    })
    if (!isOpen) return
    for (const c of [...n.children].sort(byStart)) this.either(c, depth + 1)
  }

  either(x: Node | Action, depth: number): void {
    if (isNode(x)) this.node(x, depth)
    else this.action(x, depth)
  }

  setup(setup: Action[]): void {
    if (setup.length === 0) return
    const isOpen = this.shown.has('setup')
    this.rows.push({
      kind: 'setup',
      key: 'setup',
      depth: 0,
      seq: Math.min(...setup.map(a => a.command_seqs[0]!)),
      ts: Math.min(...setup.map(a => a.start_ts)),
      parent: true,
      open: isOpen,
      actions: setup,
      commands: setup.reduce((n, a) => n + a.command_seqs.length, 0),
      failed: setup.some(a => a.outcome === 'error'),
    })
    if (isOpen) for (const a of setup) this.action(a, 1)
  }
}

/**
 * The rows of the panel: top-level steps and step-less actions by start, each open one followed by
 * what is under it, then the Setup group. `open` holds the keys the user expanded; the ancestors
 * of `selected` are shown open too, so a deep link lands on a visible row.
 */
export function agentRows(data: AgentData, open: ReadonlySet<string>, f: AgentFilter, selected = ''): AgentRow[] {
  const q = f.q.toLowerCase()
  const { nodes, roots, setup } = buildTree(data, actionMatcher(data, f))
  const seen = new Set<Node>()
  const top = roots.filter(r => !isNode(r) || keepStep(r, seen, q, f))

  // Keys to show open: the user's, and every ancestor of the selected row.
  const shown = new Set(open)
  if (selected) for (const k of ancestorsOf(selected, data, nodes)) shown.add(k)

  const out = new RowWriter(data, shown)
  for (const r of top.sort(byStart)) out.either(r, 0)
  out.setup(setup)
  return out.rows
}
