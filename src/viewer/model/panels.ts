// The panels of the page and which one each event belongs to.
import type { Envelope } from './data.js'

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
