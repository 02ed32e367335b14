// The API's bearer authentication: the Authorization header checked against the token set
// (src/identity/tokens.ts), answering 401 with a WWW-Authenticate challenge. No function here logs a
// token or puts one in an error message.
import { ApiError } from './errors.js'
import type { ApiMiddleware } from './route-table.js'
import type { TokenSet } from '../identity/tokens.js'
import { bearerChallenge, parseBearer } from '../util/bearer.js'

function unauthorized(message: string, error?: 'invalid_request' | 'invalid_token'): ApiError {
  const challenge = bearerChallenge(error)
  return new ApiError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': challenge })
}

/** Koa middleware: sets ctx.state.scopes from `Authorization: Bearer <token>`, or answers 401. */
export function bearerAuth(tokens: TokenSet): ApiMiddleware {
  return async (ctx, next) => {
    ctx.state.authRejected = true // until a token is accepted below
    const bearer = parseBearer(ctx.get('authorization'))
    if (bearer.kind === 'missing') throw unauthorized('missing bearer token: send "Authorization: Bearer <token>"')
    if (bearer.kind === 'malformed')
      throw unauthorized('malformed Authorization header: expected "Bearer <token>"', 'invalid_request')
    const identity = tokens.identify(bearer.token)
    if (!identity) throw unauthorized('unknown bearer token', 'invalid_token')
    ctx.state.scopes = identity.scopes
    ctx.state.tokenName = identity.name
    ctx.state.authRejected = false
    await next()
  }
}
