// The app-wide middleware, outermost first: request id -> api_call emission -> error rendering.
// (api_call sits outside error rendering so it records the status the client actually got.)
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { Middleware } from 'koa'
import type { Emit } from '../pipeline/pipeline.js'
import type { Logger } from '../log.js'
import { ServiceError } from '../errors.js'
import { ApiError } from './errors.js'
import type { ApiState } from './operation.js'

/** An incoming X-Request-Id is honoured only if it is a short token that is safe to echo and log. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export function requestId(): Middleware<ApiState> {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id')
    ctx.state.requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID()
    ctx.set('X-Request-Id', ctx.state.requestId)
    await next()
  }
}

/**
 * Emits api_call {request_id, operation_id, status, duration_ms} once the response status is final.
 * Skipped for routes that set skipApiCall (telemetry reads, streams, healthz) and for requests that
 * matched no route (no operation id; a scanner must not be able to fill the log).
 */
export function apiCallEvents(emit: Emit): Middleware<ApiState> {
  return async (ctx, next) => {
    const start = performance.now()
    try {
      await next()
    } finally {
      const { operationId, skipApiCall, requestId, authRejected } = ctx.state
      // Refused by auth: not written to the log (anyone who reaches the port could fill it);
      // /metrics counts these requests by operation and status instead.
      if (operationId && !skipApiCall && !authRejected) {
        emit({
          type: 'api_call',
          source: { kind: 'kernel_api' },
          data: {
            request_id: requestId,
            operation_id: operationId,
            status: ctx.status,
            duration_ms: Math.round((performance.now() - start) * 1000) / 1000,
          },
        })
      }
    }
  }
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  411: 'length_required',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'too_many_requests',
  501: 'not_implemented',
}

/**
 * Any thrown value -> the ServiceError to answer (ApiError, UploadError, ... pass through as they are).
 * Client errors raised by libraries (koa-body/co-body parse errors, http-errors with expose=true) keep
 * their status; everything else is a 500 that reveals nothing.
 */
export function toApiError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err
  const e = err as { status?: unknown; statusCode?: unknown; expose?: unknown; message?: unknown; type?: unknown }
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500
  if (status >= 400 && status < 500) {
    let message = typeof e.message === 'string' && e.expose !== false ? e.message : 'bad request'
    if (e.type === 'entity.parse.failed') message = `request body is not valid JSON: ${message}`
    return new ApiError(status, CODE_BY_STATUS[status] ?? 'bad_request', message)
  }
  return new ApiError(500, 'internal', 'internal error')
}

/** Renders every error (and unmatched routes) as `{code, message, details?}` with a JSON content type. */
export function renderErrors(logger: Logger): Middleware<ApiState> {
  return async (ctx, next) => {
    try {
      await next()
      if (ctx.respond === false || ctx.body != null) return
      // Nothing matched (404) or the path exists with other methods (405, Allow header already set).
      if (ctx.status === 404) throw new ApiError(404, 'not_found', `no route for ${ctx.method} ${ctx.path}`)
      if (ctx.status === 405)
        throw new ApiError(
          405,
          'method_not_allowed',
          `${ctx.method} is not allowed on ${ctx.path} (allowed: ${ctx.response.get('Allow')})`,
        )
      if (ctx.status === 501) throw new ApiError(501, 'not_implemented', `method ${ctx.method} is not implemented`)
    } catch (err) {
      const apiErr = toApiError(err)
      if (apiErr.status >= 500 && !(err instanceof ServiceError)) {
        // The stack goes to the daemon log only, tied to the request id the client saw.
        logger.error({ err, requestId: ctx.state.requestId, operationId: ctx.state.operationId }, 'request failed')
      }
      if (ctx.headerSent || !ctx.writable) return
      ctx.status = apiErr.status
      for (const [k, v] of Object.entries(apiErr.headers ?? {})) ctx.set(k, v)
      ctx.type = 'application/json'
      ctx.body = apiErr.body()
    }
  }
}
