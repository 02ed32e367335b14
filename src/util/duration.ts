// Durations as users write them: "250ms", "2s", "5m", "1h30m", "90s". Pure, shared by config, API and CLI.
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y

/** Parses a duration into milliseconds; returns undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim()
  if (s === '') return undefined
  if (s === '0') return 0
  let total = 0
  PART.lastIndex = 0
  let pos = 0
  while (pos < s.length) {
    PART.lastIndex = pos
    const m = PART.exec(s)
    if (!m) return undefined
    total += Number(m[1]) * UNIT_MS[m[2]!]!
    pos = PART.lastIndex
  }
  return Number.isFinite(total) ? total : undefined
}

/** The shortest way to write ms in the largest whole unit: 7d, 2m, 15s, 250ms. */
export function formatDuration(ms: number): string {
  if (ms % 86_400_000 === 0 && ms > 0) return `${ms / 86_400_000}d`
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`
  if (ms % 1000 === 0 && ms > 0) return `${ms / 1000}s`
  return `${ms}ms`
}
