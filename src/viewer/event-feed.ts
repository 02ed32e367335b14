// The data side of the viewer: the token, paged history through the events API (never the whole
// log), and live follow over the SSE stream (fetch-based so the Authorization header is sent;
// resumes with Last-Event-ID after a blip). Holds one contiguous window of envelopes in seq order.
import { createParser } from 'eventsource-parser'
import { FeedState, type Feed, type LiveState } from './feed.js'
import type { Envelope } from './model.js'

const TOKEN_KEY = 'browser-telemetry.token'
export const PAGE_LIMIT = 100
/** Pages of history loaded without asking (the rest on scroll or "load older"). */
export const INITIAL_EVENTS = 2000
/** "Load older" reads the events of this long before the oldest one shown, page after page, */
export const OLDER_WINDOW_US = 5 * 60 * 1_000_000
/** and at most this many at once, however busy that window was (the page holds what it reads). */
export const OLDER_MAX_EVENTS = 5000
/** Oldest envelopes are let go beyond this many, so a long live session stays bounded. */
export const MAX_EVENTS = 200_000

export class AuthError extends Error {}

export function readToken(): string | undefined {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined
  } catch {
    return undefined
  }
}
export function saveToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token)
}
export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY)
}

/**
 * Moves `token` (and `browser`) out of the URL fragment: the token into sessionStorage, the fragment
 * rewritten without it (history.replaceState, so it is not left in the address bar or history).
 */
export function takeTokenFromFragment(): { browser?: string } {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''))
  const token = params.get('token')
  const browser = params.get('browser') ?? undefined
  if (token === null && browser === undefined) return {}
  if (token) saveToken(token)
  params.delete('token')
  params.delete('browser')
  const rest = params.toString()
  history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''))
  return { browser }
}

export type { LiveState }

/** The viewer's window of envelopes: history pages, live follow, and who is told of changes. */
export class EventFeed extends FeedState implements Feed {
  readonly mode = 'live' as const
  hasOlder = false
  hasNewer = false
  loading = false
  error = ''
  live: LiveState = 'off'
  private liveAbort?: AbortController
  private flushLive?: () => void
  private generation = 0

  constructor(
    readonly base: string,
    public browserId: string,
    private token: string,
  ) {
    super()
  }

  private async page(
    query: string,
    signal?: AbortSignal,
  ): Promise<{ items: Envelope[]; hasMore: boolean; next: number }> {
    const res = await fetch(`${this.base}/browsers/${encodeURIComponent(this.browserId)}/telemetry/events?${query}`, {
      headers: { authorization: `Bearer ${this.token}` },
      signal,
      cache: 'no-store',
    })
    if (res.status === 401 || res.status === 403) throw new AuthError(await errorText(res))
    if (!res.ok) throw new Error(await errorText(res))
    const items = (await res.json()) as Envelope[]
    return {
      items,
      hasMore: res.headers.get('x-has-more') === 'true',
      next: Number(res.headers.get('x-next-offset') ?? 0),
    }
  }

  /**
   * The daemon's debug bundle of the window from `since` (RFC 3339) to the newest event, as a Blob,
   * fetched with the bearer token in the header (the token never goes into a URL).
   */
  /** The debug bundle (or, with route trace.zip, the Playwright trace) of the window from `since`. */
  async bundle(
    since: string | undefined,
    route: 'bundle' | 'trace.zip' = 'bundle',
  ): Promise<{ blob: Blob; name: string }> {
    const q = since ? `?since=${encodeURIComponent(since)}` : ''
    const res = await fetch(`${this.base}/browsers/${encodeURIComponent(this.browserId)}/telemetry/${route}${q}`, {
      headers: { authorization: `Bearer ${this.token}` },
      cache: 'no-store',
    })
    if (res.status === 401 || res.status === 403) throw new AuthError(await errorText(res))
    if (!res.ok) throw new Error(await errorText(res))
    const name = /filename="([A-Za-z0-9._-]+\.zip)"/.exec(res.headers.get('content-disposition') ?? '')?.[1]
    // A broken transfer (the daemon failed midway) rejects here: nothing half-written is offered.
    const blob = await res.blob()
    return { blob, name: name ?? `${this.browserId}.zip` }
  }

  async perfTrace(traceId: string): Promise<Blob | undefined> {
    const res = await fetch(
      `${this.base}/browsers/${encodeURIComponent(this.browserId)}/telemetry/perf-traces/${encodeURIComponent(traceId)}`,
      { headers: { authorization: `Bearer ${this.token}` } },
    )
    if (res.status === 401 || res.status === 403) throw new AuthError(await errorText(res))
    if (res.status === 404) return undefined
    if (res.status !== 200) throw new Error(await errorText(res))
    return await res.blob()
  }

  /** Newest page first, then older pages in the background up to INITIAL_EVENTS. */
  async loadLatest(): Promise<void> {
    const gen = this.reset()
    await this.guard(async () => {
      const p = await this.page(`order=desc&limit=${PAGE_LIMIT}`)
      if (gen !== this.generation) return
      this.events = p.items.reverse()
      this.hasOlder = p.hasMore
      this.hasNewer = false
    })
    await this.fillOlder(gen)
  }

  /** A window starting at seq (deep link / jump), with one page before it for context. */
  async loadAroundSeq(seq: number): Promise<void> {
    const gen = this.reset()
    await this.guard(async () => {
      const p = await this.page(`offset=${seq}&limit=${PAGE_LIMIT}`)
      if (gen !== this.generation) return
      this.events = p.items
      this.hasNewer = p.hasMore
      this.hasOlder = true
    })
    await this.fillPage(gen)
  }

  /** A window starting at an RFC-3339 time. Returns the first seq at or after it (0 when none). */
  async loadAroundTime(iso: string): Promise<number> {
    const gen = this.reset()
    let first = 0
    await this.guard(async () => {
      const p = await this.page(`since=${encodeURIComponent(iso)}&limit=${PAGE_LIMIT}`)
      if (gen !== this.generation) return
      this.events = p.items
      this.hasNewer = p.hasMore
      this.hasOlder = true
      first = p.items[0]?.seq ?? 0
    })
    if (this.events.length === 0) {
      await this.loadLatest()
      return this.lastSeq
    }
    await this.fillPage(gen)
    return first
  }

  /**
   * The OLDER_WINDOW_US before the oldest event shown (what "Load older" and the list's top ask
   * for): one API page at a time, until the window is read, the log's start or OLDER_MAX_EVENTS.
   */
  async loadOlder(): Promise<void> {
    if (!this.hasOlder || this.loading) return
    const gen = this.generation
    await this.guard(async () => {
      const oldest = this.events[0]
      const from = oldest ? oldest.event.ts - OLDER_WINDOW_US : Infinity
      for (let read = 0; read < OLDER_MAX_EVENTS;) {
        const older = await this.olderPage(gen)
        if (older === undefined) return
        read += older.length
        if (!this.hasOlder || (older[0]?.event.ts ?? -Infinity) <= from) return
        this.changed()
      }
    })
  }

  /** One page before the oldest event shown (undefined: a newer load replaced the window). */
  private async olderPage(gen: number): Promise<Envelope[] | undefined> {
    const offset = this.firstSeq
    const p = await this.page(`order=desc&limit=${PAGE_LIMIT}${offset > 0 ? `&offset=${offset}` : ''}`)
    if (gen !== this.generation) return undefined
    const older = p.items.filter(e => e.seq < this.firstSeq || this.events.length === 0).reverse()
    this.events = older.concat(this.events)
    this.hasOlder = p.hasMore && older.length > 0
    return older
  }

  /** The background fill after the first page: one page at a time, up to INITIAL_EVENTS. */
  private async fillPage(gen: number): Promise<void> {
    if (!this.hasOlder || this.loading) return
    await this.guard(async () => void (await this.olderPage(gen)))
  }

  async loadNewer(): Promise<void> {
    if (!this.hasNewer || this.loading) return
    const gen = this.generation
    await this.guard(async () => {
      const p = await this.page(`offset=${this.lastSeq + 1}&limit=${PAGE_LIMIT}`)
      if (gen !== this.generation) return
      this.append(p.items)
      this.hasNewer = p.hasMore
    })
  }

  private async fillOlder(gen: number): Promise<void> {
    while (gen === this.generation && this.hasOlder && this.events.length < INITIAL_EVENTS && !this.error) {
      // Another load in flight (the list reached its top, a live page): loadOlder would return at
      // once and this loop would spin in microtasks, never letting that load finish.
      if (this.loading) await new Promise(r => setTimeout(r, 50))
      else await this.fillPage(gen)
    }
  }

  private reset(): number {
    this.stopLive()
    this.events = []
    this.hasOlder = false
    this.hasNewer = false
    this.error = ''
    this.loading = false
    this.changed()
    return ++this.generation
  }

  private async guard(fn: () => Promise<void>): Promise<void> {
    this.loading = true
    this.changed()
    try {
      await fn()
      this.error = ''
    } catch (err) {
      if (err instanceof AuthError) {
        this.loading = false
        this.changed()
        throw err
      }
      this.error = (err as Error).message
    } finally {
      this.loading = false
      this.changed()
    }
  }

  private append(items: readonly Envelope[]): void {
    const last = this.lastSeq
    const fresh = items.filter(e => e.seq > last)
    if (fresh.length === 0) return
    this.events = this.events.concat(fresh)
    if (this.events.length > MAX_EVENTS) {
      this.events = this.events.slice(this.events.length - MAX_EVENTS)
      this.hasOlder = true
    }
  }

  /**
   * Follows the stream from the last loaded seq. A dropped connection is retried (250 ms doubling to
   * 5 s) with Last-Event-ID = the last seq received, so nothing is missed or repeated.
   */
  startLive(onAuthError: (e: AuthError) => void): void {
    if (this.liveAbort || this.hasNewer) return
    const abort = new AbortController()
    this.liveAbort = abort
    void (async () => {
      let backoff = 250
      while (!abort.signal.aborted) {
        this.live = 'connecting'
        this.changed()
        try {
          await this.streamOnce(abort.signal, () => {
            backoff = 250
          })
        } catch (err) {
          if (abort.signal.aborted) break
          if (err instanceof AuthError) {
            this.stopLive()
            onAuthError(err)
            return
          }
        }
        if (abort.signal.aborted) break
        this.live = 'retrying'
        this.changed()
        await new Promise(r => setTimeout(r, backoff))
        backoff = Math.min(backoff * 2, 5000)
      }
    })()
  }

  stopLive(): void {
    // Apply what already arrived, then nothing more: the page holds a fixed window once paused.
    this.flushLive?.()
    this.flushLive = undefined
    this.liveAbort?.abort()
    this.liveAbort = undefined
    if (this.live !== 'off') {
      this.live = 'off'
      this.changed()
    }
  }

  private async streamOnce(signal: AbortSignal, onOpen: () => void): Promise<void> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' }
    // Resume right after what is loaded; an empty log starts at the live edge.
    if (this.lastSeq > 0) headers['last-event-id'] = String(this.lastSeq)
    const res = await fetch(`${this.base}/browsers/${encodeURIComponent(this.browserId)}/telemetry/stream`, {
      headers,
      signal,
      cache: 'no-store',
    })
    if (res.status === 401 || res.status === 403) throw new AuthError(await errorText(res))
    if (!res.ok || !res.body) throw new Error(await errorText(res))
    this.live = 'live'
    this.changed()
    onOpen()
    let batch: Envelope[] = []
    let scheduled = false
    // Many events can arrive per frame: apply them once per ~frame (a timer: rAF stops in a background tab).
    const flush = () => {
      scheduled = false
      if (signal.aborted) {
        batch = []
        return
      } // stopLive already applied it
      if (batch.length > 0) {
        this.append(batch)
        batch = []
        this.changed()
      }
    }
    this.flushLive = flush
    const parser = createParser({
      onEvent: msg => {
        if (!msg.data) return
        try {
          const env = JSON.parse(msg.data) as Envelope
          if (typeof env.seq === 'number') batch.push(env)
        } catch {
          /* a malformed frame is skipped */
        }
        if (!scheduled) {
          scheduled = true
          setTimeout(flush, 16)
        }
      },
    })
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        parser.feed(value)
      }
    } finally {
      flush()
      reader.releaseLock()
    }
  }
}

async function errorText(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { code?: string; message?: string }
    return `${res.status} ${body.code ?? ''}: ${body.message ?? res.statusText}`
  } catch {
    return `${res.status} ${res.statusText}`
  }
}
