// The one "give up after ms" helper: races a promise against a timer that is always cleared, and
// against an optional abort signal (a closing owner stops waiting at once).
import { systemClock, type Timers } from './clock.js'

export class TimeoutError extends Error {
  constructor(
    message: string,
    readonly ms: number,
  ) {
    super(message)
    this.name = 'TimeoutError'
  }
}

export interface WithTimeoutOptions {
  /** Message of the TimeoutError (default "timed out after <ms> ms"). */
  message?: string
  timers?: Timers
  /** Aborting rejects at once with the signal's reason and clears the timer. */
  signal?: AbortSignal
}

/**
 * Settles like `work`, or rejects with a TimeoutError after `ms`. `work` itself is not cancelled
 * (its eventual rejection is handled here, so it never becomes an unhandled rejection).
 */
export function withTimeout<T>(work: Promise<T>, ms: number, opts: WithTimeoutOptions = {}): Promise<T> {
  const timers = opts.timers ?? systemClock
  const { signal } = opts
  if (signal?.aborted) {
    work.catch(() => undefined)
    return Promise.reject(signal.reason)
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      timers.clear(timer)
      reject(signal!.reason)
    }
    const timer = timers.set(() => {
      signal?.removeEventListener('abort', onAbort)
      reject(new TimeoutError(opts.message ?? `timed out after ${ms} ms`, ms))
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
    const settle = () => {
      timers.clear(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    work.then(
      v => {
        settle()
        resolve(v)
      },
      (e: unknown) => {
        settle()
        reject(e)
      },
    )
  })
}
