// Navigations: one section per (target, nav_seq) of a page target, with its lifecycle markers,
// request/error counts, layout shift, LCP, its Web Vitals, long animation frames and incidents.
// Only a page's own events make a navigation: an OOPIF's and a dedicated worker's carry their
// page's nav_seq under their own target id, and a worker is never a navigation.
import { urlTitle } from '../../util/url-title.js'
import { dataOf, num, str, type Envelope } from './data.js'

export interface Navigation {
  key: string
  target_id: string
  nav_seq: number
  url: string
  /** The URL as a heading: bounded (a data: URL to its media type and the start of its data). */
  title: string
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
  /** Sum of the layout shifts reported (none reported: absent, not 0). */
  cls?: number
  lcpMs?: number
  /** Crashes, dialogs and downloads, in order, with their offset from the navigation's start. */
  incidents: Incident[]
  /** The latest page_web_vital of each metric. */
  vitals: Partial<Record<VitalName, Vital>>
  /** Long animation frames (the first LONG_FRAMES_DRAWN), offset from the navigation's start. */
  longFrames: LongFrame[]
  /** All long animation frames, drawn or not. */
  longFrameCount: number
}
export const VITAL_NAMES = ['TTFB', 'FCP', 'LCP', 'CLS', 'INP'] as const
export type VitalName = (typeof VITAL_NAMES)[number]
export interface Vital {
  seq: number
  value: number
  rating: string
  attribution: Record<string, unknown>
}
export interface LongFrame {
  seq: number
  atMs: number
  durationMs: number
  /** The longest script: its function and URL, or its invoker. */
  label: string
}
/** Long frames drawn per navigation (a janky page has thousands; the count says how many). */
export const LONG_FRAMES_DRAWN = 200
/** A vital's value as text: CLS unitless, the others in ms. */
export function vitalText(name: VitalName, value: number): string {
  return name === 'CLS' ? value.toFixed(3) : `${value.toFixed(0)} ms`
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

/** A page target's event (envelopes from before target_type was recorded count as the page's). */
function ofPage(d: Record<string, unknown>): boolean {
  return (str(d.target_type) ?? 'page') === 'page'
}

export function navKeyOf(e: Envelope): string | undefined {
  const d = dataOf(e)
  const t = str(d.target_id)
  const n = num(d.nav_seq)
  return t !== undefined && n !== undefined && ofPage(d) ? navKey(t, n) : undefined
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
      title: '',
      seq: start.seq,
      ts: start.event.ts,
      endSeq: start.seq,
      started,
      markers: {},
      requests: 0,
      failures: 0,
      consoleErrors: 0,
      incidents: [],
      vitals: {},
      longFrames: [],
      longFrameCount: 0,
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
      if (target !== undefined && d.parent_frame_id === undefined && ofPage(d)) {
        pending.set(target, e)
        // The epoch begins here: whatever the old navigation still logs goes to it, but its window ends.
        const prev = lastNavOfTarget.get(target)
        if (prev) prev.endSeq = e.seq - 1
      }
      continue
    }
    const navSeq = num(d.nav_seq)
    if (target === undefined || navSeq === undefined || !ofPage(d)) continue
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
        if (ls && !ls.had_recent_input && typeof ls.value === 'number') nav.cls = (nav.cls ?? 0) + ls.value
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
      case 'page_web_vital': {
        const d = event.data
        nav.vitals[d.name] = { seq: e.seq, value: d.value, rating: d.rating, attribution: d.attribution }
        break
      }
      case 'page_long_animation_frame': {
        const d = event.data
        if (nav.longFrameCount++ >= LONG_FRAMES_DRAWN) break
        const top = d.scripts[0]
        const where = top ? [top.source_function_name, top.source_url].filter(Boolean).join(' ') : ''
        nav.longFrames.push({
          seq: e.seq,
          // start_time is epoch milliseconds; ts is Unix µs.
          atMs: Math.max(0, d.start_time - nav.ts / 1000),
          durationMs: d.duration,
          label: where || top?.invoker || 'no script',
        })
        break
      }
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
  for (const n of navs) n.title = urlTitle(n.url)
  const last = events.at(-1)?.seq ?? 0
  for (const n of navs)
    if (lastNavOfTarget.get(n.target_id) === n && !pending.has(n.target_id)) n.endSeq = Math.max(n.endSeq, last)
  return navs
}

/**
 * Does an event belong to a navigation's window? A page's events by (target, nav_seq); those of the
 * targets it owns (OOPIFs, workers: their own target id, the page's nav_seq) and target-less ones by seq range.
 */
export function inNavigation(e: Envelope, nav: Navigation): boolean {
  const key = navKeyOf(e)
  if (key !== undefined) return key === nav.key
  if (e.event.type === 'page_navigation' && e.seq === nav.seq) return true
  const d = dataOf(e)
  const owned = d.target_id === undefined || (!ofPage(d) && num(d.nav_seq) === nav.nav_seq)
  return owned && e.seq >= nav.seq && e.seq <= nav.endSeq
}
