// The screen recording as the viewer's player reads it: frame metadata (the items of
// GET /browsers/{id}/recording/frames, oldest first) and one JPEG per frame, through a
// RecordingSource. Two implementations: the daemon's API (fetch with the bearer token, live) and a
// debug bundle opened from disk (its frames/ folder, history only). Pure types and rules: no DOM,
// no fetch here.
//
// Frame ids are integers that increase for the life of the data directory. Like event seqs, a
// missing id between two frames is a recording gap: frames the daemon received but could not keep
// (store backpressure, a write error) or that retention removed. Frames left out by the rate cap
// or because they repeat the previous frame of their target take no id (not a gap).
import { lowerBound } from '../../util/lower-bound.js'

/** One frame's metadata, exactly as the API (and a bundle's frames/index.json) carries it. */
export interface RecordingFrame {
  /** Increases with every frame kept (see above: a missing id is a gap). */
  frame_id: number
  /** When the daemon received the frame, Unix microseconds, on the events' clock (envelope ts). */
  ts: number
  /** The page target the frame shows. */
  target_id: string
  /** seq of the last event committed to the log before the frame arrived (0 when none). */
  after_seq: number
  /** JPEG size in pixels. */
  width: number
  height: number
  /** JPEG size in bytes. */
  bytes: number
  /**
   * The page's viewport in CSS pixels when the frame was painted (interaction events' x/y are in
   * these): a click at (x, y) is drawn at (x / viewport_width, y / viewport_height) of the image.
   */
  viewport_width?: number
  viewport_height?: number
}

/** Which frames: the events API's window rules (since inclusive, until exclusive, Unix µs). */
export interface FrameQuery {
  sinceUs?: number
  untilUs?: number
  /** Frames per page (the API allows 1..1000). */
  limit?: number
  /** The nextOffset of a previous page (a frame id cursor); when set, sinceUs is ignored. */
  offset?: number
}

export interface FramePage {
  /** Oldest first. Never empty while hasMore. */
  items: RecordingFrame[]
  hasMore: boolean
  /** Pass as offset for the next page; 0 when there is no more. */
  nextOffset: number
}

/**
 * Where the player gets frames. The daemon API implements it with fetch + bearer (the token never
 * goes into a URL); the bundle engineer's implementation reads a zip opened in the browser:
 * `frames/index.json` (a JSON array of RecordingFrame, oldest first) and
 * `frames/<frame_id>.jpg`.
 */
export interface RecordingSource {
  /** True when new frames may still appear (a live daemon): the player polls `frames` after its last id. */
  readonly live: boolean
  /** One page of frame metadata. Rejects on transport/auth errors. */
  frames(q: FrameQuery, signal?: AbortSignal): Promise<FramePage>
  /** The JPEG of one frame; undefined when the frame is unknown (removed by retention since listed). */
  image(frameId: number, signal?: AbortSignal): Promise<Blob | undefined>
}

/** A run of frame ids missing between two frames the viewer holds. */
export interface FrameGap {
  /** The frame after which the gap starts (undefined: before the first frame held). */
  afterFrameId?: number
  /** Frames missing. */
  missing: number
  /** ts of the frames around it (µs): the gap lies between them. */
  fromTs?: number
  untilTs: number
}

/** Id gaps between consecutive frames (sorted by frame_id), the recording's counterpart of event gaps. */
export function frameGaps(frames: readonly RecordingFrame[]): FrameGap[] {
  const out: FrameGap[] = []
  for (let i = 1; i < frames.length; i++) {
    const a = frames[i - 1]!
    const b = frames[i]!
    if (b.frame_id > a.frame_id + 1)
      out.push({ afterFrameId: a.frame_id, missing: b.frame_id - a.frame_id - 1, fromTs: a.ts, untilTs: b.ts })
  }
  return out
}

/**
 * The frame on screen at time tUs: the last frame with ts <= tUs (frames sorted by ts; ts never
 * decreases in frame_id order). -1 before the first frame.
 */
export function frameIndexAt(frames: readonly RecordingFrame[], tUs: number): number {
  let lo = 0
  let hi = frames.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (frames[mid]!.ts <= tUs) lo = mid + 1
    else hi = mid
  }
  return lo - 1
}

/**
 * The frame on screen when the event with this seq happened: the last frame whose after_seq is
 * below it (that frame arrived before the event was committed). -1 when none. Frames sorted by
 * frame_id; after_seq never decreases in that order.
 */
export function frameIndexBeforeSeq(frames: readonly RecordingFrame[], seq: number): number {
  return lowerBound(frames.length, i => frames[i]!.after_seq < seq) - 1
}
