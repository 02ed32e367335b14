// The player's frame loading: history from the first loaded event on (again further back when
// older events load; retried after a failure), then a live poll for frames after the last one held,
// narrowed to one tab's track.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import type { FrameQuery, RecordingFrame, RecordingSource } from './model/recording.js'
import { oneTrack } from '../util/one-track.js'

/** Frame metadata held at most (the oldest are let go beyond). */
export const MAX_FRAMES = 50_000
/** How often a live source is asked for new frames. */
const POLL_MS = 1000

export interface FrameLoading {
  source: RecordingSource
  /** The first loaded event's time (Unix µs): frames are loaded from there on. */
  firstEventTs: number | undefined
  /** The tab whose frames are shown (two visible tabs' would alternate), or the busiest one. */
  track: string | undefined
  onFrameCount?(n: number): void
  /** The latest error handler, for loads started by an earlier render. */
  report: { readonly current: { onError(err: unknown): void } }
  /** A poll went through: the last problem is over. */
  onPolled(): void
}

/** The frames of one track, loaded and kept up to date from the source. */
export function useRecordingFrames({
  source,
  firstEventTs,
  track,
  onFrameCount,
  report,
  onPolled,
}: FrameLoading): RecordingFrame[] {
  const [all, setAll] = useState<RecordingFrame[]>([])
  const loadedFrom = useRef<number | undefined>(undefined)
  const frames = useMemo(() => oneTrack(all, track), [all, track])
  useEffect(() => onFrameCount?.(frames.length), [frames.length])

  const [retry, setRetry] = useState(0)
  useEffect(() => {
    const from = firstEventTs ?? Date.now() * 1000 - 5 * 60_000_000
    const until = loadedFrom.current
    if (until !== undefined && from >= until) return
    loadedFrom.current = from
    const ctl = new AbortController()
    let again: ReturnType<typeof setTimeout> | undefined
    let done = false
    void (async () => {
      const got = await readFrames(
        source,
        { sinceUs: from, untilUs: until, limit: 1000 },
        offset => ({ offset, untilUs: until, limit: 1000 }),
        ctl.signal,
      )
      done = true
      setAll(prev => merge(got, prev))
    })().catch(err => {
      if (ctl.signal.aborted) return
      loadedFrom.current = until
      report.current.onError(err)
      again = setTimeout(() => setRetry(n => n + 1), 2000)
    })
    return () => {
      // Interrupted (the window moved): the next run loads this span too.
      if (!done && loadedFrom.current === from) loadedFrom.current = until
      ctl.abort()
      clearTimeout(again)
    }
  }, [source, firstEventTs, retry])

  useEffect(() => {
    if (!source.live) return
    const ctl = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const poll = async () => {
      try {
        const last = lastId.current
        if (last !== undefined || loadedFrom.current !== undefined) {
          const got = await readFrames(
            source,
            last !== undefined ? { offset: last + 1, limit: 1000 } : { sinceUs: loadedFrom.current, limit: 1000 },
            offset => ({ offset, limit: 1000 }),
            ctl.signal,
          )
          if (got.length > 0) setAll(prev => merge(prev, got))
        }
        onPolled()
      } catch (err) {
        if (ctl.signal.aborted) return
        report.current.onError(err)
      }
      if (!ctl.signal.aborted) timer = setTimeout(() => void poll(), POLL_MS)
    }
    timer = setTimeout(() => void poll(), POLL_MS)
    return () => {
      ctl.abort()
      clearTimeout(timer)
    }
  }, [source])
  const lastId = useRef<number | undefined>(undefined)
  lastId.current = all.at(-1)?.frame_id
  return frames
}

/** The frames of `first` and the pages after it, until the last page or about MAX_FRAMES. */
async function readFrames(
  source: RecordingSource,
  first: FrameQuery,
  next: (offset: number) => FrameQuery,
  signal: AbortSignal,
): Promise<RecordingFrame[]> {
  let page = await source.frames(first, signal)
  const got = [...page.items]
  while (page.hasMore && got.length < MAX_FRAMES) {
    page = await source.frames(next(page.nextOffset), signal)
    got.push(...page.items)
  }
  return got
}

/** Frames of two lists, by frame id, without repeats, the newest MAX_FRAMES. */
function merge(a: readonly RecordingFrame[], b: readonly RecordingFrame[]): RecordingFrame[] {
  const byId = new Map<number, RecordingFrame>()
  for (const f of a) byId.set(f.frame_id, f)
  for (const f of b) byId.set(f.frame_id, f)
  const out = [...byId.values()].sort((x, y) => x.frame_id - y.frame_id)
  return out.length > MAX_FRAMES ? out.slice(-MAX_FRAMES) : out
}
