// The view state a deep link carries: panel, filters, navigation and position.
import { PANELS, type Panel } from './panels.js'

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
  /** The Agent panel's selected row (`step:<id>`, `action:<id>`, `setup`, `cmd:<seq>`; '' = none). */
  sel: string
  /** A time span (Unix µs) the other panels are narrowed to: a selected step's or action's; 0 = none. */
  from: number
  /** Its end (inclusive); 0 = open-ended. */
  to: number
}
export const DEFAULT_VIEW: ViewState = {
  panel: 'timeline',
  q: '',
  type: '',
  target: '',
  nav: '',
  seq: 0,
  sel: '',
  from: 0,
  to: 0,
}

/** Deep link: the view state (never the token) as URL fragment parameters. */
export function encodeView(v: ViewState): string {
  const p = new URLSearchParams()
  if (v.panel !== DEFAULT_VIEW.panel) p.set('panel', v.panel)
  if (v.q) p.set('q', v.q)
  if (v.type) p.set('type', v.type)
  if (v.target) p.set('target', v.target)
  if (v.nav) p.set('nav', v.nav)
  if (v.seq > 0) p.set('seq', String(v.seq))
  if (v.sel) p.set('sel', v.sel)
  if (v.from > 0) p.set('from', String(v.from))
  if (v.from > 0 && v.to > 0) p.set('to', String(v.to))
  return p.toString()
}

export function decodeView(hash: string): ViewState {
  const p = new URLSearchParams(hash.replace(/^#/, ''))
  const panel = p.get('panel') as Panel | null
  const seq = Number(p.get('seq') ?? 0)
  const us = (name: string) => {
    const v = Number(p.get(name) ?? 0)
    return Number.isSafeInteger(v) && v > 0 ? v : 0
  }
  const from = us('from')
  return {
    panel: panel && (PANELS as readonly string[]).includes(panel) ? panel : DEFAULT_VIEW.panel,
    q: (p.get('q') ?? '').slice(0, 500),
    type: (p.get('type') ?? '').slice(0, 100),
    target: (p.get('target') ?? '').slice(0, 200),
    nav: (p.get('nav') ?? '').slice(0, 300),
    seq: Number.isSafeInteger(seq) && seq > 0 ? seq : 0,
    sel: (p.get('sel') ?? '').slice(0, 300),
    from,
    to: from > 0 ? us('to') : 0,
  }
}
