// One join of network events into exchanges, one per request hop: the HAR converter and the session
// viewer both read the network through it, so both show the same requests.
//
// network_request opens an exchange keyed by (session, request id); the next network_response or
// network_loading_failed with that key completes it; network_response_incomplete gives it the
// headers of a body that never completed (and completes it, unless a failure follows). Chromium reuses the request id across a
// redirect chain, so a second network_request with the same key while the first is still open
// closes that hop (its redirect target is the new hop's URL) and opens the next one. A response or
// failure without a captured request (in flight before the window or the attach) is an exchange of
// its own, built from what it carries.
import type { Envelope, EventOf } from '../events/index.js'

type NetworkType = 'network_request' | 'network_response' | 'network_response_incomplete' | 'network_loading_failed'
/** An envelope narrowed to one event type. */
export type EnvelopeOf<T extends NetworkType> = { seq: number; event: EventOf<T> }

export interface Exchange {
  key: string
  request?: EnvelopeOf<'network_request'>
  response?: EnvelopeOf<'network_response'>
  failure?: EnvelopeOf<'network_loading_failed'>
  /** The status and headers of a response whose body never completed (network_response_incomplete). */
  incomplete?: EnvelopeOf<'network_response_incomplete'>
  /** Set when a later hop of the same request id followed this one before it completed. */
  redirectedTo?: { ts: number; url: string; status?: number }
  /** The envelopes of this hop, in the order they were added. */
  envelopes: Envelope[]
}

/** Exchanges are keyed by the CDP session (a request id is unique only within one). */
export function exchangeKey(d: { session_id?: string; target_id?: string; request_id: string }): string {
  return `${d.session_id ?? d.target_id ?? ''}\u0000${d.request_id}`
}

/** Incremental: add envelopes in seq order; callers that track other state (pages) interleave. */
export class ExchangeJoin {
  readonly exchanges: Exchange[] = []
  private readonly open = new Map<string, Exchange>()

  /** retain: false keeps only the open exchanges (a streamed export lets completed ones go). */
  constructor(private readonly opts: { retain?: boolean } = {}) {}

  /** Stops waiting for the rest of an exchange: a later response or failure of its key starts a new one. */
  forget(ex: Exchange): void {
    if (this.open.get(ex.key) === ex) this.open.delete(ex.key)
  }

  /** Adds one envelope; returns the exchange it began, or undefined (completed one, or not network). */
  add(e: Envelope): Exchange | undefined {
    const event = e.event
    switch (event.type) {
      case 'network_request': {
        const key = exchangeKey(event.data)
        const prev = this.open.get(key)
        if (prev)
          prev.redirectedTo = {
            ts: event.ts,
            url: event.data.url ?? '',
            ...(event.data.redirect_status !== undefined ? { status: event.data.redirect_status } : {}),
          }
        return this.begin(key, { key, request: { seq: e.seq, event }, envelopes: [e] })
      }
      case 'network_response_incomplete': {
        // The headers of the open hop; it ends here unless a failure follows (reason failed).
        const key = exchangeKey(event.data)
        let ex = this.open.get(key)
        let begun: Exchange | undefined
        if (!ex) ex = begun = this.begin(key, { key, envelopes: [] })
        ex.incomplete = { seq: e.seq, event }
        ex.envelopes.push(e)
        if (event.data.reason !== 'failed') this.open.delete(key)
        return begun
      }
      case 'network_response':
      case 'network_loading_failed': {
        const key = exchangeKey(event.data)
        let ex = this.open.get(key)
        let begun: Exchange | undefined
        if (!ex) ex = begun = this.begin(key, { key, envelopes: [] })
        if (event.type === 'network_response') ex.response = { seq: e.seq, event }
        else ex.failure = { seq: e.seq, event }
        ex.envelopes.push(e)
        this.open.delete(key)
        return begun
      }
      default:
        return undefined
    }
  }

  private begin(key: string, ex: Exchange): Exchange {
    if (this.opts.retain !== false) this.exchanges.push(ex)
    this.open.set(key, ex)
    return ex
  }
}

/** Every exchange of `events` (in seq order), in the order they began. */
export function joinExchanges(events: Iterable<Envelope>): Exchange[] {
  const join = new ExchangeJoin()
  for (const e of events) join.add(e)
  return join.exchanges
}

/** Where an exchange begins: its request, else what completed it. */
export function firstOf(ex: Exchange): { seq: number; ts: number } {
  const first = ex.request ?? ex.response ?? ex.incomplete ?? ex.failure!
  return { seq: first.seq, ts: first.event.ts }
}
