// The screen recording player: the frame at the current moment with its click markers, play/pause,
// a scrubber over the frames' time span, and live follow. Frames come from a RecordingSource (the
// daemon API, or a bundle); images are fetched with the bearer into blob: URLs, at most
// IMAGE_CACHE of them alive (the least recently shown is revoked).
//
// Moments flow both ways: playing or scrubbing reports the moment (onMoment) so the app moves the
// event lists there; a row picked in a list seeks the player (`seek`, with the event's seq: the
// frame shown is the page before that event).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { clicksOnFrame, frameIndexOf, type Moment } from './model/player.js'
import { frameGaps, type RecordingFrame, type RecordingSource } from './model/recording.js'
import { fmtTime, type Envelope } from './model.js'
import { ImageCache } from './image-cache.js'
import { oneTrack } from '../util/one-track.js'
import { AuthError } from './event-feed.js'

/** Frame metadata held at most (the oldest are let go beyond). */
export const MAX_FRAMES = 50_000
/** How often a live source is asked for new frames. */
const POLL_MS = 1000
/** Playback step. */
const TICK_MS = 100
/** Frames fetched ahead while playing. */
const PREFETCH = 3

export interface PlayerProps {
  source: RecordingSource
  /** The loaded events (clicks are drawn from them; the first one's time is where frames are loaded from). */
  events: readonly Envelope[]
  /** Start following new frames (the app follows live events). */
  live: boolean
  /** Only this page's frames (the target filter), or every page's. */
  targetId?: string
  /** A row was picked: show that moment (nonce changes per pick). */
  seek?: Moment & { nonce: number }
  /** Playing or scrubbing reached this moment. */
  onMoment(at: Moment): void
  /** The token was refused (any other failure is shown in the player and retried). */
  onAuthError(err: unknown): void
  /** How many recording frames are held (the Filmstrip's count names them beside its screenshots). */
  onFrameCount?(n: number): void
}

export function Player({
  source,
  events,
  live: startLive,
  targetId,
  seek,
  onMoment,
  onAuthError,
  onFrameCount,
}: PlayerProps) {
  const [all, setAll] = useState<RecordingFrame[]>([])
  const [at, setAt] = useState<Moment | undefined>(undefined)
  const [playing, setPlaying] = useState(false)
  const [live, setLive] = useState(startLive)
  const [shown, setShown] = useState<{ id: number; url: string } | undefined>(undefined)
  const cache = useRef(new ImageCache())
  // The latest callbacks, for timers started by an earlier render.
  const [problem, setProblem] = useState('')
  const onError = (err: unknown) => {
    if (err instanceof AuthError) onAuthError(err)
    else setProblem(`Recording: ${(err as Error).message} (retrying)`)
  }
  const report = useRef({ onMoment, onError })
  report.current = { onMoment, onError }
  const loadedFrom = useRef<number | undefined>(undefined)
  // One tab's frames (two visible tabs' alternate): the target filter's, else the tab of the row
  // last picked, else the tab with the most frames.
  const seekTarget = useMemo(() => {
    if (!seek?.seq) return undefined
    const picked = events.find(e => e.seq === seek.seq)?.event.data as { target_id?: string } | undefined
    return picked?.target_id
  }, [seek?.nonce, events])
  const frames = useMemo(() => oneTrack(all, targetId ?? seekTarget), [all, targetId, seekTarget])
  useEffect(() => onFrameCount?.(frames.length), [frames.length])
  const clicks = useMemo(() => events.filter(e => e.event.type === 'interaction_click'), [events])
  const firstEventTs = events[0]?.event.ts

  // History: frames from the first loaded event on (again further back when older events load;
  // retried after a failure).
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
      const got: RecordingFrame[] = []
      let page = await source.frames({ sinceUs: from, untilUs: until, limit: 1000 }, ctl.signal)
      got.push(...page.items)
      while (page.hasMore && got.length < MAX_FRAMES) {
        page = await source.frames({ offset: page.nextOffset, untilUs: until, limit: 1000 }, ctl.signal)
        got.push(...page.items)
      }
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

  // Live: new frames after the last one held.
  useEffect(() => {
    if (!source.live) return
    const ctl = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const poll = async () => {
      try {
        const last = lastId.current
        if (last !== undefined || loadedFrom.current !== undefined) {
          let page = await source.frames(
            last !== undefined ? { offset: last + 1, limit: 1000 } : { sinceUs: loadedFrom.current, limit: 1000 },
            ctl.signal,
          )
          const got = [...page.items]
          while (page.hasMore && got.length < MAX_FRAMES) {
            page = await source.frames({ offset: page.nextOffset, limit: 1000 }, ctl.signal)
            got.push(...page.items)
          }
          if (got.length > 0) setAll(prev => merge(prev, got))
        }
        setProblem('')
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

  useEffect(() => () => cache.current.clear(), [])

  // A row picked in a list.
  useEffect(() => {
    if (!seek) return
    setLive(false)
    setAt({ tUs: seek.tUs, seq: seek.seq })
  }, [seek?.nonce])

  // Live: the newest frame.
  const newest = frames.at(-1)
  const moment: Moment | undefined = live && newest ? { tUs: newest.ts } : at
  const index = moment ? frameIndexOf(frames, moment) : frames.length - 1
  const frame = index >= 0 ? frames[index] : undefined

  // Playback: the moment advances at real speed; the lists follow.
  const playFrom = useRef<{ wall: number; tUs: number } | undefined>(undefined)
  useEffect(() => {
    if (!playing) return
    const t = setInterval(() => {
      const p = playFrom.current
      const end = frames.at(-1)
      if (!p || !end) return
      const tUs = p.tUs + (performance.now() - p.wall) * 1000
      if (tUs >= end.ts) {
        setPlaying(false)
        setAt({ tUs: end.ts })
        report.current.onMoment({ tUs: end.ts })
        if (source.live) setLive(true)
        return
      }
      setAt({ tUs })
      report.current.onMoment({ tUs })
    }, TICK_MS)
    return () => clearInterval(t)
  }, [playing, frames])

  // The image of the frame on screen (and, while playing, the next few), through the blob cache.
  useEffect(() => {
    if (!frame) return
    const ctl = new AbortController()
    const want = [frame, ...(playing ? frames.slice(index + 1, index + 1 + PREFETCH) : [])]
    void (async () => {
      for (const [i, f] of want.entries()) {
        let url = cache.current.get(f.frame_id)
        if (!url) {
          const blob = await source.image(f.frame_id, ctl.signal)
          if (ctl.signal.aborted) return
          if (!blob) continue
          url = cache.current.put(f.frame_id, blob)
        }
        if (i === 0) setShown({ id: f.frame_id, url })
      }
    })().catch(err => {
      if (!ctl.signal.aborted) report.current.onError(err)
    })
    return () => ctl.abort()
  }, [frame?.frame_id, playing])

  const first = frames[0]
  const spanMs = first && newest ? Math.max(0, Math.round((newest.ts - first.ts) / 1000)) : 0
  const posMs = first && frame ? Math.round(((moment?.tUs ?? frame.ts) - first.ts) / 1000) : 0
  const marks = useMemo(() => (frame ? clicksOnFrame(frames, index, clicks) : []), [frames, index, clicks])
  const gapBefore = useMemo(() => {
    if (!frame || index <= 0) return 0
    return frameGaps([frames[index - 1]!, frame])[0]?.missing ?? 0
  }, [frames, index, frame])

  const play = () => {
    if (!frame || !first) return
    // From the start again when at the end.
    const from = moment && newest && moment.tUs < newest.ts ? moment.tUs : first.ts
    playFrom.current = { wall: performance.now(), tUs: from }
    setLive(false)
    setAt({ tUs: from })
    setPlaying(true)
  }
  const scrub = (ms: number) => {
    if (!first) return
    const tUs = first.ts + ms * 1000
    setLive(false)
    setAt({ tUs })
    if (playing) playFrom.current = { wall: performance.now(), tUs }
    onMoment({ tUs })
  }

  return (
    <section
      class="player"
      aria-label="Screen recording"
      data-frame-id={shown?.id ?? ''}
      data-frames={frames.length}
      data-blobs={cache.current.size}
    >
      <div class="player-screen">
        {shown && frame ? (
          <>
            <img
              id="player-image"
              src={shown.url}
              alt={`Screen at ${fmtTime(frame.ts)} (frame ${frame.frame_id})`}
              data-frame-id={shown.id}
            />
            {shown.id === frame.frame_id
              ? marks.map(m => (
                  <span
                    key={m.seq}
                    class="click-marker player-click"
                    data-seq={m.seq}
                    data-x={m.x}
                    data-y={m.y}
                    title={`click at (${m.x}, ${m.y}) ${m.selector}`}
                    style={{ left: `${m.left * 100}%`, top: `${m.top * 100}%` }}
                  />
                ))
              : null}
          </>
        ) : (
          <p class="player-empty">
            {frames.length === 0
              ? 'No screen recording in this window (start the daemon with --recording, or switch it on in the capture config).'
              : 'The recording starts later.'}
          </p>
        )}
      </div>
      {frames.length > 0 ? (
        <div class="player-controls">
          <button
            type="button"
            id="player-play"
            onClick={() => (playing ? setPlaying(false) : play())}
            aria-pressed={playing}
          >
            {playing ? 'Pause' : 'Play'}
          </button>
          <input
            type="range"
            id="player-scrub"
            min={0}
            max={spanMs}
            step={1}
            value={Math.max(0, Math.min(spanMs, posMs))}
            aria-label="Recording position"
            aria-valuetext={frame ? fmtTime(moment?.tUs ?? frame.ts) : ''}
            onInput={e => scrub(Number((e.currentTarget as HTMLInputElement).value))}
          />
          <span class="player-time mono" id="player-time">
            {frame ? fmtTime(moment?.tUs ?? frame.ts) : ''}
          </span>
          {source.live ? (
            <button
              type="button"
              id="player-live"
              aria-pressed={live}
              onClick={() => {
                setPlaying(false)
                setLive(true)
              }}
            >
              Live
            </button>
          ) : null}
        </div>
      ) : null}
      {problem ? <p class="err player-problem">{problem}</p> : null}
      {gapBefore > 0 ? (
        <p class="rec-gap" id="player-gap">
          Recording gap: {gapBefore} frame{gapBefore === 1 ? '' : 's'} missing before this one
        </p>
      ) : null}
    </section>
  )
}

/** Frames of two lists, by frame id, without repeats, the newest MAX_FRAMES. */
function merge(a: readonly RecordingFrame[], b: readonly RecordingFrame[]): RecordingFrame[] {
  const byId = new Map<number, RecordingFrame>()
  for (const f of a) byId.set(f.frame_id, f)
  for (const f of b) byId.set(f.frame_id, f)
  const out = [...byId.values()].sort((x, y) => x.frame_id - y.frame_id)
  return out.length > MAX_FRAMES ? out.slice(-MAX_FRAMES) : out
}
