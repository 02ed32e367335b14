// The chapters of an exported video: one per top-level agent step (an agent marks its own steps with
// agent_step_started / agent_step_finished; a step with a parent_step_id is nested, never a chapter),
// placed on the video's own clock and written as ffmpeg's FFMETADATA for the muxer. Pure and a
// leaf: callers hand in the window's top-level steps as plain spans (src/bundle/steps.ts pairs them
// from the log with src/actions' stepsOf), so this folder needs nothing of the event model.

/** A top-level step as the window shows it; times are Unix µs on the events clock. */
export interface StepSpan {
  step_id: string
  /** The step's name, cut to MAX_TITLE_CHARS. */
  name: string
  /** agent_step_started's ts; for a step started before the window, its finish minus its duration. */
  start_ts: number
  /** agent_step_finished's ts; absent while the step is open (or when it finished after the window). */
  end_ts?: number
}

/** One chapter on the video's clock (ms from its first frame), inside [0, the video's duration]. */
export interface Chapter {
  startMs: number
  endMs: number
  title: string
}

/** Titles are cut to this many characters (code points; the last one of a cut title is '…'). */
export const MAX_TITLE_CHARS = 256
/** Steps a window yields at most; later ones are counted in `omitted` (memory stays bounded). */
export const MAX_CHAPTERS = 10_000

/** A name cut to MAX_TITLE_CHARS code points (never inside a surrogate pair), '…' marking a cut. */
export function capTitle(name: string): string {
  if (name.length <= MAX_TITLE_CHARS) return name
  const chars = Array.from(name)
  return chars.length <= MAX_TITLE_CHARS ? name : chars.slice(0, MAX_TITLE_CHARS - 1).join('') + '…'
}

/**
 * The chapters of a video whose first frame is at `firstUs` and which lasts `durationMs`: each span
 * from its start to its end, an open one to the next step's start (or the video's end); times
 * rounded to the ms and clamped to the video; spans entirely outside it dropped. Sorted by start.
 */
export function chaptersOf(spans: readonly StepSpan[], firstUs: number, durationMs: number): Chapter[] {
  const sorted = [...spans].sort((a, b) => a.start_ts - b.start_ts)
  const endUs = firstUs + durationMs * 1000
  const toMs = (us: number) => Math.min(durationMs, Math.max(0, Math.round((us - firstUs) / 1000)))
  // The start of the next step that starts later than each one (for an open step's end).
  const nextStart: (number | undefined)[] = new Array(sorted.length)
  for (let i = sorted.length - 2; i >= 0; i--) {
    const n = sorted[i + 1]!
    nextStart[i] = n.start_ts > sorted[i]!.start_ts ? n.start_ts : nextStart[i + 1]
  }
  const out: Chapter[] = []
  sorted.forEach((s, i) => {
    const end = s.end_ts ?? nextStart[i] ?? endUs
    // Outside: it ended before the first frame (having started before it), or starts at or after the end.
    if ((end <= firstUs && s.start_ts < firstUs) || s.start_ts >= endUs) return
    const startMs = toMs(s.start_ts)
    if (startMs >= durationMs) return
    // At least 1 ms, so a step shorter than that still shows.
    const endMs = Math.min(durationMs, Math.max(startMs + 1, toMs(end)))
    out.push({ startMs, endMs, title: s.name === '' ? s.step_id : s.name })
  })
  return out
}

/**
 * ffmpeg's FFMETADATA text of the chapters (ms time base). Titles escaped by its rules: '=', ';',
 * '#', '\' and line breaks (LF and CR, either of which would otherwise end the line) take a
 * backslash; NUL, which would cut the value, is dropped. Nothing a title holds can start a line
 * of its own, so no title can add a key or a chapter.
 */
export function ffmetadata(chapters: readonly Chapter[]): string {
  let s = ';FFMETADATA1\n'
  for (const c of chapters) {
    s += `[CHAPTER]\nTIMEBASE=1/1000\nSTART=${c.startMs}\nEND=${c.endMs}\ntitle=${escapeMetadata(capTitle(c.title))}\n`
  }
  return s
}

export function escapeMetadata(value: string): string {
  return value.replace(/\0/g, '').replace(/[=;#\\\n\r]/g, '\\$&')
}
