// Options over defaults without the spread trap: `{ pollMs: 500, ...opts }` lets an explicit
// `pollMs: undefined` (an unset flag passed through) erase the default; this ignores undefined keys.

/** `defaults`, overridden by every key of `given` whose value is not undefined. */
export function withDefaults<T extends object>(
  defaults: T,
  given: { [K in keyof T]?: T[K] | undefined } | undefined,
): T {
  const out = { ...defaults }
  if (given) {
    for (const key of Object.keys(given) as (keyof T)[]) {
      const v = given[key]
      if (v !== undefined) out[key] = v
    }
  }
  return out
}
