// The last resort for a script or map that can no longer be loaded (the page is gone): the
// network_response the daemon captured for that URL on a page of the same origin (its request's
// document_url), read back from the log, newest first, over a bounded number of records. Bodies are captured for text types only and cut to
// --network-body-max-bytes, so only a small map is ever found this way; a cut body is never used.
import type { ReadQuery, ReadResult } from '../store/event-log.js'
import { originOf } from './fetch-rule.js'

export interface CapturedResponse {
  status: number
  headers: Record<string, string>
  /** The whole body, when it was captured uncut. */
  body?: string
}

/**
 * The newest uncut response captured for `url` on a page of `pageOrigin`: a response counts only when
 * its request's `document_url` is of that origin, so one site's captured answers never stand in for
 * another site's scripts or maps.
 */
export type CapturedLookup = (pageOrigin: string, url: string) => Promise<CapturedResponse | undefined>

/** Network records looked at per lookup at most (newest first). */
export const CAPTURED_LOOKUP_RECORDS = 5000
/** Responses for the URL held while their requests are looked for (older records). */
const MAX_CANDIDATES = 50

interface NetworkRecord {
  event: {
    type: string
    truncated?: boolean
    data: {
      url?: string
      request_id?: string
      document_url?: string
      status?: number
      headers?: Record<string, string>
      body?: string
    }
  }
}

export function capturedLookup(
  log: { read(q: ReadQuery): Promise<ReadResult> },
  maxRecords = CAPTURED_LOOKUP_RECORDS,
): CapturedLookup {
  return async (pageOrigin, url) => {
    const needle = JSON.stringify(url)
    // Newest first; each waits for its request (older), which says which page asked for it.
    const candidates: { requestId: string; response: CapturedResponse; origin?: string | null }[] = []
    const pending = new Map<string, (typeof candidates)[number]>()
    const settled = () => {
      for (const c of candidates) {
        if (c.origin === undefined) return undefined
        if (c.origin === pageOrigin) return c.response
      }
      return undefined
    }
    let cursor: number | undefined
    for (let seen = 0; seen < maxRecords;) {
      const page = await log.read({
        order: 'desc',
        limit: Math.min(500, maxRecords - seen),
        categories: new Set(['network']),
        ...(cursor !== undefined ? { cursor } : {}),
      })
      for (const r of page.records) {
        // Cheap tests first: most records are other URLs and other requests.
        const isResponse = r.json.includes('"network_response"') && r.json.includes(needle)
        if (!isResponse && !(pending.size > 0 && r.json.includes('"network_request"'))) continue
        const env = JSON.parse(r.json) as NetworkRecord
        const d = env.event.data
        if (env.event.type === 'network_request' && d.request_id !== undefined) {
          const c = pending.get(d.request_id)
          if (!c) continue
          pending.delete(d.request_id)
          c.origin = originOf(d.document_url) ?? null
          const found = settled()
          if (found) return found
          continue
        }
        if (env.event.type !== 'network_response' || d.url !== url || d.request_id === undefined) continue
        if (candidates.length >= MAX_CANDIDATES || pending.has(d.request_id)) continue
        const response: CapturedResponse = { status: d.status ?? 0, headers: d.headers ?? {} }
        if (typeof d.body === 'string' && !env.event.truncated) response.body = d.body
        const c = { requestId: d.request_id, response }
        candidates.push(c)
        pending.set(d.request_id, c)
      }
      seen += page.records.length
      if (!page.hasMore || page.records.length === 0) break
      cursor = page.nextCursor
    }
    // Requests never found (older than the records looked at) do not count.
    return candidates.find(c => c.origin === pageOrigin)?.response
  }
}
