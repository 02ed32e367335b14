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

/** Characters of a `data:` URL shown in a list column (the whole URL stays in the detail pane). */
const DATA_URL_CHARS = 48

/**
 * A request's URL as a list column shows it: the path and query (every request of a page shares
 * its origin, which left only `http://127.0.0.1:80…` in a narrow column), the host added when it is
 * not the page's; a `data:` URL cut to its start.
 */
export function fmtRequestUrl(url: string, pageUrl?: string): string {
  if (url.startsWith('data:')) return url.length > DATA_URL_CHARS ? `${url.slice(0, DATA_URL_CHARS)}…` : url
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return url
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return url
  let sameOrigin = false
  try {
    sameOrigin = pageUrl !== undefined && new URL(pageUrl).origin === u.origin
  } catch {
    sameOrigin = false
  }
  const path = `${u.pathname}${u.search}`
  return sameOrigin ? path : `${u.host}${path}`
}
