// CDP command failures, classified the way Playwright's ProtocolError does: 'closed' (the session,
// its target or its document went away: expected whenever a tab closes or navigates, so ignored
// quietly) versus 'error' (anything else: a real failure, counted by method and logged at warn at
// most once per method per minute so a failing command in a hot path cannot flood the log).
import type { Logger } from '../log.js'
import { ConnectionClosedError } from './cdp-client.js'

export type ProtocolErrorKind = 'closed' | 'error'

export class ProtocolError extends Error {
  constructor(
    readonly kind: ProtocolErrorKind,
    readonly method: string,
    message: string,
    /** The JSON-RPC error code Chromium answered with, when it answered. */
    readonly code?: number,
  ) {
    super(`${method}: ${message}`)
    this.name = 'ProtocolError'
  }
}

/**
 * Chromium's answers for a command whose session, target or document is gone (matched by text:
 * they come as JSON-RPC error messages). A tab closing races every command in flight on it, and a navigation destroys
 * the execution contexts and frames a command named, so these are expected, not failures.
 */
const GONE_MESSAGES = [
  'Session with given id not found', // flattened session detached before the command arrived
  'No session with given id',
  'Target closed',
  'No target with given id', // Target.attachToTarget / closeTarget on a tab that just closed
  'Inspected target navigated or closed', // Runtime.evaluate with awaitPromise across a navigation
  'Execution context was destroyed',
  'Cannot find context with specified id',
  'No frame for given id found', // Page.createIsolatedWorld on a frame that detached
  'Not attached to an active page',
]

/** Classifies any rejection of a CDP command; already classified errors keep their kind. */
export function classifyProtocolError(err: unknown): ProtocolErrorKind {
  if (err instanceof ProtocolError) return err.kind
  if (err instanceof ConnectionClosedError) return 'closed' // the browser connection itself went away
  const message = err instanceof Error ? err.message : String(err)
  return GONE_MESSAGES.some(m => message.includes(m)) ? 'closed' : 'error'
}

/** Wraps whatever a command rejected with (chrome-remote-interface's ProtocolError, a socket error) as a classified ProtocolError. */
export function toProtocolError(method: string, err: unknown): ProtocolError {
  if (err instanceof ProtocolError) return err
  const message = err instanceof Error ? err.message : String(err)
  const code = (err as { response?: { code?: unknown } } | null)?.response?.code
  return new ProtocolError(classifyProtocolError(err), method, message, typeof code === 'number' ? code : undefined)
}

export interface ProtocolErrorLogOptions {
  logger: Logger
  /** Monotonic milliseconds (injectable for tests). */
  now?: () => number
  /** At most one warn per method per this period (default 60 s). */
  warnEveryMs?: number
}

/**
 * Where failed best-effort commands (sendMayFail) end up: 'closed' ones at debug, the rest counted
 * per method (browser_telemetry_cdp_errors_total{method}) and warned about once per method per
 * period. Method names are protocol method names, a closed set, so the maps stay bounded.
 */
export class ProtocolErrorLog {
  private readonly byMethod = new Map<string, number>()
  private readonly lastWarnAt = new Map<string, number>()
  private readonly now: () => number
  private readonly warnEveryMs: number

  constructor(private readonly opts: ProtocolErrorLogOptions) {
    this.now = opts.now ?? (() => performance.now())
    this.warnEveryMs = opts.warnEveryMs ?? 60_000
  }

  /** Records one failure of method; returns its classification. */
  report(method: string, err: unknown, where?: object): ProtocolErrorKind {
    const kind = classifyProtocolError(err)
    if (kind === 'closed') {
      this.opts.logger.debug({ err, method, ...where }, 'CDP command failed: session or target gone')
      return kind
    }
    const n = (this.byMethod.get(method) ?? 0) + 1
    this.byMethod.set(method, n)
    const t = this.now()
    const last = this.lastWarnAt.get(method)
    if (last === undefined || t - last >= this.warnEveryMs) {
      this.lastWarnAt.set(method, t)
      this.opts.logger.warn({ err, method, failures: n, ...where }, 'CDP command failed')
    }
    return kind
  }

  /** Failures of kind 'error' since start, by method. */
  counts(): Record<string, number> {
    return Object.fromEntries(this.byMethod)
  }
}
