// Binary search over a sorted list: the first index whose item is not below the key.

/** The first index in [0, length) for which `below(i)` is false, or `length` when none (below must be monotone). */
export function lowerBound(length: number, below: (i: number) => boolean): number {
  let lo = 0
  let hi = length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (below(mid)) lo = mid + 1
    else hi = mid
  }
  return lo
}
