// Reads every event of a window through GET /browsers/{id}/telemetry/events, page after page, with a
// progress line on a terminal. Shared by `read` (prints as it goes) and `har` (collects).
import type { Envelope } from '../events/index.js'
import { pages, type ApiClient } from './client.js'
import type { OutStream } from './io.js'
import { progress } from './progress.js'

export interface WindowQuery {
  since?: string
  until?: string
  categories?: string[]
  order?: 'asc' | 'desc'
  /** Most events in all (default: the whole window). */
  limit?: number
}

export const PAGE_SIZE = 100

export async function readWindow(
  client: ApiClient,
  q: WindowQuery,
  onPage: (envelopes: Envelope[]) => Promise<void> | void,
  opts: { stderr: OutStream; signal?: AbortSignal },
): Promise<number> {
  const path = await client.browserPath('/telemetry/events')
  const bar = progress(opts.stderr)
  let total = 0
  let pageCount = 0
  try {
    const query = {
      since: q.since,
      until: q.until,
      order: q.order,
      category: q.categories && q.categories.length > 0 ? q.categories.join(',') : undefined,
      limit: String(Math.min(PAGE_SIZE, q.limit ?? PAGE_SIZE)),
    }
    for await (const page of pages<Envelope>(client, path, query, opts.signal)) {
      pageCount++
      const take = q.limit !== undefined ? page.slice(0, q.limit - total) : page
      total += take.length
      await onPage(take)
      const last = take.at(-1)
      bar.update(`read ${total} events (${pageCount} pages)${last ? `, at seq ${last.seq}` : ''}`)
      if (q.limit !== undefined && total >= q.limit) break
    }
  } finally {
    bar.done()
  }
  return total
}
