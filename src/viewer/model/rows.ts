// Filters and panel rows: the loaded window -> the rows one panel lists, with gap rows where seqs
// are missing; the derived joins they are cut from; jump-to lookup and the network waterfall scale.
import { dataOf, num, str, type Envelope } from './data.js'
import { findGaps, type Gap } from './gaps.js'
import { buildFrames, type Frame } from './frames.js'
import { buildNavigations, inNavigation, type Navigation } from './navigations.js'
import { joinNetwork, joinSockets, netSummary, type NetRow, type SocketRow } from './network-rows.js'
import { panelOf, type Panel } from './panels.js'
import { agentRows, deriveAgent, type AgentData, type AgentRow } from './agent.js'
import { lowerBound } from '../../util/lower-bound.js'

/** The text a row's filter matches against. */
export function searchText(e: Envelope): string {
  const d = dataOf(e)
  const parts: string[] = [e.event.type]
  for (const k of [
    'url',
    'text',
    'level',
    'method',
    'status',
    'mime_type',
    'error_text',
    'selector',
    'target_selector',
    'key',
    'tag',
    'operation_id',
    'reason',
    'process_name',
    'service_name',
    'step',
    'captcha_type',
    'trace_id',
  ]) {
    const v = d[k]
    if (typeof v === 'string' || typeof v === 'number') parts.push(String(v))
  }
  if (Array.isArray(d.args)) parts.push(...(d.args as unknown[]).filter((a): a is string => typeof a === 'string'))
  return parts.join(' ').toLowerCase()
}

export interface EventRow {
  kind: 'event'
  seq: number
  ts: number
  env: Envelope
}
export interface FrameRow {
  kind: 'frame'
  seq: number
  ts: number
  frame: Frame
}
export interface NavRow {
  kind: 'nav'
  seq: number
  ts: number
  nav: Navigation
}
export interface GapRow {
  kind: 'gap'
  seq: number
  gap: Gap
}
export type Row = EventRow | NetRow | SocketRow | FrameRow | NavRow | GapRow | AgentRow

export interface Filter {
  q: string
  type: string
  target: string
  nav?: Navigation
  /** Only what happened in this time span (Unix µs, to 0 = open-ended): a selected step or action. */
  span?: { from: number; to: number }
  /** The Agent panel: the rows the user opened, and the selected row (its ancestors show open). */
  open?: ReadonlySet<string>
  sel?: string
}

/** Whether ts lies in the filter's time span (always, without one). */
export function inSpan(ts: number, f: Pick<Filter, 'span'>): boolean {
  return !f.span || (ts >= f.span.from && (f.span.to === 0 || ts <= f.span.to))
}

function envMatches(e: Envelope, f: Filter): boolean {
  if (!inSpan(e.event.ts, f)) return false
  if (f.type && e.event.type !== f.type) return false
  if (f.target && dataOf(e).target_id !== f.target) return false
  if (f.nav && !inNavigation(e, f.nav)) return false
  if (f.q && !searchText(e).includes(f.q.toLowerCase())) return false
  return true
}

function netMatches(r: NetRow, f: Filter): boolean {
  const all = r.envelopes
  if (f.type === 'failed') {
    if (!r.failure && !((num(r.response && dataOf(r.response).status) ?? 0) >= 400)) return false
  } else if (f.type && !all.some(e => e.event.type === f.type)) return false
  const first = all[0]!
  if (!inSpan(first.event.ts, f)) return false
  if (f.target && dataOf(first).target_id !== f.target) return false
  if (f.nav && !inNavigation(first, f.nav)) return false
  if (f.q) {
    const q = f.q.toLowerCase()
    if (!all.some(e => searchText(e).includes(q))) return false
  }
  return true
}

function socketMatches(r: SocketRow, f: Filter): boolean {
  const first = r.envelopes[0]!
  if (!inSpan(first.event.ts, f)) return false
  if (f.type === 'failed') return r.socket.error !== undefined
  if (f.type && !r.envelopes.some(e => e.event.type === f.type)) return false
  if (f.target && dataOf(first).target_id !== f.target) return false
  if (f.nav && !inNavigation(first, f.nav)) return false
  if (f.q && !r.envelopes.some(e => searchText(e).includes(f.q.toLowerCase()))) return false
  return true
}

/**
 * Rows of one panel for the loaded window, with gap rows where seqs are missing. The Agent panel is
 * a tree (steps, actions, commands; src/viewer/model/agent.ts) over `agent` (derived here when not
 * given): its rows are in tree order, without gap rows, and the time span does not narrow it.
 */
export function panelRows(
  panel: Panel,
  events: readonly Envelope[],
  f: Filter,
  derived: Derived,
  agent?: AgentData,
): Row[] {
  let rows: Row[]
  switch (panel) {
    case 'agent':
      return agentRows(
        agent ?? deriveAgent(events),
        f.open ?? new Set(),
        { q: f.q, kind: f.type, target: f.target },
        f.sel,
      )
    case 'timeline': {
      // A navigation is in the span when its time (until the target's next navigation) overlaps it.
      const next = new Map<Navigation, number>()
      const last = new Map<string, Navigation>()
      for (const n of derived.navs) {
        const before = last.get(n.target_id)
        if (before) next.set(before, n.ts)
        last.set(n.target_id, n)
      }
      const overlaps = (n: Navigation) =>
        !f.span || ((f.span.to === 0 || n.ts <= f.span.to) && (next.get(n) ?? Infinity) > f.span.from)
      rows = derived.navs
        .filter(
          n =>
            overlaps(n) &&
            (!f.target || n.target_id === f.target) &&
            (!f.nav || n.key === f.nav.key) &&
            (!f.q || n.url.toLowerCase().includes(f.q.toLowerCase())),
        )
        .map((nav): NavRow => ({ kind: 'nav', seq: nav.seq, ts: nav.ts, nav }))
      break
    }
    case 'network': {
      const net: (NetRow | SocketRow)[] = derived.net.filter(r => netMatches(r, f))
      const sockets = derived.sockets.filter(r => socketMatches(r, f))
      rows = sockets.length === 0 ? net : [...net, ...sockets].sort((a, b) => a.seq - b.seq)
      break
    }
    case 'filmstrip': {
      const frameSeqs = new Set(
        events
          .filter(e => e.event.type === 'monitor_screenshot' && envMatches(e, { ...f, q: '', target: '' }))
          .map(e => e.seq),
      )
      rows = derived.frames
        .filter(
          fr =>
            frameSeqs.has(fr.seq) &&
            inSpan(fr.ts, f) &&
            (!f.q || fr.clicks.some(c => c.selector.toLowerCase().includes(f.q.toLowerCase()))),
        )
        .map((frame): FrameRow => ({ kind: 'frame', seq: frame.seq, ts: frame.ts, frame }))
      break
    }
    default:
      rows = events
        .filter(e => (panel === 'all' || panelOf(e) === panel) && envMatches(e, f))
        .map((env): EventRow => ({ kind: 'event', seq: env.seq, ts: env.event.ts, env }))
  }
  return withGaps(rows, derived.gaps)
}

/** Inserts a gap row before the first row whose seq lies after the gap (rows ascend by seq). */
export function withGaps(rows: Row[], gaps: readonly Gap[]): Row[] {
  if (gaps.length === 0) return rows
  const out: Row[] = []
  let g = 0
  for (const r of rows) {
    while (g < gaps.length && gaps[g]!.to < r.seq) {
      out.push({ kind: 'gap', seq: gaps[g]!.from, gap: gaps[g]! })
      g++
    }
    out.push(r)
  }
  // Gaps after the panel's last row are shown too: the drop happened there, whatever the panel.
  for (; g < gaps.length; g++) out.push({ kind: 'gap', seq: gaps[g]!.from, gap: gaps[g]! })
  return out
}

export interface Derived {
  gaps: Gap[]
  net: NetRow[]
  sockets: SocketRow[]
  navs: Navigation[]
  frames: Frame[]
  targets: { id: string; type: string; url: string }[]
}

export function derive(events: readonly Envelope[]): Derived {
  const screens: Envelope[] = []
  const clicks: Envelope[] = []
  const targets = new Map<string, { id: string; type: string; url: string }>()
  for (const e of events) {
    if (e.event.type === 'monitor_screenshot') screens.push(e)
    else if (e.event.type === 'interaction_click') clicks.push(e)
    const d = dataOf(e)
    const id = str(d.target_id)
    if (id !== undefined) {
      const t = targets.get(id) ?? { id, type: str(d.target_type) ?? 'other', url: '' }
      if (str(d.url) && (e.event.type === 'page_navigation' || t.url === '')) t.url = str(d.url)!
      targets.set(id, t)
    }
  }
  return {
    gaps: findGaps(events),
    net: joinNetwork(events),
    sockets: joinSockets(events),
    navs: buildNavigations(events),
    frames: buildFrames(screens, clicks),
    targets: [...targets.values()],
  }
}

/** Types offered by a panel's type filter (the Agent panel's: the action kinds present). */
export function typeOptions(panel: Panel, events: readonly Envelope[], agent?: AgentData): string[] {
  if (panel === 'agent') return [...new Set((agent?.actions ?? []).map(a => a.kind))].sort()
  const set = new Set<string>()
  for (const e of events) if (panel === 'all' || panelOf(e) === panel) set.add(e.event.type)
  const list = [...set].sort()
  return panel === 'network' ? ['failed', ...list] : panel === 'timeline' || panel === 'filmstrip' ? [] : list
}

/** Index of the row at or nearest after seq (for jump-to and cross-panel linking). */
export function rowIndexAtSeq(rows: readonly Row[], seq: number): number {
  return Math.min(
    lowerBound(rows.length, i => rows[i]!.seq < seq),
    rows.length - 1,
  )
}

/** Waterfall scale of a list of network rows: bar offset and width as fractions of the span. */
export function waterfall(rows: readonly Row[]): (r: NetRow) => { left: number; width: number } {
  let start = Infinity
  let end = -Infinity
  for (const r of rows) {
    if (r.kind !== 'net') continue
    const s = netSummary(r)
    start = Math.min(start, r.ts)
    end = Math.max(end, r.ts + (s.durationMs ?? 0) * 1000)
  }
  const span = Math.max(1, end - start)
  return r => {
    const d = (netSummary(r).durationMs ?? 0) * 1000
    return { left: (r.ts - start) / span, width: Math.max(0.005, d / span) }
  }
}
