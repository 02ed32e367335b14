// A window of a reader's events, a page at a time in seq order: what the actions and digest routes
// read (each bounds what it keeps as the pages come).
import type { EventReader } from '../sse/telemetry-source.js'
import type { ReadQuery, StoredRecord } from '../store/event-log.js'

/** Visits every page of [window.sinceUs, window.untilUs); `visit` throws to stop the read. */
export async function forEachWindowPage(
  reader: EventReader,
  window: ReadQuery,
  page: Pick<ReadQuery, 'limit' | 'maxBytes' | 'categories'>,
  visit: (records: StoredRecord[]) => void | Promise<void>,
): Promise<void> {
  const base: ReadQuery = {
    order: 'asc',
    ...page,
    ...(window.untilUs !== undefined ? { untilUs: window.untilUs } : {}),
  }
  let cursor: number | undefined
  for (;;) {
    const read = await reader.read(cursor === undefined ? { ...base, sinceUs: window.sinceUs } : { ...base, cursor })
    await visit(read.records)
    if (!read.hasMore || read.records.length === 0) return
    cursor = read.nextCursor
  }
}
