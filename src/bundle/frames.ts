// What a bundle needs of the recording's frame store: pages of frame metadata, the JPEG bytes, the
// recording gaps. The frame store (src/store/frame-store.ts) has this shape; the bundle takes it
// through this narrow interface so a daemon without one (recording off) still writes bundles.

/** One recorded frame, as listed in `frames/index.json` and by the frames API. */
export interface FrameMeta {
  /** Monotonic, never reused in a data dir. */
  frame_id: number
  /** Unix microseconds on the events' clock. */
  ts: number
  target_id: string
  /** Seq of the last event committed before the frame (0 when none). */
  after_seq: number
  width: number
  height: number
  bytes: number
}

/** Frames that are not in the store: dropped at capture, removed by retention, or not recorded. */
export interface RecordingGap {
  from_ts: number
  to_ts: number
  reason?: 'dropped' | 'retention' | 'stopped'
  /** Frames lost, when known. */
  frames: number
}

export interface BundleFrames {
  /** Oldest first; nextOffset is an opaque cursor, 0 when there is nothing more. */
  page(q: {
    sinceUs?: number
    untilUs?: number
    offset?: number
    limit: number
  }): Promise<{ items: FrameMeta[]; hasMore: boolean; nextOffset: number }>
  /** The JPEG bytes, or undefined when retention removed the frame meanwhile. */
  read(frameId: number): Promise<Buffer | undefined>
  gaps(sinceUs?: number, untilUs?: number): Promise<RecordingGap[]>
}
