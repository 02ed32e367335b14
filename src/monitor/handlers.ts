// Event name -> handlers, shared by target sessions and the browser scope. One handler's throw
// never stops the others (a buggy collector must not blind the rest).
import type { Logger } from '../log.js'

export type Handler = (params: unknown) => void

/**
 * Handlers per event name over every session of one connection: the connection drops events with
 * none unparsed (`droppableUnheard` in connection.ts), e.g. the console messages Chromium sends
 * once Runtime is enabled for the interaction binding alone.
 */
export class ListenedEvents {
  private readonly counts = new Map<string, number>()
  has(event: string): boolean {
    return this.counts.has(event)
  }
  add(event: string, n = 1): void {
    this.counts.set(event, (this.counts.get(event) ?? 0) + n)
  }
  remove(event: string, n = 1): void {
    const left = (this.counts.get(event) ?? 0) - n
    if (left > 0) this.counts.set(event, left)
    else this.counts.delete(event)
  }
}

export class HandlerRegistry {
  private readonly byEvent = new Map<string, Set<Handler>>()

  /** `listened`: the connection-wide count every add / remove / clear here is reported to. */
  constructor(private readonly listened?: ListenedEvents) {}

  /** Adds a handler; returns its idempotent unsubscribe (empty sets are dropped, so nothing accumulates). */
  add(event: string, handler: Handler): () => void {
    let set = this.byEvent.get(event)
    if (!set) this.byEvent.set(event, (set = new Set()))
    if (!set.has(handler)) {
      set.add(handler)
      this.listened?.add(event)
    }
    return () => {
      const s = this.byEvent.get(event)
      if (!s || !s.delete(handler)) return
      this.listened?.remove(event)
      if (s.size === 0) this.byEvent.delete(event)
    }
  }

  /** True while any handler listens to `event`. */
  has(event: string): boolean {
    return this.byEvent.has(event)
  }

  /** `session` names the session in the warning of a throwing handler (a string: nothing is built per event). */
  dispatch(event: string, params: unknown, logger: Logger, session: string): void {
    const set = this.byEvent.get(event)
    if (!set) return
    for (const h of set) {
      try {
        h(params)
      } catch (err) {
        logger.warn({ err, event, session }, 'collector handler threw')
      }
    }
  }

  clear(): void {
    if (this.listened) for (const [event, set] of this.byEvent) this.listened.remove(event, set.size)
    this.byEvent.clear()
  }

  get size(): number {
    let n = 0
    for (const s of this.byEvent.values()) n += s.size
    return n
  }
}
