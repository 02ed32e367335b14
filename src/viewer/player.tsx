// The screen recording player: the frame at the current moment with its click markers, play/pause,
// a scrubber over the frames' time span, and live follow. Frames come from a RecordingSource (the
// daemon API, or a bundle); images are fetched with the bearer into blob: URLs, at most
// IMAGE_CACHE of them alive (the least recently shown is revoked).
//
// Moments flow both ways: playing or scrubbing reports the moment (onMoment) so the app moves the
// event lists there; a row picked in a list seeks the player (`seek`, with the event's seq: the
// frame shown is the page before that event).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { clicksOnFrame, frameIndexOf, type FrameClick, type Moment } from './model/player.js'
import { frameGaps, type RecordingFrame, type RecordingSource } from './model/recording.js'
import { fmtTime, type Envelope } from './model.js'
import { ImageCache } from './image-cache.js'
import { useRecordingFrames } from './player-frames.js'
import { AuthError } from './event-feed.js'

export { MAX_FRAMES } from './player-frames.js'
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
  const [at, setAt] = useState<Moment | undefined>(undefined)
  const [playing, setPlaying] = useState(false)
  const [live, setLive] = useState(startLive)
  const cache = useRef(new ImageCache())
  const [problem, setProblem] = useState('')
  const onError = (err: unknown) => {
    if (err instanceof AuthError) onAuthError(err)
    else setProblem(`Recording: ${(err as Error).message} (retrying)`)
  }
  // The latest callbacks, for timers started by an earlier render.
  const report = useRef({ onMoment, onError })
  report.current = { onMoment, onError }
  // One tab's frames (two visible tabs' alternate): the target filter's, else the tab of the row
  // last picked, else the tab with the most frames.
  const seekTarget = useMemo(() => {
    if (!seek?.seq) return undefined
    const picked = events.find(e => e.seq === seek.seq)?.event.data as { target_id?: string } | undefined
    return picked?.target_id
  }, [seek?.nonce, events])
  const frames = useRecordingFrames({
    source,
    firstEventTs: events[0]?.event.ts,
    track: targetId ?? seekTarget,
    onFrameCount,
    report,
    onPolled: () => setProblem(''),
  })
  const clicks = useMemo(() => events.filter(e => e.event.type === 'interaction_click'), [events])

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

  const playFrom = usePlayback(playing, frames, source.live, report, { setPlaying, setAt, setLive })
  const shown = useFrameImage(source, cache.current, frames, index, playing, report)

  const first = frames[0]
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
      <PlayerScreen shown={shown} frame={frame} marks={marks} hasFrames={frames.length > 0} />
      {frames.length > 0 ? (
        <PlayerControls
          playing={playing}
          live={source.live ? live : undefined}
          spanMs={first && newest ? Math.max(0, Math.round((newest.ts - first.ts) / 1000)) : 0}
          posMs={first && frame ? Math.round(((moment?.tUs ?? frame.ts) - first.ts) / 1000) : 0}
          time={frame ? fmtTime(moment?.tUs ?? frame.ts) : ''}
          onPlay={() => (playing ? setPlaying(false) : play())}
          onScrub={scrub}
          onLive={() => {
            setPlaying(false)
            setLive(true)
          }}
        />
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

/**
 * Playback: while playing, the moment advances at real speed from `playFrom` and the lists follow;
 * at the end it stops there (and goes live again on a live source). Returns the start to restart from.
 */
function usePlayback(
  playing: boolean,
  frames: readonly RecordingFrame[],
  sourceLive: boolean,
  report: { readonly current: { onMoment(at: Moment): void } },
  set: { setPlaying(p: boolean): void; setAt(m: Moment): void; setLive(l: boolean): void },
) {
  const playFrom = useRef<{ wall: number; tUs: number } | undefined>(undefined)
  useEffect(() => {
    if (!playing) return
    const t = setInterval(() => {
      const p = playFrom.current
      const end = frames.at(-1)
      if (!p || !end) return
      const tUs = p.tUs + (performance.now() - p.wall) * 1000
      if (tUs >= end.ts) {
        set.setPlaying(false)
        set.setAt({ tUs: end.ts })
        report.current.onMoment({ tUs: end.ts })
        if (sourceLive) set.setLive(true)
        return
      }
      set.setAt({ tUs })
      report.current.onMoment({ tUs })
    }, TICK_MS)
    return () => clearInterval(t)
  }, [playing, frames])
  return playFrom
}

/** The image of the frame on screen (and, while playing, the next few), through the blob cache. */
function useFrameImage(
  source: RecordingSource,
  cache: ImageCache,
  frames: readonly RecordingFrame[],
  index: number,
  playing: boolean,
  report: { readonly current: { onError(err: unknown): void } },
): { id: number; url: string } | undefined {
  const [shown, setShown] = useState<{ id: number; url: string } | undefined>(undefined)
  const frame = index >= 0 ? frames[index] : undefined
  useEffect(() => {
    if (!frame) return
    const ctl = new AbortController()
    const want = [frame, ...(playing ? frames.slice(index + 1, index + 1 + PREFETCH) : [])]
    void (async () => {
      for (const [i, f] of want.entries()) {
        let url = cache.get(f.frame_id)
        if (!url) {
          const blob = await source.image(f.frame_id, ctl.signal)
          if (ctl.signal.aborted) return
          if (!blob) continue
          url = cache.put(f.frame_id, blob)
        }
        if (i === 0) setShown({ id: f.frame_id, url })
      }
    })().catch(err => {
      if (!ctl.signal.aborted) report.current.onError(err)
    })
    return () => ctl.abort()
  }, [frame?.frame_id, playing])
  return shown
}

/** The frame's image with the clicks drawn on it, or why there is none. */
function PlayerScreen({
  shown,
  frame,
  marks,
  hasFrames,
}: {
  shown: { id: number; url: string } | undefined
  frame: RecordingFrame | undefined
  marks: FrameClick[]
  hasFrames: boolean
}) {
  return (
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
          {!hasFrames
            ? 'No screen recording in this window (start the daemon with --recording, or switch it on in the capture config).'
            : 'The recording starts later.'}
        </p>
      )}
    </div>
  )
}

/** Play/pause, the scrubber, the time shown, and Live (`live` undefined: a source that is not live). */
function PlayerControls(p: {
  playing: boolean
  live: boolean | undefined
  spanMs: number
  posMs: number
  time: string
  onPlay(): void
  onScrub(ms: number): void
  onLive(): void
}) {
  return (
    <div class="player-controls">
      <button type="button" id="player-play" onClick={p.onPlay} aria-pressed={p.playing}>
        {p.playing ? 'Pause' : 'Play'}
      </button>
      <input
        type="range"
        id="player-scrub"
        min={0}
        max={p.spanMs}
        step={1}
        value={Math.max(0, Math.min(p.spanMs, p.posMs))}
        aria-label="Recording position"
        aria-valuetext={p.time}
        onInput={e => p.onScrub(Number((e.currentTarget as HTMLInputElement).value))}
      />
      <span class="player-time mono" id="player-time">
        {p.time}
      </span>
      {p.live !== undefined ? (
        <button type="button" id="player-live" aria-pressed={p.live} onClick={p.onLive}>
          Live
        </button>
      ) : null}
    </div>
  )
}
