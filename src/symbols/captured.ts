// The last resort for a script or map the browser can no longer load (the page is gone): the
// network_response the daemon captured for that URL, read back from the log, newest first, over a
// bounded number of records. Bodies are captured for text types only and cut to
// --network-body-max-bytes, so only a small map is ever found this way; a cut body is never used.
import type { ReadQuery, ReadResult } from '../store/event-log.js'

export interface CapturedResponse {
  status: number
  headers: Record<string, string>
  /** The whole body, when it was captured uncut. */
  body?: string
}

export type CapturedLookup = (url: string) => Promise<CapturedResponse | undefined>

/** Network records looked at per lookup at most (newest first). */
export const CAPTURED_LOOKUP_RECORDS = 5000

export function capturedLookup(
  log: { read(q: ReadQuery): Promise<ReadResult> },
  maxRecords = CAPTURED_LOOKUP_RECORDS,
): CapturedLookup {
  return async url => {
    const needle = JSON.stringify(url)
    let cursor: number | undefined
    for (let seen = 0; seen < maxRecords;) {
      const page = await log.read({
        order: 'desc',
        limit: Math.min(500, maxRecords - seen),
        categories: new Set(['network']),
        ...(cursor !== undefined ? { cursor } : {}),
      })
      for (const r of page.records) {
        // Cheap test first: most records are other URLs.
        if (!r.json.includes('"network_response"') || !r.json.includes(needle)) continue
        const env = JSON.parse(r.json) as {
          event: {
            type: string
            truncated?: boolean
            data: { url?: string; status?: number; headers?: Record<string, string>; body?: string }
          }
        }
        const d = env.event.data
        if (env.event.type !== 'network_response' || d.url !== url) continue
        const out: CapturedResponse = { status: d.status ?? 0, headers: d.headers ?? {} }
        if (typeof d.body === 'string' && !env.event.truncated) out.body = d.body
        return out
      }
      seen += page.records.length
      if (!page.hasMore || page.records.length === 0) return undefined
      cursor = page.nextCursor
    }
    return undefined
  }
}
