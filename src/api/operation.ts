// Per-route metadata as Koa middleware: the operation id (for api_call events and metrics) and the
// scope the bearer token must hold. Auth middleware (src/identity/tokens.ts) fills ctx.state.scopes first.
import type { QueryValues } from './query-params.js'
import type { Middleware } from 'koa'
import { ApiError } from './errors.js'
import type { Scope } from '../identity/tokens.js'

export type { Scope }

export interface ApiState {
  requestId: string
  operationId?: string
  /** Scopes of the authenticated token; undefined before auth ran (or on unauthenticated routes). */
  scopes?: ReadonlySet<Scope>
  /** Loggable name of the authenticated token (never the token itself). */
  tokenName?: string
  /** Set when auth refused the request (401/403 by the token check): no api_call, only metrics. */
  authRejected?: boolean
  /** Telemetry reads and streams set this so they never emit api_call (a poller must not feed itself). */
  skipApiCall?: boolean
  /** The route's query parameters, checked against its documented schemas (route-table.ts). */
  query?: QueryValues
}

export function operation(operationId: string, scope: Scope | null): Middleware<ApiState> {
  return async (ctx, next) => {
    ctx.state.operationId = operationId
    if (scope !== null && !ctx.state.scopes?.has(scope)) {
      ctx.state.authRejected = true
      throw new ApiError(403, 'forbidden', `this token lacks the "${scope}" scope needed for ${operationId}`)
    }
    await next()
  }
}
