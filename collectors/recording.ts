// Screen recording (opt-in; not a category: frames go to the frame store, never to the event log).
// Attached by the capture plan to every page target while recording is on (`RECORDING` in the plan);
// detached when it is switched off.
//
// Which pages are recorded: every page target gets Page.startScreencast, and Chromium itself sends
// frames only for a page that is visible and painting. "Visible" is what Chromium reports with
// Page.screencastVisibilityChanged, i.e. the page's document.visibilityState: the active tab of
// each window. Headless Chromium keeps that model too (verified with Chromium 156: of three tabs
// exactly one is `visible`, the last one created or the one Target.activateTarget picked; the
// others are `hidden` and paint nothing). A tab switch makes the old tab hidden and the new one
// visible, so the recording follows it with no bookkeeping of ours. Frames from a page reported
// hidden (Chromium may send one right after the start) are acknowledged and dropped.
//
// Per frame: acknowledged at the rate cap (one ack per slot per page, oldest first), whatever the
// store does. Chromium captures and JPEG-encodes a frame only while few are unacknowledged (3 at
// most seen), so acks paced at `maxFps` keep it from encoding the 30-60 frames a second of a busy
// page that the cap would drop anyway (a scrolling page: 54 frames a second sent unpaced, 5.3
// paced). A page that stops changing while its frames wait is not lost: Chromium captures its last
// state once an ack lets it (verified with Chromium 156, acks held 1 s). The first frame after a
// quiet spell is acked at once. A frame is dropped when it repeats the page's previous frame byte
// for byte (sha1); kept at most `maxFps` per page: a frame arriving sooner waits (replacing any
// older waiting one) until its slot, so the last state of a page that stops changing is always
// kept. Each frame carries its arrival time on the events' clock (Unix µs, the clock the pipeline
// stamps with) and the seq of the last committed event then.
import { createHash } from 'node:crypto'
import type { Protocol } from 'devtools-protocol'
import {
  Disposer,
  systemClock,
  type Clock,
  type Collector,
  type Detach,
  type Logger,
  type TargetSession,
  type TimerHandle,
  type CaptureNeeds,
  DEFAULT_SETTINGS,
} from '../src/collector-kit.js'

/** One frame as the collector hands it over (the frame store's input). */
export interface CapturedFrame {
  ts: number
  target_id: string
  after_seq: number
  width: number
  height: number
  viewport_width?: number
  viewport_height?: number
  jpeg: Buffer
}

/** Where frames go: the frame store (src/recording/frame-store.ts). Must not block. */
export interface FrameSink {
  add(frame: CapturedFrame): { dropped?: string }
}

export interface RecordingCollectorOptions {
  sink: FrameSink
  /** seq of the last event the pipeline took (EventLog.lastAssignedSeq): committed, or within the group-commit delay. */
  lastSeq: () => number
  /** Frames kept (and acknowledged) per second per page at most (default 5). */
  maxFps?: number
  /** JPEG quality 0-100 (default 50). */
  quality?: number
  /** Largest frame size in pixels (Chromium scales the viewport down to fit; default 960 x 540). */
  maxWidth?: number
  maxHeight?: number
  /** Unix microseconds (the events' clock; tests pin it). */
  now?: () => number
  /** The rate cap's timers (monotonic ms). */
  clock?: Clock
  logger?: Logger
}

export interface RecordingStats {
  /** Page.screencastFrame received (and acknowledged). */
  received: number
  /** Handed to the sink (stored or dropped there). */
  kept: number
  /** Identical to the page's previous frame. */
  duplicates: number
  /** Replaced by a newer frame while waiting for its slot under the rate cap. */
  rateLimited: number
  /** From a page Chromium reported hidden. */
  hidden: number
  /** Dropped by the sink (backpressure, write error, too large): a gap. */
  sinkDropped: number
  /** Largest delay between Chromium taking a frame (its metadata timestamp) and our ack (paced: a few slots), ms. */
  maxAckDelayMs: number
  /** Most frames of one page waiting for their ack at once. */
  maxHeldAcks: number
}

export interface RecordingCollector extends Collector {
  readonly stats: RecordingStats
  /** Pages with a screencast running now. */
  readonly recording: ReadonlySet<string>
}

/** Acks held per page at most; Chromium stops capturing with a few unacknowledged, well below it. */
const MAX_HELD_ACKS = 8
/** The screencast's defaults: the daemon's own (`--recording-*`). */
export const RECORDING_DEFAULTS = {
  maxFps: DEFAULT_SETTINGS.recordingMaxFps,
  quality: DEFAULT_SETTINGS.recordingQuality,
  maxWidth: DEFAULT_SETTINGS.recordingMaxWidth,
  maxHeight: DEFAULT_SETTINGS.recordingMaxHeight,
}

/** The screencast of pages while the recording is on (Page only). */
export const RECORDING_CAPTURE: CaptureNeeds = { category: 'recording', targets: ['page'], domains: [] }

export function createRecordingCollector(opts: RecordingCollectorOptions): RecordingCollector {
  const stats: RecordingStats = {
    received: 0,
    kept: 0,
    duplicates: 0,
    rateLimited: 0,
    hidden: 0,
    sinkDropped: 0,
    maxAckDelayMs: 0,
    maxHeldAcks: 0,
  }
  const recording = new Set<string>()
  const cfg = {
    maxFps: opts.maxFps ?? RECORDING_DEFAULTS.maxFps,
    quality: opts.quality ?? RECORDING_DEFAULTS.quality,
    maxWidth: opts.maxWidth ?? RECORDING_DEFAULTS.maxWidth,
    maxHeight: opts.maxHeight ?? RECORDING_DEFAULTS.maxHeight,
  }
  const now = opts.now ?? (() => Date.now() * 1000)
  const clock = opts.clock ?? systemClock
  const intervalMs = 1000 / cfg.maxFps
  /** Per page switched off: the unsubscribe of its closed recorder, which still acknowledges frames. */
  const stillAcking = new WeakMap<TargetSession, () => void>()

  return {
    name: 'recording',
    capture: RECORDING_CAPTURE,
    stats,
    recording,
    attach(session: TargetSession): Detach {
      if (session.targetType !== 'page') return () => undefined
      const page = new PageRecorder(session, opts.sink, opts.lastSeq, now, clock, intervalMs, stats)
      const bag = new Disposer()
      // Switched on again: the new recorder acknowledges every frame from here (one ack per frame).
      stillAcking.get(session)?.()
      stillAcking.delete(session)
      const offFrames = session.on('Page.screencastFrame', p => page.onFrame(p))
      bag.add(session.on('Page.screencastVisibilityChanged', p => page.onVisibility(p.visible)))
      recording.add(session.targetId)
      void session.sendMayFail('Page.startScreencast', {
        format: 'jpeg',
        quality: cfg.quality,
        maxWidth: cfg.maxWidth,
        maxHeight: cfg.maxHeight,
      })
      bag.add(() => {
        recording.delete(session.targetId)
        page.close()
        if (session.signal.aborted) {
          offFrames()
          return
        }
        // Switched off with the page still there: stop Chromium's capture. A frame can still come
        // after the answer (Chromium does not promise otherwise) and one left unacknowledged stalls
        // the page's compositor, so the closed recorder (it only acks) keeps listening until the
        // session goes away or recording is switched on again.
        stillAcking.set(session, offFrames)
        void session.sendMayFail('Page.stopScreencast')
      })
      return () => bag.dispose()
    },
  }
}

interface HeldAck {
  sessionId: number
  /** Chromium's capture time, Unix seconds. */
  takenS: number | undefined
}

interface Waiting {
  frame: CapturedFrame
  hash: string
}

/** One page's screencast: ack, duplicate check, rate cap (trailing: the last frame waits for its slot). */
class PageRecorder {
  private visible: boolean | undefined
  /** Hash of the last frame kept or waiting (duplicates of it are dropped). */
  private lastHash: string | undefined
  /** Hash of the last frame handed to the sink. */
  private keptHash: string | undefined
  private lastKeptAt = -Infinity
  private waiting: Waiting | undefined
  private timer: TimerHandle | undefined
  private closed = false
  /** Frames not yet acknowledged, oldest first (at most MAX_HELD_ACKS), and when the last ack went. */
  private readonly heldAcks: HeldAck[] = []
  private ackTimer: TimerHandle | undefined
  private lastAckAt = -Infinity

  constructor(
    private readonly session: TargetSession,
    private readonly sink: FrameSink,
    private readonly lastSeq: () => number,
    private readonly now: () => number,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly stats: RecordingStats,
  ) {}

  onFrame(p: Protocol.Page.ScreencastFrameEvent): void {
    // First, always: every frame gets its ack, at once or at its slot.
    this.ackPaced({ sessionId: p.sessionId, takenS: p.metadata.timestamp })
    const arrivedUs = this.now()
    this.stats.received++
    if (this.closed) return
    if (this.visible === false) {
      this.stats.hidden++
      return
    }
    const jpeg = Buffer.from(p.data, 'base64')
    const hash = createHash('sha1').update(jpeg).digest('hex')
    if (hash === this.lastHash) {
      this.stats.duplicates++
      return
    }
    this.lastHash = hash
    const size = jpegSize(jpeg)
    const frame: CapturedFrame = {
      ts: arrivedUs,
      target_id: this.session.targetId,
      after_seq: this.lastSeq(),
      width: size?.width ?? 0,
      height: size?.height ?? 0,
      jpeg,
    }
    if (p.metadata.deviceWidth > 0) frame.viewport_width = Math.round(p.metadata.deviceWidth)
    if (p.metadata.deviceHeight > 0) frame.viewport_height = Math.round(p.metadata.deviceHeight)
    if (this.waiting) this.stats.rateLimited++
    this.waiting = { frame, hash }
    const wait = this.lastKeptAt + this.intervalMs - this.clock.now()
    if (wait <= 0) this.keepWaiting()
    else this.timer ??= this.clock.set(() => this.onSlot(), wait)
  }

  onVisibility(visible: boolean): void {
    this.visible = visible
    // Shown again: its first frame is kept even if it equals the last one kept before it was hidden
    // (another page's frames were on screen meanwhile).
    if (visible) this.lastHash = this.keptHash = undefined
  }

  /** Recording switched off or the page went away: a frame waiting for its slot is kept now, held acks sent. */
  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.timer !== undefined) this.clock.clear(this.timer)
    this.timer = undefined
    if (this.ackTimer !== undefined) this.clock.clear(this.ackTimer)
    this.ackTimer = undefined
    for (const a of this.heldAcks.splice(0)) this.ack(a)
    this.keepWaiting()
  }

  /** Acks at most one frame per slot, oldest first; closed, at once. */
  private ackPaced(a: HeldAck): void {
    const t = this.clock.now()
    if (this.closed || (this.heldAcks.length === 0 && t >= this.lastAckAt + this.intervalMs)) {
      this.lastAckAt = t
      this.ack(a)
      return
    }
    this.heldAcks.push(a)
    // Chromium not pacing as expected: the oldest goes at once, so nothing waits without bound.
    if (this.heldAcks.length > MAX_HELD_ACKS) this.ack(this.heldAcks.shift()!)
    if (this.heldAcks.length > this.stats.maxHeldAcks) this.stats.maxHeldAcks = this.heldAcks.length
    this.ackTimer ??= this.clock.set(() => this.onAckSlot(), Math.max(0, this.lastAckAt + this.intervalMs - t))
  }

  private onAckSlot(): void {
    this.ackTimer = undefined
    const a = this.heldAcks.shift()
    if (!a) return
    this.lastAckAt = this.clock.now()
    this.ack(a)
    if (this.heldAcks.length > 0) this.ackTimer = this.clock.set(() => this.onAckSlot(), this.intervalMs)
  }

  private ack(a: HeldAck): void {
    void this.session.sendMayFail('Page.screencastFrameAck', { sessionId: a.sessionId })
    if (a.takenS !== undefined) {
      const delay = this.now() / 1000 - a.takenS * 1000
      if (delay > this.stats.maxAckDelayMs) this.stats.maxAckDelayMs = delay
    }
  }

  private onSlot(): void {
    this.timer = undefined
    this.keepWaiting()
  }

  private keepWaiting(): void {
    const w = this.waiting
    if (!w) return
    this.waiting = undefined
    // Changed and changed back while it waited: the same picture as the last one kept.
    if (w.hash === this.keptHash) {
      this.stats.duplicates++
      return
    }
    this.keptHash = w.hash
    this.lastKeptAt = this.clock.now()
    this.stats.kept++
    if (this.sink.add(w.frame).dropped !== undefined) this.stats.sinkDropped++
  }
}

/** Width and height from a JPEG's SOF marker, without decoding it. */
export function jpegSize(b: Uint8Array): { width: number; height: number } | undefined {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined
  let i = 2
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined
    const marker = b[i + 1]!
    if (marker === 0xff) {
      i++
      continue
    }
    const len = (b[i + 2]! << 8) | b[i + 3]!
    // SOF0..SOF15 except DHT (C4), JPG (C8), DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (b[i + 5]! << 8) | b[i + 6]!, width: (b[i + 7]! << 8) | b[i + 8]! }
    }
    i += 2 + len
  }
  return undefined
}
