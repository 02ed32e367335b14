// Event name -> handlers, shared by target sessions and the browser scope. One handler's throw
// never stops the others (a buggy collector must not blind the rest).
import type { Logger } from '../log.js'

export type Handler = (params: unknown) => void

export class HandlerRegistry {
  private readonly byEvent = new Map<string, Set<Handler>>()

  /** Adds a handler; returns its idempotent unsubscribe (empty sets are dropped, so nothing accumulates). */
  add(event: string, handler: Handler): () => void {
    let set = this.byEvent.get(event)
    if (!set) this.byEvent.set(event, set = new Set())
    set.add(handler)
    return () => {
      const s = this.byEvent.get(event)
      if (!s) return
      s.delete(handler)
      if (s.size === 0) this.byEvent.delete(event)
    }
  }

  /** `session` names the session in the warning of a throwing handler (a string: nothing is built per event). */
  dispatch(event: string, params: unknown, logger: Logger, session: string): void {
    const set = this.byEvent.get(event)
    if (!set) return
    for (const h of set) {
      try { h(params) } catch (err) { logger.warn({ err, event, session }, 'collector handler threw') }
    }
  }

  clear(): void { this.byEvent.clear() }

  get size(): number {
    let n = 0
    for (const s of this.byEvent.values()) n += s.size
    return n
  }
}
