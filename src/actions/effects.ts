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

/**
 * Effects: each report of the target counts for the action whose window holds it: from the action's
 * start until the next action on the target starts, or for a navigate until the
 * page_navigation_settled that follows its navigation, if that comes first. Both lists are in
 * order (actions by start, reports by seq, whose ts never decreases), so one merge pass.
 */
export function countEffects(joins: Joins, list: readonly { d: Draft; a: Action }[], recs: readonly PageRec[]): void {
  let i = -1
  let closed = false
  const failed = new Set<string>()
  const close = (a: Action, at: number) => {
    a.effects_end_ts = at
    closed = true
  }
  for (const r of recs) {
    while (i + 1 < list.length && list[i + 1]!.a.start_ts <= r.ts) {
      if (i >= 0 && !closed) close(list[i]!.a, list[i + 1]!.a.start_ts)
      i++
      closed = false
      failed.clear()
    }
    if (i < 0 || closed) continue
    const { d, a } = list[i]!
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
  // Windows that no report closed end where the next action starts.
  for (let k = 0; k + 1 < list.length; k++) list[k]!.a.effects_end_ts ??= list[k + 1]!.a.start_ts
}
