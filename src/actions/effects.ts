// What followed each action on its target: the page's reports counted in the action's effects
// window, one merge pass over the actions (by start) and the reports (by seq) of one target.
import type { Draft } from './group.js'
import { joinedOf, type Joins } from './join.js'
import type { PageRec } from './page.js'
import type { Action, ActionEffects } from './types.js'

/** Effects of an action that caused nothing (also the start of a sum). */
export const noEffects = (): ActionEffects => ({
  navigations: 0,
  requests: 0,
  failed_requests: 0,
  console_errors: 0,
  dialogs: 0,
  downloads: 0,
  crashed: false,
})

/** A navigate's loading: when its navigation stopped loading (LoadTimes.loadedAt), if known. */
export type LoadedAt = (d: Draft) => number | undefined

/** Drafts that never end a navigation's window while it loads: script calls, preparations, attempts. */
const WAITS = new Set<Draft['kind']>(['evaluate', 'setup', 'attempt'])

/** When an action starts to act: its first command that is not a script call or a helper (its checks come first). */
function actsAt(d: Draft): number {
  const c = d.cmds.find(x => x.role !== 'eval' && x.role !== 'prep')
  return c ? c.start : d.start
}

/**
 * The effects windows of one target's actions (in start order): [from, to) each, to undefined when
 * the window runs to the end of what was read; from === to for an action that has none. An
 * action's window runs from its start until the next action starts; a navigate's, until its
 * navigation stopped loading (settled), whatever script calls come meanwhile: an evaluate,
 * a setup command or an attempt that starts then has no window, and an input ends it only once it
 * acts (its press or its keys, not its checks).
 */
function windows(list: readonly { d: Draft; a: Action }[], loadedAt: LoadedAt): { from: number; to?: number }[] {
  const out = list.map(x => ({ from: x.a.start_ts }) as { from: number; to?: number })
  let owner = -1
  let loaded: number | undefined
  for (let k = 0; k < list.length; k++) {
    const { d, a } = list[k]!
    if (owner >= 0 && loaded !== undefined && a.start_ts < loaded) {
      if (WAITS.has(d.kind)) {
        out[k]!.to = a.start_ts
        continue
      }
      const at = Math.max(a.start_ts, Math.min(loaded, actsAt(d)))
      out[owner]!.to = Math.min(loaded, at)
      out[k]!.from = at
    } else if (owner >= 0) out[owner]!.to ??= loaded !== undefined ? Math.min(loaded, a.start_ts) : a.start_ts
    owner = k
    loaded = d.kind === 'navigate' ? loadedAt(d) : undefined
  }
  if (owner >= 0 && loaded !== undefined) out[owner]!.to ??= loaded
  // Apart and in order, whatever the clamps above made of overlapping streams.
  let floor = -Infinity
  for (const x of out) {
    if (x.to === x.from) continue // none: inside another's window
    if (x.from < floor) x.from = floor
    if (x.to !== undefined && x.to < x.from) x.to = x.from
    if (x.to !== undefined && x.to > x.from) floor = x.to
    else if (x.to === undefined) floor = Math.max(floor, x.from)
  }
  return out
}

/**
 * Effects: each report of the target counts for the action whose window holds it (windows()).
 * Windows are in order and apart, and reports come by seq (their ts never decreases): one merge
 * pass. A navigate's window also closes at the page_navigation_settled after its navigation when
 * its loading time is not known beforehand.
 */
export function countEffects(
  joins: Joins,
  list: readonly { d: Draft; a: Action }[],
  recs: readonly PageRec[],
  loadedAt: LoadedAt = () => undefined,
): void {
  const w = windows(list, loadedAt)
  let i = -1
  let closed = false
  const failed = new Set<string>()
  const close = (a: Action, at: number) => {
    a.effects_end_ts = at
    closed = true
  }
  for (const r of recs) {
    for (let k = i + 1; k < list.length && w[k]!.from <= r.ts; k++) {
      if (w[k]!.to === w[k]!.from) continue // no window
      if (i >= 0 && !closed) close(list[i]!.a, w[i]!.to ?? w[k]!.from)
      i = k
      closed = false
      failed.clear()
    }
    if (i < 0 || closed) continue
    const { d, a } = list[i]!
    if (w[i]!.to !== undefined && r.ts >= w[i]!.to!) {
      close(a, w[i]!.to!)
      continue
    }
    const e = a.effects
    switch (r.kind) {
      case 'nav':
        e.navigations++
        if (d.kind === 'navigate') {
          const j = joinedOf(joins, d)
          if (j.navUrl === undefined) {
            j.navUrl = r.text
            if (r.ts > a.end_ts) a.end_ts = r.ts
          }
        }
        break
      case 'settled':
        if (d.kind === 'navigate' && joinedOf(joins, d).navUrl !== undefined) close(a, r.ts)
        break
      case 'request':
        e.requests++
        break
      case 'failed':
        if (!failed.has(r.request!)) {
          failed.add(r.request!)
          e.failed_requests++
        }
        break
      case 'console_error':
        e.console_errors++
        break
      case 'dialog':
        e.dialogs++
        break
      case 'download':
        e.downloads++
        break
      case 'crash':
        e.crashed = true
        break
      default:
        break
    }
  }
  // Windows that no report closed end where they were to.
  for (let k = 0; k < list.length; k++) {
    const to = w[k]!.to
    if (to !== undefined) list[k]!.a.effects_end_ts ??= to
  }
}
