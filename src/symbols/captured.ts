// The last resort for a script or map that can no longer be loaded (the page is gone): the
// network_response the daemon captured for that URL on a page of the same origin (its request's
// document_url), read back from the log, newest first, over a bounded number of records and bytes
// (per lookup, and for all lookups together each second). Bodies are captured for text types only and cut to
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
/**
 * Stored bytes one lookup reads at most: 5,000 records with bodies at their cap would be about 320
 * MB, read for each script or map the page failed to load.
 */
export const CAPTURED_LOOKUP_BYTES = 4 * 1024 * 1024
/** Bytes all lookups together may read: this many at once, refilled at half of it a second. */
export const CAPTURED_SCAN_BURST_BYTES = 16 * 1024 * 1024
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

export interface CapturedLookupOptions {
  maxRecords?: number
  maxBytes?: number
  burstBytes?: number
  /** Monotonic ms (tests). */
  now?: () => number
}

export function capturedLookup(
  log: { read(q: ReadQuery): Promise<ReadResult> },
  opts: CapturedLookupOptions = {},
): CapturedLookup {
  const maxRecords = opts.maxRecords ?? CAPTURED_LOOKUP_RECORDS
  const maxBytes = opts.maxBytes ?? CAPTURED_LOOKUP_BYTES
  const burst = opts.burstBytes ?? CAPTURED_SCAN_BURST_BYTES
  const now = opts.now ?? (() => performance.now())
  // The scan budget shared by all lookups: a page failing thousands of loads cannot make the daemon
  // read its log over and over; a lookup past it finds nothing (the load's own failure stands).
  const budget = { bytes: burst, at: now() }
  return async (pageOrigin, url) => {
    const t = now()
    budget.bytes = Math.min(burst, budget.bytes + ((t - budget.at) * burst) / 2000)
    budget.at = t
    let room = Math.min(maxBytes, budget.bytes)
    if (room < 64 * 1024) return undefined
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
    for (let seen = 0; seen < maxRecords && room > 0;) {
      const page = await log.read({
        order: 'desc',
        limit: Math.min(500, maxRecords - seen),
        categories: new Set(['network']),
        maxBytes: room,
        ...(cursor !== undefined ? { cursor } : {}),
      })
      for (const r of page.records) {
        room -= r.json.length
        budget.bytes -= r.json.length
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
