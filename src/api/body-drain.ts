// Refusals a client can read. A route that refuses a request (401, 403, 404, 413, a bad dest_path...)
// before it has read the body leaves the client still sending. Closing the socket then makes the
// kernel answer the unread bytes with a TCP reset, which can destroy the response the client has not
// read yet (Node's fetch and @onkernel/sdk report EPIPE/ECONNRESET instead of the status). So the
// error is answered on a connection that stays open, and the rest of the body is read and discarded,
// bounded in bytes and time; only a client that sends more than that, or for longer, has its
// connection destroyed. A body drained to its end leaves a clean keep-alive connection.
import type { IncomingMessage } from 'node:http'
import type { Middleware } from 'koa'
import type { ApiState } from './operation.js'
import { DEFAULT_SETTINGS } from '../defaults.js'

export interface DrainLimits {
  /** Most body bytes read and discarded after a refusal before the connection is destroyed. */
  maxBytes: number
  /** Longest time spent draining after a refusal before the connection is destroyed. */
  maxMs: number
}

export const DEFAULT_DRAIN_LIMITS: DrainLimits = {
  maxBytes: DEFAULT_SETTINGS.drainMaxBytes,
  maxMs: DEFAULT_SETTINGS.drainTimeoutMs,
}

const draining = new WeakSet<IncomingMessage>()

/** Whether the request announced a body that has not been read to its end. */
function hasUnreadBody(req: IncomingMessage): boolean {
  if (req.complete || req.readableEnded || req.destroyed) return false
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * Reads and discards what is left of req's body. Stops at its end; destroys the connection when
 * more than maxBytes arrive or maxMs pass first. Safe to call more than once.
 */
export function drainRequest(
  req: IncomingMessage,
  limits: DrainLimits,
  onDone?: (outcome: 'drained' | 'capped' | 'closed') => void,
): void {
  if (!hasUnreadBody(req) || draining.has(req)) return
  draining.add(req)
  let seen = 0
  const socket = req.socket
  const finish = (outcome: 'drained' | 'capped' | 'closed') => {
    clearTimeout(timer)
    req.off('data', count)
    req.off('end', onEnd)
    req.off('close', onClose)
    if (outcome === 'capped') socket.destroy()
    onDone?.(outcome)
  }
  const count = (chunk: Buffer) => {
    seen += chunk.length
    if (seen > limits.maxBytes) finish('capped')
  }
  const onEnd = () => finish('drained')
  const onClose = () => finish(req.complete ? 'drained' : 'closed')
  const timer = setTimeout(() => finish('capped'), limits.maxMs)
  timer.unref()
  // a parser that stopped reading (busboy unpiped, raw-body halted) left it paused
  req.unpipe()
  req.on('data', count)
  req.once('end', onEnd)
  req.once('close', onClose)
  req.resume()
}

/**
 * App middleware (outermost, so it sees the final status): after an error response to a request
 * whose body was not read to its end, drain the rest of it. The response itself is sent normally.
 */
export function drainRefusedBodies(limits: DrainLimits = DEFAULT_DRAIN_LIMITS): Middleware<ApiState> {
  return async (ctx, next) => {
    try {
      await next()
    } finally {
      if (ctx.status >= 400 && ctx.respond !== false) drainRequest(ctx.req, limits)
    }
  }
}
