// Screenshot collector (category `screenshot`, opt-in): a PNG of the active page's viewport, every
// intervalMs while the category is enabled, plus one after each page load.
//
// "Active page" is the page target most recently attached (opened) or navigated (main-frame
// Page.frameNavigated or load). CDP reports no focus change of a tab in headless Chromium, so
// creation and navigation recency is the best observable stand-in for "the tab being used";
// when the active page goes away, the next most recent one takes over.
//
// One capture at a time, never closer than minIntervalMs; a frame identical to the previous one
// is skipped; a PNG that would not fit the envelope cap is captured again at a smaller scale
// (never truncated: half a PNG is useless).
//
// Chromium may never answer a capture whose document is replaced while it runs (about 1 in 30 sent
// just before a navigation): such a capture is abandoned when the page's main frame navigates, and
// another one is asked for, so one lost answer cannot hold every capture back for captureTimeoutMs.
import { createHash } from 'node:crypto'
import {
  DEFAULT_MAX_ENVELOPE_BYTES,
  DEFAULT_SETTINGS,
  Disposer,
  silentLogger,
  systemClock,
  withTimeout,
  type Clock,
  type Collector,
  type Detach,
  type Emit,
  type Logger,
  type TargetSession,
  type TimerHandle,
} from '../src/collector-kit.js'

export interface ScreenshotCollectorOptions {
  /** Whether the `screenshot` category is enabled now (e.g. () => pipeline.isEnabled('screenshot')). */
  isEnabled: () => boolean
  /** Subscribes to enable/disable changes; returns the unsubscribe. Without it the state is polled each tick. */
  onEnabledChange?: (listener: (enabled: boolean) => void) => () => void
  /** Period between captures while enabled (default 5000 ms). */
  intervalMs?: number
  /** Minimum gap between two captures, whatever asks for them (default min(1000, intervalMs)). */
  minIntervalMs?: number
  /** Envelope cap in bytes the screenshot must fit (default the pipeline's 1 MiB). */
  maxBytes?: number
  /** A capture that takes longer is abandoned so the next one can run (default 10 s). */
  captureTimeoutMs?: number
  logger?: Logger
  /** Interval, deferral and capture-timeout timers (injectable for tests). */
  clock?: Clock
}

export interface ScreenshotStats {
  /** Page.captureScreenshot calls that returned data. */
  captured: number
  emitted: number
  /** Frames identical to the previously emitted one. */
  duplicates: number
  /** Frames re-captured at a smaller scale to fit the cap. */
  rescaled: number
  /** Frames dropped because even the smallest scale did not fit. */
  oversize: number
  failed: number
  /** Captures given up because their page's main frame navigated while they ran. */
  abandoned: number
}

export interface ScreenshotCollector extends Collector {
  readonly stats: ScreenshotStats
  /** Target id of the page that would be captured now. */
  activeTargetId(): string | undefined
}

/** Room left in the envelope for everything but the base64 string (seq, ts, type, source, ...). */
const ENVELOPE_OVERHEAD = 512
const MAX_RESCALES = 5
const SOURCE = { kind: 'cdp', event: 'Page.captureScreenshot' } as const
/** The abort reason of a capture given up after a navigation. */
const ABANDONED = new Error('the page navigated while the capture ran')

interface PageEntry {
  session: TargetSession
  emit: Emit
  activeAt: number
}
type Clip = { x: number; y: number; width: number; height: number; scale: number }

export function createScreenshotCollector(opts: ScreenshotCollectorOptions): ScreenshotCollector {
  const shooter = new Screenshots(opts)
  return {
    name: 'screenshot',
    attach: (session, emit) => shooter.attach(session, emit),
    stats: shooter.stats,
    activeTargetId: () => shooter.activePage()?.session.targetId,
  }
}

/** The pages that can be captured, and which one is active (most recently opened or navigated). */
class ActivePages {
  private readonly pages = new Map<string, PageEntry>()
  private activity = 0

  get size(): number {
    return this.pages.size
  }
  has(sessionId: string): boolean {
    return this.pages.has(sessionId)
  }
  add(session: TargetSession, emit: Emit): void {
    this.pages.set(session.sessionId, { session, emit, activeAt: ++this.activity })
  }
  delete(sessionId: string): void {
    this.pages.delete(sessionId)
  }
  touch(sessionId: string): void {
    const p = this.pages.get(sessionId)
    if (p) p.activeAt = ++this.activity
  }

  active(): PageEntry | undefined {
    let best: PageEntry | undefined
    for (const p of this.pages.values()) if (!best || p.activeAt > best.activeAt) best = p
    return best
  }
}

/**
 * Scheduling (one interval timer while there is a page and the category is on, one deferred
 * capture for requests inside the minimum interval, at most one capture in flight) and capturing
 * (fit to the envelope budget, skip duplicates). Every timer goes through the injected clock.
 */
class Screenshots {
  readonly stats: ScreenshotStats = {
    captured: 0,
    emitted: 0,
    duplicates: 0,
    rescaled: 0,
    oversize: 0,
    failed: 0,
    abandoned: 0,
  }
  private readonly pages = new ActivePages()
  private readonly clock: Clock
  private readonly logger: Logger
  private readonly intervalMs: number
  private readonly minIntervalMs: number
  private readonly budget: number
  private readonly captureTimeoutMs: number
  private enabled = false
  private ticker: TimerHandle | undefined
  private deferred: TimerHandle | undefined
  private unsubscribe: (() => void) | undefined
  private inFlight = false
  private pending = false
  private lastCaptureAt = -Infinity
  private lastHash: string | undefined
  /** The capture in flight: its page, and how to give it up. */
  private current: { sessionId: string; abandon: () => void } | undefined

  constructor(private readonly opts: ScreenshotCollectorOptions) {
    this.clock = opts.clock ?? systemClock
    this.logger = opts.logger ?? silentLogger
    this.intervalMs = opts.intervalMs ?? DEFAULT_SETTINGS.screenshotIntervalMs
    this.minIntervalMs = opts.minIntervalMs ?? Math.min(1000, this.intervalMs)
    this.budget = (opts.maxBytes ?? DEFAULT_MAX_ENVELOPE_BYTES) - ENVELOPE_OVERHEAD
    this.captureTimeoutMs = opts.captureTimeoutMs ?? 10_000
  }

  activePage(): PageEntry | undefined {
    return this.pages.active()
  }

  attach(session: TargetSession, emit: Emit): Detach {
    if (session.targetType !== 'page') return () => undefined
    this.pages.add(session, emit)
    const bag = new Disposer()
    bag.add(() => this.removePage(session.sessionId))
    bag.add(
      session.on('Page.frameNavigated', p => {
        if (p.frame.parentId) return
        this.pages.touch(session.sessionId)
        if (this.current?.sessionId === session.sessionId) this.current.abandon()
      }),
    )
    bag.add(
      session.on('Page.loadEventFired', () => {
        this.pages.touch(session.sessionId)
        this.request()
      }),
    )
    // Page events: the capture plan keeps Page enabled on every page target.
    if (this.pages.size === 1 && this.opts.onEnabledChange)
      this.unsubscribe = this.opts.onEnabledChange(() => this.reconcile(true))
    this.reconcile(false)
    return () => bag.dispose()
  }

  private removePage(sessionId: string): void {
    this.pages.delete(sessionId)
    if (this.pages.size === 0) {
      this.unsubscribe?.()
      this.unsubscribe = undefined
    }
    this.reconcile(false)
  }

  /**
   * Matches the ticker to the state: it runs while there is a page and the category is enabled
   * (or always, to poll isEnabled(), when there is no subscription). A category switched on
   * captures at once when `captureNow`; an attach does not (that target is still paused).
   */
  private reconcile(captureNow: boolean): void {
    const was = this.enabled
    this.enabled = this.opts.isEnabled()
    if (this.enabled && !was) this.lastHash = undefined // switching screenshots on yields a frame even if nothing changed
    const wantTicker = this.pages.size > 0 && (this.enabled || !this.opts.onEnabledChange)
    if (wantTicker && this.ticker === undefined) this.ticker = this.clock.repeat(() => this.tick(), this.intervalMs)
    else if (!wantTicker && this.ticker !== undefined) {
      this.clock.clear(this.ticker)
      this.ticker = undefined
    }
    if (!this.enabled || this.pages.size === 0) {
      if (this.deferred !== undefined) {
        this.clock.clear(this.deferred)
        this.deferred = undefined
      }
      this.pending = false
    }
    if (captureNow && this.enabled && !was) this.request()
  }

  private tick(): void {
    if (!this.opts.onEnabledChange) this.reconcile(false)
    this.request()
  }

  /** Asks for a capture now, respecting the in-flight and minimum-interval rules (coalesced). */
  private request(): void {
    if (!this.enabled || this.pages.size === 0) return
    if (this.inFlight) {
      this.pending = true
      return
    }
    const wait = this.lastCaptureAt + this.minIntervalMs - this.clock.now()
    if (wait > 0) {
      this.deferred ??= this.clock.set(() => {
        this.deferred = undefined
        this.request()
      }, wait)
      return
    }
    void this.capture()
  }

  private async capture(): Promise<void> {
    const page = this.pages.active()
    if (!page) return
    this.inFlight = true
    this.lastCaptureAt = this.clock.now()
    const abort = new AbortController()
    this.current = { sessionId: page.session.sessionId, abandon: () => abort.abort(ABANDONED) }
    try {
      const png = await this.fittedScreenshot(page.session, abort.signal)
      if (png === undefined) return
      const hash = createHash('sha1').update(png).digest('hex')
      if (hash === this.lastHash) {
        this.stats.duplicates++
        return
      }
      // Checked again: the category may have been switched off while the capture ran.
      if (!this.enabled || !this.pages.has(page.session.sessionId)) return
      this.lastHash = hash
      if (page.emit({ type: 'monitor_screenshot', data: { png }, source: SOURCE }).accepted !== undefined)
        this.stats.emitted++
    } catch (err) {
      if (err === ABANDONED) {
        this.stats.abandoned++
        this.pending = true // the new document gets its capture
        return
      }
      this.stats.failed++
      if (!page.session.signal.aborted) this.logger.debug({ err, targetId: page.session.targetId }, 'screenshot failed')
    } finally {
      this.current = undefined
      this.inFlight = false
      if (this.pending) {
        this.pending = false
        this.request()
      }
    }
  }

  /** The viewport as base64 PNG that fits the budget, or undefined when no scale makes it fit. */
  private async fittedScreenshot(session: TargetSession, signal: AbortSignal): Promise<string | undefined> {
    const { budget } = this
    let data = await this.shoot(session, signal)
    if (data.length <= budget) return data
    const metrics = await session.sendMayFail('Page.getLayoutMetrics')
    if (!metrics) throw new Error('Page.getLayoutMetrics failed')
    const vp = metrics.cssVisualViewport
    // clip.scale is relative to the full-resolution capture, so the pixel count (and, roughly,
    // the PNG size) falls with scale²; aim 10% under the budget each round.
    let scale = 1
    for (let i = 0; i < MAX_RESCALES && data.length > budget; i++) {
      scale *= Math.sqrt(budget / data.length) * 0.9
      this.stats.rescaled++
      data = await this.shoot(session, signal, {
        x: vp.pageX,
        y: vp.pageY,
        width: vp.clientWidth,
        height: vp.clientHeight,
        scale,
      })
    }
    if (data.length <= budget) return data
    this.stats.oversize++
    this.logger.warn(
      { bytes: data.length, budget },
      'screenshot does not fit the envelope cap even scaled down; skipped',
    )
    return undefined
  }

  /** One capture; a protocol failure is counted by the session (sendMayFail); a slow one, or one aborted, is given up. */
  private async shoot(session: TargetSession, signal: AbortSignal, clip?: Clip): Promise<string> {
    const shot = await withTimeout(
      session.sendMayFail('Page.captureScreenshot', { format: 'png', ...(clip ? { clip } : {}) }),
      this.captureTimeoutMs,
      {
        timers: this.clock,
        signal,
        message: `Page.captureScreenshot took over ${this.captureTimeoutMs} ms`,
      },
    )
    if (!shot) throw new Error('Page.captureScreenshot failed')
    this.stats.captured++
    return shot.data
  }
}
