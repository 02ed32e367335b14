// The top-level agent steps of a window, read from the log: the chapters of an exported recording
// (the bundle's recording.webm, and GET /browsers/{id}/recording/chapters for `recording export`).
// One pass over the window's control events, a page at a time; only the step events are parsed, and
// they are paired by the one step rule (src/actions' stepsOf).
import type { EventLog } from '../store/event-log.js'
import type { Envelope } from '../events/index.js'
import { stepsOf } from '../actions/index.js'
import { MAX_CHAPTERS, capTitle, type StepSpan } from '../recording/chapters.js'

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
  /** Top-level steps listed at most (default MAX_CHAPTERS). */
  maxSteps?: number
}

export interface WindowSteps {
  steps: StepSpan[]
  /** Steps beyond the bound (MAX_CHAPTERS), not listed. */
  omitted: number
}

const STEP_TYPE = /"type":"agent_step_(?:started|finished)"/

export async function readStepSpans(log: EventLog, w: StepWindow): Promise<WindowSteps> {
  // Only top-level steps are kept, at most MAX_CHAPTERS of them (later ones are counted).
  const kept: Envelope[] = []
  const ids = new Set<string>()
  let omitted = 0
  const done = (): WindowSteps => ({
    steps: stepsOf(kept).map(s => ({
      step_id: s.step_id,
      name: capTitle(s.name),
      start_ts: s.start_ts,
      ...(s.end_ts !== undefined ? { end_ts: s.end_ts } : {}),
    })),
    omitted,
  })
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
      if (w.lastSeq !== undefined && r.seq > w.lastSeq) return done()
      if (!STEP_TYPE.test(r.json)) continue
      const env = JSON.parse(r.json) as Envelope
      const d = env.event.data as { step_id: string; parent_step_id?: string }
      if (d.parent_step_id !== undefined) continue
      if (!ids.has(d.step_id)) {
        if (ids.size >= (w.maxSteps ?? MAX_CHAPTERS)) {
          omitted++
          continue
        }
        ids.add(d.step_id)
      }
      kept.push(env)
    }
    if (!page.hasMore || page.nextCursor === 0) break
    cursor = page.nextCursor
  }
  return done()
}
