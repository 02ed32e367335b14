// Page reports joined to the input actions they came from: the element clicked, the keys the page
// saw, the element scrolled, and (for a navigate) the URL its navigation went to.
import type { Draft } from './group.js'
import type { PageRec } from './page.js'
import type { Action } from './types.js'

/** An interaction this long after an action's last answer still belongs to it (page reports arrive late). */
export const JOIN_US = 1_000_000

/** Page reports joined to the input action they came from (per draft, by the draft object). */
export interface Joined {
  clickSelector?: string
  keySelector?: string
  /** Named keys the page saw (Enter), and how many characters (never which). */
  keyNames: string[]
  keyChars: number
  scrollSelector?: string
  navUrl?: string
}
export type Joins = Map<Draft, Joined>
export const joinedOf = (joins: Joins, d: Draft): Joined => {
  let j = joins.get(d)
  if (!j) joins.set(d, (j = { keyNames: [], keyChars: 0 }))
  return j
}

/**
 * Each click, key, input and scroll report goes to the latest input action of its target that
 * started at or before it and answered no more than JOIN_US before it: clicks to mouse actions,
 * keys and text put in without keys (the element of a fill) to key actions, scrolls to scroll and
 * mouse actions. list is in start order.
 */
export function joinInteractions(
  joins: Joins,
  list: readonly { d: Draft; a: Action }[],
  recs: readonly PageRec[],
): void {
  const starts = list.map(x => x.a.start_ts)
  for (const r of recs) {
    if (r.kind !== 'click' && r.kind !== 'key' && r.kind !== 'input' && r.kind !== 'scroll') continue
    const wants =
      r.kind === 'key' || r.kind === 'input' ? ['keys'] : r.kind === 'click' ? ['mouse'] : ['mouse', 'scroll']
    for (let i = lastAtOrBefore(starts, r.ts), tries = 0; i >= 0 && tries < 4; i--, tries++) {
      const d = list[i]!.d
      if (r.ts > d.end + JOIN_US) break
      if (!wants.includes(d.kind)) continue
      const j = joinedOf(joins, d)
      if (r.kind === 'click') {
        if (j.clickSelector !== undefined) continue
        j.clickSelector = r.text
      } else if (r.kind === 'key') {
        j.keySelector ??= r.text
        if (r.key !== undefined) j.keyNames.push(r.key)
        else j.keyChars++
      } else if (r.kind === 'input') j.keySelector ??= r.text
      else j.scrollSelector ??= r.text
      break
    }
  }
}

/** Index of the last value <= x in an ascending array (-1 when none). */
function lastAtOrBefore(sorted: readonly number[], x: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (sorted[mid]! <= x) lo = mid + 1
    else hi = mid
  }
  return lo - 1
}
