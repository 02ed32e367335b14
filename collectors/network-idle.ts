// The network_idle rule, pure and clock-injected: fire once per navigation after `quietMs` with no
// request of the page's session in flight. The collector feeds it; tests drive it with a fake clock.

import { systemClock, type Timers } from '../src/collector-kit.js'

export const NETWORK_QUIET_MS = 500

export interface NetworkIdleOptions {
  timers?: Timers
  quietMs?: number
  /** Called with the navigation (nav_seq) that became idle; never for an older one. */
  onIdle: (navSeq: number) => void
}

export class NetworkIdleRule {
  private readonly inflight = new Set<string>()
  private readonly timers: Timers
  private readonly quietMs: number
  private navSeq: number
  private fired = false
  private timer: unknown
  private disposed = false

  constructor(
    private readonly opts: NetworkIdleOptions,
    navSeq: number,
  ) {
    this.timers = opts.timers ?? systemClock
    this.quietMs = opts.quietMs ?? NETWORK_QUIET_MS
    this.navSeq = navSeq
    this.rearm() // a page with zero requests is idle too
  }

  get inFlight(): number {
    return this.inflight.size
  }
  get armed(): boolean {
    return this.timer !== undefined
  }

  /** A new top-level navigation: idle may fire again for it. Requests still in flight keep counting. */
  navigate(navSeq: number): void {
    if (this.disposed || navSeq === this.navSeq) return
    this.navSeq = navSeq
    this.fired = false
    this.rearm()
  }

  /** A request started. Redirect hops reuse the id, so they never count twice. */
  start(requestId: string): void {
    if (this.disposed) return
    this.inflight.add(requestId)
    this.cancel()
  }

  /** A request finished, failed or was evicted. Unknown ids are ignored. */
  done(requestId: string): void {
    if (this.disposed || !this.inflight.delete(requestId)) return
    this.rearm()
  }

  dispose(): void {
    this.disposed = true
    this.cancel()
    this.inflight.clear()
  }

  private cancel(): void {
    if (this.timer !== undefined) {
      this.timers.clear(this.timer)
      this.timer = undefined
    }
  }

  private rearm(): void {
    this.cancel()
    if (this.disposed || this.fired || this.inflight.size > 0) return
    const navSeq = this.navSeq
    this.timer = this.timers.set(() => {
      this.timer = undefined
      // A stale callback (old navigation, disposed session) must never fire into a newer state.
      if (this.disposed || navSeq !== this.navSeq || this.fired || this.inflight.size > 0) return
      this.fired = true
      this.opts.onIdle(navSeq)
    }, this.quietMs)
  }
}
