// The player's rules between frames and the event lists (pure): where a moment falls in a panel's
// rows, which clicks are drawn on a frame, and where an event row seeks the video.
import { dataOf, num, str, type Envelope } from './data.js'
import { frameIndexBeforeSeq, frameIndexAt, type RecordingFrame } from './recording.js'
import type { Row } from './rows.js'

/** A moment of the session: a time, and the event it was taken from (the frame before its seq is shown). */
export interface Moment {
  tUs: number
  seq?: number
}

/** The frame on screen at a moment: the one before the event's seq, else the last at or before the time. */
export function frameIndexOf(frames: readonly RecordingFrame[], at: Moment): number {
  return at.seq !== undefined ? frameIndexBeforeSeq(frames, at.seq) : frameIndexAt(frames, at.tUs)
}

/** The time of a row (gap rows have none). */
export function rowTime(r: Row): number | undefined {
  return r.kind === 'gap' ? undefined : r.ts
}

/**
 * The row a moment lands on in a panel: the last row (not a gap) whose time is at or before tUs;
 * -1 when every row is later. Rows are in seq order, and ts does not decrease in seq order.
 */
export function rowIndexAtTime(rows: readonly Row[], tUs: number): number {
  let lo = 0
  let hi = rows.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    const t = rowTime(rows[mid]!) ?? timeNear(rows, mid)
    if (t <= tUs) lo = mid + 1
    else hi = mid
  }
  for (let i = lo - 1; i >= 0; i--) if (rows[i]!.kind !== 'gap') return i
  return -1
}

/** A gap row's time for the search: its neighbour's. */
function timeNear(rows: readonly Row[], i: number): number {
  for (let j = i - 1; j >= 0; j--) {
    const t = rowTime(rows[j]!)
    if (t !== undefined) return t
  }
  return -Infinity
}

export interface FrameClick {
  seq: number
  x: number
  y: number
  selector: string
  /** Position on the frame, 0..1 of its width and height. */
  left: number
  top: number
}

/**
 * The clicks drawn on frames[index]: the clicks of its page whose frame (the page's last frame
 * before the click's seq) is this one, placed by the viewport size the frame carries.
 */
export function clicksOnFrame(
  frames: readonly RecordingFrame[],
  index: number,
  clicks: readonly Envelope[],
): FrameClick[] {
  const f = frames[index]
  if (!f) return []
  const w = f.viewport_width ?? f.width
  const h = f.viewport_height ?? f.height
  const out: FrameClick[] = []
  for (const c of clicks) {
    if (c.event.type !== 'interaction_click') continue
    const d = dataOf(c)
    if (d.target_id !== f.target_id) continue
    if (lastOfTarget(frames, frameIndexBeforeSeq(frames, c.seq), f.target_id) !== index) continue
    const x = num(d.x) ?? 0
    const y = num(d.y) ?? 0
    out.push({ seq: c.seq, x, y, selector: str(d.selector) ?? '', left: w ? x / w : 0, top: h ? y / h : 0 })
  }
  return out
}

/** The last frame of this page at or before index (-1 when none). */
function lastOfTarget(frames: readonly RecordingFrame[], index: number, targetId: string): number {
  for (let i = index; i >= 0; i--) if (frames[i]!.target_id === targetId) return i
  return -1
}
