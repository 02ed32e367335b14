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
