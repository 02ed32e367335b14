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
import { createHash } from 'node:crypto'
import { DEFAULT_MAX_ENVELOPE_BYTES, type Emit } from '../src/pipeline.js'
import { silentLogger, type Logger } from '../src/log.js'
import type { Collector, Detach, TargetSession } from '../src/monitor/types.js'

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

interface PageEntry { session: TargetSession; emit: Emit; activeAt: number }

export function createScreenshotCollector(opts: ScreenshotCollectorOptions): ScreenshotCollector {
  const intervalMs = opts.intervalMs ?? 5000
  const minIntervalMs = opts.minIntervalMs ?? Math.min(1000, intervalMs)
  const budget = (opts.maxBytes ?? DEFAULT_MAX_ENVELOPE_BYTES) - ENVELOPE_OVERHEAD
  const captureTimeoutMs = opts.captureTimeoutMs ?? 10_000
  const logger = opts.logger ?? silentLogger
  const stats: ScreenshotStats = { captured: 0, emitted: 0, duplicates: 0, rescaled: 0, oversize: 0, failed: 0 }

  const pages = new Map<string, PageEntry>()
  let activity = 0
  let enabled = false
  let ticker: ReturnType<typeof setInterval> | undefined
  let deferred: ReturnType<typeof setTimeout> | undefined
  let unsubscribe: (() => void) | undefined
  let inFlight = false
  let pending = false
  let lastCaptureAt = -Infinity
  let lastHash: string | undefined

  const active = (): PageEntry | undefined => {
    let best: PageEntry | undefined
    for (const p of pages.values()) if (!best || p.activeAt > best.activeAt) best = p
    return best
  }
  const touch = (sessionId: string): void => {
    const p = pages.get(sessionId)
    if (p) p.activeAt = ++activity
  }

  /**
   * Matches the ticker to the state: it runs while there is a page and the category is enabled
   * (or always, to poll isEnabled(), when there is no subscription). A category switched on
   * captures at once when `captureNow`; an attach does not (that target is still paused).
   */
  const reconcile = (captureNow: boolean): void => {
    const was = enabled
    enabled = opts.isEnabled()
    if (enabled && !was) lastHash = undefined // switching screenshots on yields a frame even if nothing changed
    const wantTicker = pages.size > 0 && (enabled || !opts.onEnabledChange)
    if (wantTicker && !ticker) ticker = setInterval(tick, intervalMs)
    else if (!wantTicker && ticker) { clearInterval(ticker); ticker = undefined }
    if (!enabled || pages.size === 0) {
      if (deferred) { clearTimeout(deferred); deferred = undefined }
      pending = false
    }
    if (captureNow && enabled && !was) request()
  }
  const tick = (): void => {
    if (!opts.onEnabledChange) reconcile(false)
    request()
  }

  /** Asks for a capture now, respecting the in-flight and minimum-interval rules (coalesced). */
  const request = (): void => {
    if (!enabled || pages.size === 0) return
    if (inFlight) { pending = true; return }
    const wait = lastCaptureAt + minIntervalMs - performance.now()
    if (wait > 0) {
      deferred ??= setTimeout(() => { deferred = undefined; request() }, wait)
      return
    }
    void capture()
  }

  const capture = async (): Promise<void> => {
    const page = active()
    if (!page) return
    inFlight = true
    lastCaptureAt = performance.now()
    try {
      const png = await fittedScreenshot(page.session)
      if (png === undefined) return
      const hash = createHash('sha1').update(png).digest('hex')
      if (hash === lastHash) { stats.duplicates++; return }
      // Checked again: the category may have been switched off while the capture ran.
      if (!enabled || !pages.has(page.session.sessionId)) return
      lastHash = hash
      if (page.emit({ type: 'monitor_screenshot', data: { png }, source: SOURCE }).accepted !== undefined) stats.emitted++
    } catch (err) {
      stats.failed++
      if (!page.session.signal.aborted) logger.debug({ err, targetId: page.session.targetId }, 'screenshot failed')
    } finally {
      inFlight = false
      if (pending) { pending = false; request() }
    }
  }

  /** The viewport as base64 PNG that fits the budget, or undefined when no scale makes it fit. */
  const fittedScreenshot = async (session: TargetSession): Promise<string | undefined> => {
    let data = await shoot(session)
    if (data.length <= budget) return data
    const { cssVisualViewport: vp } = await session.send('Page.getLayoutMetrics')
    // clip.scale is relative to the full-resolution capture, so the pixel count (and, roughly,
    // the PNG size) falls with scale²; aim 10% under the budget each round.
    let scale = 1
    for (let i = 0; i < MAX_RESCALES && data.length > budget; i++) {
      scale *= Math.sqrt(budget / data.length) * 0.9
      stats.rescaled++
      data = await shoot(session, { x: vp.pageX, y: vp.pageY, width: vp.clientWidth, height: vp.clientHeight, scale })
    }
    if (data.length <= budget) return data
    stats.oversize++
    logger.warn({ bytes: data.length, budget }, 'screenshot does not fit the envelope cap even scaled down; skipped')
    return undefined
  }

  const shoot = async (session: TargetSession, clip?: { x: number; y: number; width: number; height: number; scale: number }): Promise<string> => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Page.captureScreenshot took over ${captureTimeoutMs} ms`)), captureTimeoutMs)
    })
    try {
      const { data } = await Promise.race([session.send('Page.captureScreenshot', { format: 'png', ...(clip ? { clip } : {}) }), timeout])
      stats.captured++
      return data
    } finally {
      clearTimeout(timer)
    }
  }

  function attach(session: TargetSession, emit: Emit): Detach {
    if (session.targetType !== 'page') return () => undefined
    pages.set(session.sessionId, { session, emit, activeAt: ++activity })
    const offs = [
      session.on('Page.frameNavigated', (p) => { if (!p.frame.parentId) touch(session.sessionId) }),
      session.on('Page.loadEventFired', () => { touch(session.sessionId); request() }),
    ]
    // Page events need the domain; the page collector may enable it too (harmless twice).
    void session.sendMayFail('Page.enable')
    if (pages.size === 1 && opts.onEnabledChange) unsubscribe = opts.onEnabledChange(() => reconcile(true))
    reconcile(false)
    let detached = false
    return () => {
      if (detached) return
      detached = true
      for (const off of offs) off()
      pages.delete(session.sessionId)
      if (pages.size === 0) { unsubscribe?.(); unsubscribe = undefined }
      reconcile(false)
    }
  }

  return { name: 'screenshot', attach, stats, activeTargetId: () => active()?.session.targetId }
}
