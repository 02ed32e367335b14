// Formatting for display: times, sizes, and recognising values the daemon masked.

export function fmtTime(tsUs: number): string {
  const d = new Date(tsUs / 1000)
  return d.toISOString().slice(11, 23)
}

export function fmtBytes(n: number | undefined): string {
  if (n === undefined) return ''
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

/** True for a value the daemon masked before storing it (`[redacted:<length class>]`, older logs `[REDACTED]`). */
export const isRedacted = (v: unknown): boolean => typeof v === 'string' && /^\[redacted(:\d+)?\]$/i.test(v)
/** True when a value contains masked parts (a URL with a masked parameter, a form body). */
export const hasRedaction = (v: unknown): boolean => typeof v === 'string' && /\[redacted(:\d+)?\]/i.test(v)
