// The page's own reports, reduced to what actions need: one small record per envelope that matters
// (a navigation, a settle, a request, a failure, a console error, a dialog, a download, a crash, a
// click, a key, text put in, a scroll), never a typed character.
import type { Envelope } from '../events/index.js'
import { lowerBound } from '../util/lower-bound.js'
import { isNamedKey } from './methods.js'

/** What the page reported, reduced to what actions need (never a typed character). */
export type PageKind =
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
  | 'input'
  | 'scroll'
export interface PageRec {
  seq: number
  ts: number
  kind: PageKind
  /** nav: the URL; click, key and input: the element's selector; scroll: the scrolled element's. */
  text?: string
  /** key: the key's name when it is a named key (Enter), else undefined (a character). */
  key?: string
  /** failed: the request, so a response >= 400 and a failure of one request count once. */
  request?: string
}

/** The record of an envelope of the page, or undefined when actions do not read it. */
export function pageRecord(e: Envelope): PageRec | undefined {
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
    case 'interaction_input':
      return { ...at, kind: 'input', text: ev.data.selector }
    case 'interaction_scroll_settled':
      return { ...at, kind: 'scroll', text: ev.data.target_selector }
    default:
      return undefined
  }
}

/** A navigation that never settles counts as loading for this long after it. */
export const LOAD_MAX_US = 30_000_000
/** A navigate's navigation comes at most this long after its answer (else it caused none). */
const NAV_AFTER_US = 10_000_000

/** When the navigations of one target stopped loading, from its reports (in ts order). */
export class LoadTimes {
  private readonly navs: number[] = []
  private readonly settles: number[] = []

  constructor(recs: readonly PageRec[]) {
    for (const r of recs) {
      if (r.kind === 'nav') this.navs.push(r.ts)
      else if (r.kind === 'settled') this.settles.push(r.ts)
    }
  }

  /**
   * The end of the loading of the navigation a navigate (sent at `start`, answered at `end`)
   * started: the first page_navigation_settled after that navigation, or LOAD_MAX_US after it when
   * none came; undefined when no main-frame navigation followed it (nothing known to wait for).
   */
  loadedAt(start: number, end: number): number | undefined {
    const nav = this.navs[lowerBound(this.navs.length, i => this.navs[i]! < start)]
    if (nav === undefined || nav > end + NAV_AFTER_US) return undefined
    const settle = this.settles[lowerBound(this.settles.length, i => this.settles[i]! < nav)]
    return settle !== undefined && settle < nav + LOAD_MAX_US ? settle : nav + LOAD_MAX_US
  }
}
