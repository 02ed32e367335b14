// Gaps: seqs missing between two consecutive loaded envelopes were dropped (unclean stop, shedding).
import type { Envelope } from './data.js'

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
