// Records of a window in, a digest out: one pass in seq order. Only what a digest names is parsed
// (the event type is read from the record's JSON first); actions come from the one actions module,
// and each failure, console error and incident is told after the action whose effects window on
// its target holds it. Bounded: a few small records per event kept, request heads forgotten once
// answered and capped in number.
import { ActionBuilder, pathOf, stepsOf, type Action } from '../actions/index.js'
import { storedEventType, type Envelope, type StackTrace } from '../events/index.js'
import type {
  Digest,
  DigestAction,
  DigestConsoleError,
  DigestEffect,
  DigestIncident,
  DigestNavigation,
  DigestRequest,
  DigestStep,
} from './types.js'

/** A stored record as readers serve it (source-mapped stacks). */
export interface DigestRecord {
  seq: number
  category: string
  json: string
}

const ACTION_INPUT = new Set(['control', 'page', 'network', 'console', 'interaction'])
const TOLD = new Set([
  'page_navigation',
  'page_web_vital',
  'network_request',
  'network_response',
  'network_loading_failed',
  'console_error',
  'console_log',
  'page_crashed',
  'page_dialog_opened',
  'page_download_started',
  'monitor_disconnected',
  'service_crashed',
  'system_oom_kill',
  'agent_step_started',
  'agent_step_finished',
])
/** How each incident type is told. */
const INCIDENTS: Record<string, { kind: DigestIncident['kind']; text: (d: Record<string, unknown>) => string }> = {
  page_crashed: {
    kind: 'crash',
    text: d =>
      `page crashed${d.status !== undefined ? ` (${String(d.status)})` : ''} at ${pathOf(String(d.url ?? ''))}`,
  },
  page_dialog_opened: {
    kind: 'dialog',
    text: d => `${String(d.dialog_type)} dialog: ${oneLine(String(d.message ?? ''), 120)}`,
  },
  page_download_started: {
    kind: 'download',
    text: d => `download ${oneLine(String(d.suggested_filename ?? ''), 120)}`,
  },
  monitor_disconnected: { kind: 'disconnect', text: () => 'the browser went away (browser_restarted)' },
  system_oom_kill: { kind: 'crash', text: () => 'a process of the VM was killed out of memory' },
  service_crashed: { kind: 'crash', text: () => 'a service of the VM crashed' },
}

/** Request heads waiting for their answer at most (a page that never answers cannot grow this). */
const MAX_OPEN_REQUESTS = 20_000
const TEXT_MAX = 300
const BODY_MAX = 160
const FRAMES_MAX = 3

/** `s` on one line, cut to `max` characters ("…" when cut). */
export function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim()
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`
}

/** A frame as people read it: its name and where it was written (mapped) or where it ran (1-based). */
export function frameText(f: StackTrace['callFrames'][number]): string {
  const o = f.original
  const where = o ? `${o.source}:${o.line}:${o.column}` : `${f.url}:${f.lineNumber + 1}:${f.columnNumber + 1}`
  const name = o?.name ?? f.functionName
  return name ? `${name} (${where})` : where
}

interface Placed {
  /** When it happened (a request: when it was sent). */
  ts: number
  target?: string
  effect: DigestEffect
}

export class DigestCollector {
  private readonly actions = new ActionBuilder()
  private readonly stepEvents: Envelope[] = []
  private readonly navs: (DigestNavigation & { target: string })[] = []
  /** Per target: its top-level navigations in order (a vital's nav_seq counts them). */
  private readonly navsOf = new Map<string, DigestNavigation[]>()
  private readonly open = new Map<string, { ts: number; method: string; url: string; target?: string }>()
  private readonly failed: (DigestRequest & { target?: string })[] = []
  private readonly errors: (DigestConsoleError & { target?: string })[] = []
  private readonly incidents: (DigestIncident & { target?: string })[] = []
  private lastSeq: number | undefined
  private missing = 0
  private gapCount = 0
  events = 0

  /** Records kept for the actions (what a caller bounds). */
  get size(): number {
    return this.actions.size
  }

  /** One record, in seq order (every category: seq gaps are counted across all of them). */
  add(r: DigestRecord): void {
    this.events++
    if (this.lastSeq !== undefined && r.seq > this.lastSeq + 1) {
      this.missing += r.seq - this.lastSeq - 1
      this.gapCount++
    }
    this.lastSeq = r.seq
    if (!ACTION_INPUT.has(r.category) && r.category !== 'monitor' && r.category !== 'system') return
    const type = storedEventType(r.json)
    const forActions = ACTION_INPUT.has(r.category)
    if (!forActions && !TOLD.has(type)) return
    // Most of a busy window: console lines that are not errors, and answers that did not fail
    // (with their bodies); neither the actions nor the digest read them, so they are not parsed.
    if (type === 'console_log' && !r.json.includes('"level":"error"')) return
    if (type === 'network_response') {
      const status = /"status":(\d+)/.exec(r.json)?.[1]
      if (status !== undefined && Number(status) < 400) {
        const id = /"request_id":"((?:[^"\\]|\\.)*)"/.exec(r.json)?.[1]
        if (id !== undefined) this.open.delete(id)
        return
      }
    }
    const e = JSON.parse(r.json) as Envelope
    if (forActions) this.actions.add(e)
    if (TOLD.has(e.event.type)) this.tell(e)
  }

  private tell(e: Envelope): void {
    const ev = e.event
    const d = ev.data as Record<string, unknown>
    const target = typeof d.target_id === 'string' ? d.target_id : undefined
    switch (ev.type) {
      case 'agent_step_started':
      case 'agent_step_finished':
        this.stepEvents.push(e)
        return
      case 'page_navigation': {
        if (d.parent_frame_id !== undefined || target === undefined) return
        const nav = { ts: ev.ts, url: String(d.url ?? ''), vitals: [], target }
        this.navs.push(nav)
        const list = this.navsOf.get(target) ?? []
        list.push(nav)
        this.navsOf.set(target, list)
        return
      }
      case 'page_web_vital': {
        const list = target === undefined ? undefined : this.navsOf.get(target)
        if (!list || list.length === 0) return
        const n = typeof d.nav_seq === 'number' && d.nav_seq >= 1 ? d.nav_seq : list.length
        const nav = list[Math.min(n, list.length) - 1]!
        const name = String(d.name)
        const vital = { name, value: Number(d.value), rating: String(d.rating) }
        const at = nav.vitals.findIndex(v => v.name === name)
        if (at >= 0) nav.vitals[at] = vital
        else nav.vitals.push(vital)
        return
      }
      case 'network_request': {
        if (this.open.size >= MAX_OPEN_REQUESTS) this.open.delete(this.open.keys().next().value!)
        this.open.set(String(d.request_id), { ts: ev.ts, method: String(d.method), url: String(d.url ?? ''), target })
        return
      }
      case 'network_response': {
        const head = this.open.get(String(d.request_id))
        this.open.delete(String(d.request_id))
        const status = Number(d.status)
        if (!(status >= 400)) return
        const body = typeof d.body === 'string' && d.body.length > 0 ? oneLine(d.body, BODY_MAX) : undefined
        this.failed.push({
          ts: head?.ts ?? ev.ts,
          method: head?.method ?? String(d.method ?? 'GET'),
          url: head?.url ?? String(d.url ?? ''),
          status,
          ...(body !== undefined ? { body } : {}),
          target,
        })
        return
      }
      case 'network_loading_failed': {
        const head = this.open.get(String(d.request_id))
        this.open.delete(String(d.request_id))
        if (d.canceled === true) return
        this.failed.push({
          ts: head?.ts ?? ev.ts,
          method: head?.method ?? 'GET',
          url: head?.url ?? String(d.url ?? ''),
          error: String(d.error_text),
          target,
        })
        return
      }
      case 'console_log':
        if (d.level !== 'error') return
      // falls through: console.error through console_log's level
      case 'console_error': {
        const stack = d.stack_trace as StackTrace | undefined
        const frames = (stack?.callFrames ?? []).slice(0, FRAMES_MAX).map(frameText)
        this.errors.push({ ts: ev.ts, text: oneLine(String(d.text ?? ''), TEXT_MAX), frames, target })
        return
      }
      default:
        this.incident(ev.type, ev.ts, d, target)
    }
  }

  private incident(type: string, ts: number, d: Record<string, unknown>, target: string | undefined): void {
    const told = INCIDENTS[type]
    if (told) this.incidents.push({ ts, kind: told.kind, text: told.text(d), target })
  }

  /** The digest of what was added; `stepId` keeps that step only (undefined when it is not in the window). */
  finish(window: { since_ts: number; until_ts: number }, stepId?: string): Digest | undefined {
    const steps = stepsOf(this.stepEvents)
    if (stepId !== undefined && !steps.some(s => s.step_id === stepId)) return undefined
    const actions = this.actions.finish()
    const told = placeEffects(actions, [
      ...this.failed.map(f => ({ ts: f.ts, target: f.target, effect: requestEffect(f) })),
      ...this.errors.map(e => ({ ts: e.ts, target: e.target, effect: errorEffect(e) })),
      ...this.incidents.map(i => ({ ts: i.ts, target: i.target, effect: incidentEffect(i) })),
    ])
    const byStep = new Map<string, DigestAction[]>()
    const outside: DigestAction[] = []
    for (const a of actions) {
      if (a.kind === 'setup') continue
      const da: DigestAction = {
        ts: a.start_ts,
        title: a.title,
        outcome: a.outcome,
        ...(a.error_message !== undefined ? { error_message: oneLine(a.error_message, TEXT_MAX) } : {}),
        effects: told.get(a) ?? [],
      }
      const list = a.step_id !== undefined ? byStep.get(a.step_id) : undefined
      if (a.step_id !== undefined && list === undefined) byStep.set(a.step_id, [da])
      else (list ?? outside).push(da)
    }
    const digestSteps: DigestStep[] = steps
      .filter(s => stepId === undefined || s.step_id === stepId)
      .map(s => ({
        step_id: s.step_id,
        name: s.name,
        ...(s.outcome !== undefined ? { outcome: s.outcome } : {}),
        ...(s.duration_ms !== undefined ? { duration_ms: s.duration_ms } : {}),
        ...(s.error_message !== undefined ? { error_message: oneLine(s.error_message, TEXT_MAX) } : {}),
        start_ts: s.start_ts,
        actions: byStep.get(s.step_id) ?? [],
      }))
    // Actions of a step that started before the window (not listed) are told outside steps.
    for (const [id, list] of byStep) if (!steps.some(s => s.step_id === id)) outside.push(...list)
    outside.sort((a, b) => a.ts - b.ts)
    const strip = <T extends { target?: string }>(list: T[]): Omit<T, 'target'>[] =>
      list.map(({ target: _target, ...rest }) => rest)
    const step = stepId === undefined ? undefined : steps.find(s => s.step_id === stepId)!
    const inStep = (ts: number) => step === undefined || (ts >= step.start_ts && ts <= (step.end_ts ?? Infinity))
    return {
      window,
      ...(stepId !== undefined ? { step_id: stepId } : {}),
      events: this.events,
      steps: digestSteps,
      actions: stepId === undefined ? outside : [],
      navigations: strip(this.navs.filter(n => inStep(n.ts))),
      failed_requests: strip(this.failed.filter(f => inStep(f.ts))),
      console_errors: strip(this.errors.filter(e => inStep(e.ts))),
      incidents: strip(this.incidents.filter(i => inStep(i.ts))),
      dropped: { events: this.missing, gaps: this.gapCount },
    }
  }
}

export function requestEffect(f: DigestRequest): DigestEffect {
  const answer = f.status !== undefined ? String(f.status) : `failed (${f.error ?? 'no answer'})`
  return { kind: 'request_failed', text: `${f.method} ${pathOf(f.url)} ${answer}` }
}

export function errorEffect(e: DigestConsoleError): DigestEffect {
  return {
    kind: 'console_error',
    text: `console error ${oneLine(e.text, 120)}${e.frames[0] !== undefined ? ` at ${e.frames[0]}` : ''}`,
  }
}

function incidentEffect(i: DigestIncident): DigestEffect {
  return { kind: i.kind === 'disconnect' ? 'crash' : i.kind, text: i.text }
}

/** Each effect after the action whose effects window on its target holds it (none: told on its own only). */
function placeEffects(actions: readonly Action[], placed: readonly Placed[]): Map<Action, DigestEffect[]> {
  const byTarget = new Map<string, Action[]>()
  for (const a of actions) {
    if (a.target_id === undefined || a.kind === 'setup') continue
    const list = byTarget.get(a.target_id) ?? []
    list.push(a)
    byTarget.set(a.target_id, list)
  }
  const out = new Map<Action, DigestEffect[]>()
  for (const p of [...placed].sort((a, b) => a.ts - b.ts)) {
    const list = p.target === undefined ? undefined : byTarget.get(p.target)
    if (!list) continue
    // The latest action started at or before the effect whose window still runs then.
    let hit: Action | undefined
    for (const a of list) {
      if (a.start_ts > p.ts) break
      if (a.effects_end_ts === undefined || p.ts < a.effects_end_ts) hit = a
    }
    if (!hit) continue
    const effects = out.get(hit) ?? []
    effects.push(p.effect)
    out.set(hit, effects)
  }
  return out
}
