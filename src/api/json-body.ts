// The one JSON request-body middleware (koa-body, JSON only, strict). Parse failures are a 400
// naming `body`; a body over the limit stays koa-body's 413.
import { koaBody } from 'koa-body'
import { ApiError, invalidInput } from './errors.js'
import type { ApiMiddleware } from './route-table.js'

export interface JsonBodyOptions {
  /** Largest accepted body, in koa-body's notation ('64kb', '2mb'). */
  limit: string
  /** Answer 400 for an empty body (co-body would read it as {}, e.g. silently resetting a PUT). */
  requireBody?: boolean
  /** Answer 415 with this message unless Content-Type is application/json. */
  requireJsonType?: string
  /** The body may be left out: without one the route runs as if it were {} (nothing checked). */
  optional?: boolean
}

/**
 * Statuses a middleware answers on its own, keyed by status with their descriptions: the OpenAPI
 * document lists them for every route that runs it (openapi.ts).
 */
export const REFUSALS = Symbol('refusals')
export type WithRefusals = ApiMiddleware & { [REFUSALS]?: Record<number, string> }

export function jsonBody(opts: JsonBodyOptions): ApiMiddleware {
  const parse = koaBody({
    json: true,
    text: false,
    urlencoded: false,
    multipart: false,
    jsonLimit: opts.limit,
    jsonStrict: true,
  }) as unknown as ApiMiddleware
  const mw: WithRefusals = async (ctx, next) => {
    if (opts.optional && !((ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '')) return next()
    if (opts.requireJsonType !== undefined && !ctx.is('application/json')) {
      throw new ApiError(415, 'unsupported_media_type', opts.requireJsonType)
    }
    if (opts.requireBody && !((ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '')) {
      throw invalidInput('body', 'a JSON body is required')
    }
    let parsed = false
    try {
      await parse(ctx, async () => {
        parsed = true
      })
    } catch (err) {
      if ((err as { status?: number }).status === 400)
        throw invalidInput('body', `not valid JSON: ${(err as Error).message}`)
      throw err
    }
    if (parsed) await next()
  }
  const refusals: Record<number, string> = {
    413: `The JSON body is larger than ${opts.limit} (code payload_too_large)`,
  }
  if (opts.requireJsonType !== undefined)
    refusals[415] = 'The body is not sent as Content-Type: application/json (code unsupported_media_type)'
  mw[REFUSALS] = refusals
  return mw
}
