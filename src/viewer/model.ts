// The viewer's pure model: loaded envelopes -> panel rows, navigations, gaps, click markers,
// filters and the deep-link state. No DOM, no fetch: unit-tested in Node (test/viewer-model.test.ts).
import type { Envelope, TelemetryEvent } from '../events/index.js'
import { firstOf, joinExchanges, utf8ByteLength, type EnvelopeOf } from '../har/index.js'
import { SocketJoin, type SocketExchange } from '../har/websockets.js'
import { headerValue } from '../util/headers.js'

export type { Envelope, TelemetryEvent }

export const PANELS = ['timeline', 'filmstrip', 'network', 'console', 'interactions', 'agent', 'lane', 'all'] as const
export type Panel = (typeof PANELS)[number]
export const PANEL_TITLES: Record<Panel, string> = {
  timeline: 'Navigations',
  filmstrip: 'Filmstrip',
  network: 'Network',
  console: 'Console',
  interactions: 'Interactions',
  agent: 'Agent',
  lane: 'Monitor & system',
  all: 'All events',
}

/** The monitor/connection/control/system lane (captcha results are ingested by local producers, so they sit here too). */
export const LANE_CATEGORIES = new Set(['monitor', 'connection', 'control', 'system', 'captcha'])

type Data = Record<string, unknown>
export const dataOf = (e: Envelope): Data => e.event.data as Data
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)

/** Which panel an event belongs to (page events only feed the navigation timeline). */
export function panelOf(e: Envelope): Panel | undefined {
  if (e.event.type === 'cdp_command') return 'agent'
  const c = e.event.category
  if (c === 'console') return 'console'
  if (c === 'network') return e.event.type === 'network_idle' ? undefined : 'network'
  if (c === 'interaction') return 'interactions'
  if (c === 'screenshot') return 'filmstrip'
  if (LANE_CATEGORIES.has(c)) return 'lane'
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Gaps: seqs missing between two consecutive loaded envelopes were dropped (unclean stop, shedding).

export interface Gap {
  from: number
  to: number
  count: number
}

/** Missing seqs between consecutive envelopes of an ascending, contiguously loaded window. */
export function findGaps(events: readonly Envelope[]): Gap[] {
  const gaps: Gap[] = []
  for (let i = 1; i < events.length; i++) {
    const prev = events[i - 1]!.seq
    const cur = events[i]!.seq
    if (cur > prev + 1) gaps.push({ from: prev + 1, to: cur - 1, count: cur - prev - 1 })
  }
  return gaps
}

export const gapLabel = (g: Gap): string =>
  `${g.count} event${g.count === 1 ? '' : 's'} dropped (seq ${g.from}${g.count > 1 ? `–${g.to}` : ''})`

// ---------------------------------------------------------------------------------------------
// Network: one row per request hop, from the same join as the HAR export (src/har/exchanges.ts).

export interface NetRow {
  kind: 'net'
  /** seq of the first envelope of the hop (request, or the orphan response/failure). */
  seq: number
  ts: number
  request?: EnvelopeOf<'network_request'>
  response?: EnvelopeOf<'network_response'>
  failure?: EnvelopeOf<'network_loading_failed'>
  /** Set when a later hop with the same request id redirected away from this one. */
  redirectedTo?: string
  envelopes: Envelope[]
}

export function joinNetwork(events: readonly Envelope[]): NetRow[] {
  return joinExchanges(events).map(ex => ({
    kind: 'net',
    ...firstOf(ex),
    request: ex.request,
    response: ex.response,
    failure: ex.failure,
    redirectedTo: ex.redirectedTo?.url,
    envelopes: ex.envelopes,
  }))
}

export interface NetSummary {
  url: string
  method: string
  status?: number
  mime?: string
  size?: number
  durationMs?: number
  error?: string
  resourceType?: string
}

export function netSummary(r: NetRow): NetSummary {
  const req = r.request?.event.data
  const res = r.response?.event.data
  const fail = r.failure?.event.data
  const end = r.response ?? r.failure
  const len = headerValue(res?.headers, 'content-length')
  const body = res?.body
  return {
    url: req?.url ?? res?.url ?? fail?.url ?? '',
    method: req?.method ?? res?.method ?? 'GET',
    status: res?.status,
    mime: res?.mime_type,
    size: len !== undefined && /^\d+$/.test(len) ? Number(len) : body !== undefined ? utf8ByteLength(body) : undefined,
    durationMs: r.request && end ? Math.max(0, (end.event.ts - r.request.event.ts) / 1000) : undefined,
    error: fail?.error_text,
    resourceType: req?.resource_type ?? res?.resource_type ?? fail?.resource_type,
  }
}

// ---------------------------------------------------------------------------------------------
// Agent: the commands automation clients sent through the CDP proxy.

/** A command answered after this long is marked slow. */
export const SLOW_COMMAND_MS = 1000

export interface CommandSummary {
  method: string
  outcome: string
  durationMs: number
  failed: boolean
  slow: boolean
  error?: string
}

export function commandSummary(e: Envelope): CommandSummary | undefined {
  if (e.event.type !== 'cdp_command') return undefined
  const d = e.event.data
  return {
    method: d.method,
    outcome: d.outcome,
    durationMs: d.duration_ms,
    failed: d.outcome !== 'ok',
    slow: d.duration_ms >= SLOW_COMMAND_MS,
    ...(d.error_message !== undefined ? { error: `${d.error_code ?? ''} ${d.error_message}`.trim() } : {}),
  }
}

// ---------------------------------------------------------------------------------------------
// WebSockets: one row per socket (the HAR export's join), its frames in the detail pane.

export interface SocketRow {
  kind: 'socket'
  seq: number
  ts: number
  socket: SocketExchange
  envelopes: Envelope[]
}

export function joinSockets(events: readonly Envelope[]): SocketRow[] {
  const join = new SocketJoin()
  const rows = new Map<SocketExchange, SocketRow>()
  for (const e of events) {
    if (!e.event.type.startsWith('network_websocket_')) continue
    const begun = join.add(e)
    if (begun) rows.set(begun, { kind: 'socket', seq: e.seq, ts: e.event.ts, socket: begun, envelopes: [e] })
    else if (join.touched) rows.get(join.touched)?.envelopes.push(e)
  }
  return [...rows.values()]
}

/** True for a value the daemon masked before storing it (`[redacted:<length class>]`, older logs `[REDACTED]`). */
export const isRedacted = (v: unknown): boolean => typeof v === 'string' && /^\[redacted(:\d+)?\]$/i.test(v)
/** True when a value contains masked parts (a URL with a masked parameter, a form body). */
export const hasRedaction = (v: unknown): boolean => typeof v === 'string' && /\[redacted(:\d+)?\]/i.test(v)

// ---------------------------------------------------------------------------------------------
// Navigations: one section per (target, nav_seq) of a page target.

export interface Navigation {
  key: string
  target_id: string
  nav_seq: number
  url: string
  /** seq/ts of the page_navigation (or of the first event seen when it began before the window). */
  seq: number
  ts: number
  /** Last seq that belongs to this navigation's window (the seq before the target's next navigation). */
  endSeq: number
  started: boolean
  markers: Partial<Record<MarkerName, number>>
  requests: number
  failures: number
  consoleErrors: number
  cls: number
  lcpMs?: number
  /** Crashes, dialogs and downloads, in order, with their offset from the navigation's start. */
  incidents: Incident[]
}
export interface Incident {
  kind: 'crash' | 'dialog' | 'download'
  seq: number
  atMs: number
  label: string
}
function addIncident(nav: Navigation, kind: Incident['kind'], e: Envelope, label: string): void {
  nav.incidents.push({ kind, seq: e.seq, atMs: (e.event.ts - nav.ts) / 1000, label })
}
export const MARKERS = ['dcl', 'load', 'idle', 'layout', 'settled'] as const
export type MarkerName = (typeof MARKERS)[number]
export const MARKER_LABEL: Record<MarkerName, string> = {
  dcl: 'DOMContentLoaded',
  load: 'load',
  idle: 'network idle',
  layout: 'layout settled',
  settled: 'navigation settled',
}
const MARKER_OF: Record<string, MarkerName> = {
  page_dom_content_loaded: 'dcl',
  page_load: 'load',
  network_idle: 'idle',
  page_layout_settled: 'layout',
  page_navigation_settled: 'settled',
}

export const navKey = (target: string, navSeq: number) => `${target}:${navSeq}`

export function navKeyOf(e: Envelope): string | undefined {
  const d = dataOf(e)
  const t = str(d.target_id)
  const n = num(d.nav_seq)
  return t !== undefined && n !== undefined ? navKey(t, n) : undefined
}

export function buildNavigations(events: readonly Envelope[]): Navigation[] {
  const navs: Navigation[] = []
  const byKey = new Map<string, Navigation>()
  /** A top-level page_navigation waits for the target's next nav_seq (it carries none itself). */
  const pending = new Map<string, Envelope>()
  const lastNavOfTarget = new Map<string, Navigation>()
  const lastNavSeq = new Map<string, number>()
  const open = (target: string, navSeq: number, start: Envelope, started: boolean): Navigation => {
    const d = dataOf(start)
    const nav: Navigation = {
      key: navKey(target, navSeq),
      target_id: target,
      nav_seq: navSeq,
      url: str(d.url) ?? '',
      seq: start.seq,
      ts: start.event.ts,
      endSeq: start.seq,
      started,
      markers: {},
      requests: 0,
      failures: 0,
      consoleErrors: 0,
      cls: 0,
      incidents: [],
    }
    navs.push(nav)
    byKey.set(nav.key, nav)
    lastNavOfTarget.set(target, nav)
    return nav
  }
  for (const e of events) {
    const d = dataOf(e)
    const target = str(d.target_id)
    if (e.event.type === 'page_navigation') {
      if (target !== undefined && d.parent_frame_id === undefined && (d.target_type ?? 'page') === 'page') {
        pending.set(target, e)
        // The epoch begins here: whatever the old navigation still logs goes to it, but its window ends.
        const prev = lastNavOfTarget.get(target)
        if (prev) prev.endSeq = e.seq - 1
      }
      continue
    }
    const navSeq = num(d.nav_seq)
    if (target === undefined || navSeq === undefined) continue
    let nav = byKey.get(navKey(target, navSeq))
    if (!nav) {
      const p = pending.get(target)
      const before = lastNavSeq.get(target)
      if (p && (before === undefined || navSeq > before)) {
        pending.delete(target)
        nav = open(target, navSeq, p, true)
      } else {
        nav = open(target, navSeq, e, false)
        if (nav.url === '') nav.url = str(d.url) ?? ''
      }
    }
    lastNavSeq.set(target, Math.max(navSeq, lastNavSeq.get(target) ?? navSeq))
    if (lastNavOfTarget.get(target) === nav && !pending.has(target)) nav.endSeq = Math.max(nav.endSeq, e.seq)
    const marker = MARKER_OF[e.event.type]
    if (marker && nav.markers[marker] === undefined) nav.markers[marker] = (e.event.ts - nav.ts) / 1000
    const event = e.event
    switch (event.type) {
      case 'network_request':
        nav.requests++
        break
      case 'network_loading_failed':
        nav.failures++
        break
      case 'network_response':
        if ((event.data.status ?? 0) >= 400) nav.failures++
        break
      case 'console_error':
        nav.consoleErrors++
        break
      case 'console_log':
        if (event.data.level === 'error') nav.consoleErrors++
        break
      case 'page_layout_shift': {
        const ls = event.data.layout_shift_details
        if (ls && !ls.had_recent_input && typeof ls.value === 'number') nav.cls += ls.value
        break
      }
      case 'page_crashed':
        addIncident(nav, 'crash', e, `renderer crashed${event.data.status ? ` (${event.data.status})` : ''}`)
        break
      case 'page_dialog_opened':
        addIncident(nav, 'dialog', e, `${event.data.dialog_type}: ${event.data.message.slice(0, 80)}`)
        break
      case 'page_download_started':
        addIncident(nav, 'download', e, `download ${event.data.suggested_filename}`)
        break
      case 'page_lcp': {
        // render/load times are epoch milliseconds; ts is Unix µs.
        const l = event.data.lcp_details
        const atMs = l?.render_time || l?.load_time
        nav.lcpMs = atMs ? Math.max(0, atMs - nav.ts / 1000) : (event.ts - nav.ts) / 1000
        break
      }
    }
  }
  // A navigation whose first nav_seq'd event is not loaded yet still gets its section.
  for (const [target, p] of pending) {
    const n = (lastNavSeq.get(target) ?? -1) + 1
    if (!byKey.has(navKey(target, n))) open(target, n, p, true)
  }
  navs.sort((a, b) => a.seq - b.seq)
  const last = events.at(-1)?.seq ?? 0
  for (const n of navs)
    if (lastNavOfTarget.get(n.target_id) === n && !pending.has(n.target_id)) n.endSeq = Math.max(n.endSeq, last)
  return navs
}

/** Does an event belong to a navigation's window? Target events by (target, nav_seq); others by seq range. */
export function inNavigation(e: Envelope, nav: Navigation): boolean {
  const key = navKeyOf(e)
  if (key !== undefined) return key === nav.key
  if (e.event.type === 'page_navigation' && e.seq === nav.seq) return true
  return e.seq >= nav.seq && e.seq <= nav.endSeq && dataOf(e).target_id === undefined
}

// ---------------------------------------------------------------------------------------------
// Filmstrip: frames and the clicks drawn on the nearest one.

export interface ClickMark {
  seq: number
  x: number
  y: number
  selector: string
}
export interface Frame {
  seq: number
  ts: number
  png: string
  width?: number
  height?: number
  clicks: ClickMark[]
}

/** PNG width/height from the IHDR chunk (bytes 16..24) of a base64 PNG, without decoding the image. */
export function pngSize(base64: string): { width: number; height: number } | undefined {
  if (base64.length < 32) return undefined
  let bin: string
  try {
    bin = atob(base64.slice(0, 32))
  } catch {
    return undefined
  }
  if (bin.charCodeAt(1) !== 0x50 || bin.slice(12, 16) !== 'IHDR') return undefined
  const u32 = (o: number) =>
    ((bin.charCodeAt(o) << 24) >>> 0) +
    (bin.charCodeAt(o + 1) << 16) +
    (bin.charCodeAt(o + 2) << 8) +
    bin.charCodeAt(o + 3)
  return { width: u32(16), height: u32(20) }
}

export function buildFrames(screens: readonly Envelope[], clicks: readonly Envelope[]): Frame[] {
  const frames: Frame[] = screens.map(e => {
    const png = str(dataOf(e).png) ?? ''
    return { seq: e.seq, ts: e.event.ts, png, ...pngSize(png), clicks: [] }
  })
  if (frames.length === 0) return frames
  for (const c of clicks) {
    const d = dataOf(c)
    // Frames are sorted by ts (ts never decreases in seq order): binary search the nearest.
    let lo = 0
    let hi = frames.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (frames[mid]!.ts < c.event.ts) lo = mid + 1
      else hi = mid
    }
    let best = lo
    if (lo > 0 && Math.abs(frames[lo - 1]!.ts - c.event.ts) <= Math.abs(frames[lo]!.ts - c.event.ts)) best = lo - 1
    frames[best]!.clicks.push({ seq: c.seq, x: num(d.x) ?? 0, y: num(d.y) ?? 0, selector: str(d.selector) ?? '' })
  }
  return frames
}

// ---------------------------------------------------------------------------------------------
// Filters and rows.

export interface ViewState {
  panel: Panel
  /** Case-insensitive substring over the row's text. */
  q: string
  /** Event type (network: also `failed` for failures and HTTP >= 400). */
  type: string
  target: string
  /** Navigation key `target:nav_seq`, or '' for the whole loaded window. */
  nav: string
  /** Selected/positioned seq (0 = none). */
  seq: number
}
export const DEFAULT_VIEW: ViewState = { panel: 'timeline', q: '', type: '', target: '', nav: '', seq: 0 }

/** Deep link: the view state (never the token) as URL fragment parameters. */
export function encodeView(v: ViewState): string {
  const p = new URLSearchParams()
  if (v.panel !== DEFAULT_VIEW.panel) p.set('panel', v.panel)
  if (v.q) p.set('q', v.q)
  if (v.type) p.set('type', v.type)
  if (v.target) p.set('target', v.target)
  if (v.nav) p.set('nav', v.nav)
  if (v.seq > 0) p.set('seq', String(v.seq))
  return p.toString()
}

export function decodeView(hash: string): ViewState {
  const p = new URLSearchParams(hash.replace(/^#/, ''))
  const panel = p.get('panel') as Panel | null
  const seq = Number(p.get('seq') ?? 0)
  return {
    panel: panel && (PANELS as readonly string[]).includes(panel) ? panel : DEFAULT_VIEW.panel,
    q: (p.get('q') ?? '').slice(0, 500),
    type: (p.get('type') ?? '').slice(0, 100),
    target: (p.get('target') ?? '').slice(0, 200),
    nav: (p.get('nav') ?? '').slice(0, 300),
    seq: Number.isSafeInteger(seq) && seq > 0 ? seq : 0,
  }
}

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
export type Row = EventRow | NetRow | SocketRow | FrameRow | NavRow | GapRow

export interface Filter {
  q: string
  type: string
  target: string
  nav?: Navigation
}

function envMatches(e: Envelope, f: Filter): boolean {
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
  if (f.type === 'failed') return r.socket.error !== undefined
  if (f.type && !r.envelopes.some(e => e.event.type === f.type)) return false
  if (f.target && dataOf(first).target_id !== f.target) return false
  if (f.nav && !inNavigation(first, f.nav)) return false
  if (f.q && !r.envelopes.some(e => searchText(e).includes(f.q.toLowerCase()))) return false
  return true
}

/** Rows of one panel for the loaded window, with gap rows where seqs are missing. */
export function panelRows(panel: Panel, events: readonly Envelope[], f: Filter, derived: Derived): Row[] {
  let rows: Row[]
  switch (panel) {
    case 'timeline':
      rows = derived.navs
        .filter(
          n =>
            (!f.target || n.target_id === f.target) &&
            (!f.nav || n.key === f.nav.key) &&
            (!f.q || n.url.toLowerCase().includes(f.q.toLowerCase())),
        )
        .map((nav): NavRow => ({ kind: 'nav', seq: nav.seq, ts: nav.ts, nav }))
      break
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

/** Types offered by a panel's type filter. */
export function typeOptions(panel: Panel, events: readonly Envelope[]): string[] {
  const set = new Set<string>()
  for (const e of events) if (panel === 'all' || panelOf(e) === panel) set.add(e.event.type)
  const list = [...set].sort()
  return panel === 'network' ? ['failed', ...list] : panel === 'timeline' || panel === 'filmstrip' ? [] : list
}

/** Index of the row at or nearest after seq (for jump-to and cross-panel linking). */
export function rowIndexAtSeq(rows: readonly Row[], seq: number): number {
  let lo = 0
  let hi = rows.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (rows[mid]!.seq < seq) lo = mid + 1
    else hi = mid
  }
  return Math.min(lo, rows.length - 1)
}

export function fmtTime(tsUs: number): string {
  const d = new Date(tsUs / 1000)
  return d.toISOString().slice(11, 23)
}

export function fmtBytes(n: number | undefined): string {
  if (n === undefined) return ''
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
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
