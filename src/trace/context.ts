// What every entry writer of a Playwright trace shares: the window and its source, the zip being
// written, the limits, the clock, the counts it reports, and the reads of the log and the frame
// store filtered to the window's target.
import type { Envelope } from '../events/index.js'
import type { FrameMeta } from '../recording/frame-store.js'
import type { ZipStream } from '../bundle/zip-stream.js'
import type { TraceLimits, TraceSource, TraceSummary, TraceWindow } from './types.js'
import type { ScreencastFrameLine, TraceClock } from './format.js'

export interface TraceContext {
  readonly source: TraceSource
  readonly window: TraceWindow
  readonly limits: TraceLimits
  readonly zip: ZipStream
  /** The build's start in Unix microseconds: the frames' upper end when the window has none. */
  readonly createdUs: number
  readonly summary: TraceSummary
  /** Every page id a line named (the summary's `pages`). */
  readonly pages: Set<string>
  readonly clock: TraceClock
  /** The first recording frame's viewport, for the context line. */
  readonly viewport: { width: number; height: number } | undefined
  /** The film strip (filled by its writer, read by trace.trace). */
  frames: ScreencastFrameLine[]
}

/** The context once the clock's origin and the viewport are read (one log read, one frame list). */
export async function traceContext(
  zip: ZipStream,
  source: TraceSource,
  window: TraceWindow,
  limits: TraceLimits,
  createdUs: number,
): Promise<TraceContext> {
  const base = { source, window, limits, zip, createdUs }
  const clock = await origin(zip, window)
  let viewport: { width: number; height: number } | undefined
  for (const meta of frameMetas(base)) {
    if (meta.viewport_width && meta.viewport_height)
      viewport = { width: meta.viewport_width, height: meta.viewport_height }
    break
  }
  const summary: TraceSummary = {
    actions: 0,
    steps: 0,
    resources: 0,
    bodies: 0,
    console: 0,
    page_errors: 0,
    events: 0,
    frames: 0,
    frames_from: 'none',
    screenshots: 0,
    pages: 0,
  }
  return { ...base, summary, pages: new Set<string>(), clock, viewport, frames: [] }
}

/** The clock's origin: the first stored event of the window (else the window's start). */
async function origin(zip: ZipStream, window: TraceWindow): Promise<TraceClock> {
  for await (const page of zip.records()) return { originUs: page[0]!.ts }
  return { originUs: window.sinceUs }
}

const targetOf = (e: Envelope): string | undefined => (e.event.data as { target_id?: string }).target_id

/** Whether an envelope belongs in the trace: the window's target's, or browser-wide. */
export function keep(ctx: Pick<TraceContext, 'window'>, e: Envelope): boolean {
  if (ctx.window.targetId === undefined) return true
  const t = targetOf(e)
  return t === undefined || t === ctx.window.targetId
}

export function seePage(ctx: TraceContext, id: string | undefined): void {
  if (id !== undefined) ctx.pages.add(id)
}

/** Envelopes of the window with their stored size, a page at a time, parsed and filtered to the target. */
export async function* sized(
  ctx: TraceContext,
  categories?: readonly string[],
  map = false,
): AsyncGenerator<[Envelope, number][]> {
  for await (const stored of ctx.zip.records(categories)) {
    const page = map && ctx.source.mapRecords ? await ctx.source.mapRecords(stored) : stored
    const out: [Envelope, number][] = []
    for (const r of page) {
      const e = JSON.parse(r.json) as Envelope
      if (keep(ctx, e)) out.push([e, r.json.length])
    }
    yield out
  }
}

export async function* envelopes(
  ctx: TraceContext,
  categories?: readonly string[],
  map = false,
): AsyncGenerator<Envelope[]> {
  for await (const page of sized(ctx, categories, map)) yield page.map(p => p[0])
}

/** Frames of the window still stored, oldest first. */
export function* frameMetas(
  ctx: Pick<TraceContext, 'source' | 'window' | 'limits' | 'zip' | 'createdUs'>,
): Generator<FrameMeta> {
  const { window, zip } = ctx
  const store = ctx.source.frames
  if (!store) return
  const untilUs = window.untilUs ?? ctx.createdUs
  let cursor: number | undefined
  let n = 0
  for (;;) {
    zip.signal.throwIfAborted()
    const page = store.list({ sinceUs: window.sinceUs, untilUs, limit: 100, ...(cursor ? { cursor } : {}) })
    for (const meta of page.items) {
      if (meta.after_seq > zip.lastSeq || n >= ctx.limits.maxFrames) return
      if (window.targetId !== undefined && meta.target_id !== window.targetId) continue
      n++
      yield meta
    }
    if (!page.hasMore || page.nextCursor === 0 || page.items.length === 0) return
    cursor = page.nextCursor
  }
}
