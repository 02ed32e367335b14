// What a digest says of a window: plain data, the same for the JSON and the markdown forms.

/** Effects named in words: failed requests and console errors that followed an action. */
export interface DigestEffect {
  kind: 'request_failed' | 'console_error' | 'dialog' | 'download' | 'crash' | 'navigation'
  /** One line: "POST /api/cart 500", "console error TypeError: cart is undefined at src/cart.ts:42:5". */
  text: string
}

export interface DigestAction {
  /** Unix microseconds. */
  ts: number
  title: string
  outcome: 'ok' | 'error'
  error_message?: string
  effects: DigestEffect[]
}

export interface DigestStep {
  step_id: string
  name: string
  outcome?: 'ok' | 'error' | 'abandoned'
  duration_ms?: number
  error_message?: string
  start_ts: number
  actions: DigestAction[]
}

export interface DigestVital {
  name: string
  value: number
  rating: string
}

export interface DigestNavigation {
  ts: number
  url: string
  vitals: DigestVital[]
}

export interface DigestRequest {
  /** When it was sent (its answer or failure may come later). */
  ts: number
  method: string
  url: string
  /** Absent for a request that failed without an answer. */
  status?: number
  error?: string
  /** The stored (redacted) body's start, one line, when one was captured. */
  body?: string
}

export interface DigestConsoleError {
  ts: number
  text: string
  /** The first frames, mapped where a source map covers them: "fn (src/cart.ts:42:5)". */
  frames: string[]
}

export interface DigestIncident {
  ts: number
  kind: 'crash' | 'dialog' | 'download' | 'disconnect'
  text: string
}

export interface Digest {
  /** Unix microseconds, [since, until). */
  window: { since_ts: number; until_ts: number }
  /** When a step was asked for: its id. */
  step_id?: string
  events: number
  steps: DigestStep[]
  /** Actions outside any step. */
  actions: DigestAction[]
  navigations: DigestNavigation[]
  failed_requests: DigestRequest[]
  console_errors: DigestConsoleError[]
  incidents: DigestIncident[]
  /** Seqs missing in the window (shed under pressure, over a cap, or lost in an unclean stop). */
  dropped: { events: number; gaps: number }
  /** What the character budget left out, by section (absent: nothing). */
  omitted?: Record<string, number>
}
