// The page_layout_settled / page_navigation_settled rules, pure and clock-injected. One instance per
// page session; every input carries the nav_seq it belongs to, and a newer nav_seq resets the state,
// so nothing of an old navigation (timer, flag) can leak into a newer one.

import type { Timers } from '../src/collector-kit.js'

export const LAYOUT_STABLE_MS = 1000

export interface NavigationSettleOptions {
  timers: Timers
  stableMs?: number
  onLayoutSettled: (navSeq: number) => void
  onNavigationSettled: (navSeq: number) => void
}

export class NavigationSettleRule {
  private navSeq: number
  private domContentLoaded = false
  private loaded = false
  private layoutSettled = false
  private navigationSettled = false
  private timer: unknown
  private disposed = false
  private readonly stableMs: number

  constructor(
    private readonly opts: NavigationSettleOptions,
    navSeq: number,
  ) {
    this.navSeq = navSeq
    this.stableMs = opts.stableMs ?? LAYOUT_STABLE_MS
  }

  get armed(): boolean {
    return this.timer !== undefined
  }

  /** A top-level navigation: forget everything of the previous one, including its timer. */
  navigate(navSeq: number): void {
    if (this.disposed || navSeq === this.navSeq) return
    this.cancel()
    this.navSeq = navSeq
    this.domContentLoaded = this.loaded = this.layoutSettled = this.navigationSettled = false
  }

  onDomContentLoaded(navSeq: number): void {
    if (!this.current(navSeq)) return
    this.domContentLoaded = true
    this.maybeNavigationSettled()
  }

  /** page_load starts the stable period. */
  onLoad(navSeq: number): void {
    if (!this.current(navSeq) || this.loaded) return
    this.loaded = true
    this.arm()
  }

  /** A shift after load restarts the stable period; shifts before load (or after settling) do nothing. */
  onLayoutShift(navSeq: number): void {
    if (!this.current(navSeq) || !this.loaded || this.layoutSettled) return
    this.arm()
  }

  dispose(): void {
    this.disposed = true
    this.cancel()
  }

  private current(navSeq: number): boolean {
    if (this.disposed) return false
    this.navigate(navSeq) // a newer navigation we had not heard of yet resets first
    return true
  }

  private cancel(): void {
    if (this.timer !== undefined) {
      this.opts.timers.clear(this.timer)
      this.timer = undefined
    }
  }

  private arm(): void {
    this.cancel()
    const navSeq = this.navSeq
    this.timer = this.opts.timers.set(() => {
      this.timer = undefined
      if (this.disposed || navSeq !== this.navSeq || this.layoutSettled) return
      this.layoutSettled = true
      this.opts.onLayoutSettled(navSeq)
      this.maybeNavigationSettled()
    }, this.stableMs)
  }

  private maybeNavigationSettled(): void {
    if (this.disposed || this.navigationSettled || !this.domContentLoaded || !this.layoutSettled) return
    this.navigationSettled = true
    this.opts.onNavigationSettled(this.navSeq)
  }
}
