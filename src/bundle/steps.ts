// The top-level agent steps of a window, read from the log: the chapters of an exported recording
// (the bundle's recording.webm, and GET /browsers/{id}/recording/chapters for `recording export`).
// One pass over the window's control events, a page at a time; only the step events are parsed.
import type { EventLog } from '../store/event-log.js'
import { StepSpanCollector, type StepEventLike, type StepSpan } from '../recording/chapters.js'

export interface StepWindow {
  /** Unix microseconds, inclusive. */
  sinceUs: number
  /** Unix microseconds, exclusive; undefined: up to the newest event. */
  untilUs?: number
  /** Events after this seq are not read (the bundle's snapshot). */
  lastSeq?: number
  signal?: AbortSignal
  /** Events and stored bytes per log read (defaults 500 and 1 MiB). */
  pageEvents?: number
  pageBytes?: number
}

export interface WindowSteps {
  steps: StepSpan[]
  /** Steps beyond the bound (MAX_CHAPTERS), not listed. */
  omitted: number
}

const STEP_TYPE = /"type":"agent_step_(?:started|finished)"/

export async function readStepSpans(log: EventLog, w: StepWindow): Promise<WindowSteps> {
  const collector = new StepSpanCollector()
  const base = {
    order: 'asc' as const,
    limit: w.pageEvents ?? 500,
    maxBytes: w.pageBytes ?? 1024 * 1024,
    categories: new Set(['control'] as const),
    ...(w.untilUs !== undefined ? { untilUs: w.untilUs } : {}),
  }
  let cursor: number | undefined
  for (;;) {
    w.signal?.throwIfAborted()
    const page = await log.read(cursor === undefined ? { ...base, sinceUs: w.sinceUs } : { ...base, cursor })
    for (const r of page.records) {
      if (w.lastSeq !== undefined && r.seq > w.lastSeq) return { steps: collector.result(), omitted: collector.omitted }
      if (!STEP_TYPE.test(r.json)) continue
      const e = (JSON.parse(r.json) as { event: StepEventLike }).event
      collector.add(e)
    }
    if (!page.hasMore || page.nextCursor === 0) break
    cursor = page.nextCursor
  }
  return { steps: collector.result(), omitted: collector.omitted }
}
