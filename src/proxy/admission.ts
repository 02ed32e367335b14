// Who may reach the browser through the proxy, and how a refusal is answered: web pages (Origin,
// DNS-rebinding Host) are refused as Chromium refuses them, bearer tokens with the cdp scope when
// auth is on, and every refusal is the error object on a plain HTTP answer (an upgrade that is
// refused never becomes a WebSocket).
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isIP } from 'node:net'
import type { Duplex } from 'node:stream'
import { bearerChallenge, parseBearer } from '../util/bearer.js'

export interface CdpProxyAuth {
  /** Scopes of a presented token, undefined when unknown (the daemon passes TokenSet.lookup). */
  verify(token: string): ReadonlySet<string> | undefined
}

/**
 * Whether the proxy must require a token: when asked (--proxy-auth), and always when it listens
 * beyond loopback (a CDP client can do anything the browser can, files and cookies included).
 */
export function proxyAuthRequired(listenHost: string, requested: boolean): boolean {
  if (requested) return true
  const h = listenHost.replace(/^\[|\]$/g, '').toLowerCase()
  return !(h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h))
}

/**
 * Web pages must not reach the browser through the proxy (the browser being automated visits
 * arbitrary sites, and the proxy listens on the same machine). Chromium itself refuses WebSocket
 * upgrades carrying an Origin (since 111, unless --remote-allow-origins) and discovery requests
 * whose Host is a DNS name (DNS rebinding); the proxy must not undo that by dialling on their
 * behalf. CDP libraries send no Origin. The Host rule applies only without auth: with a token
 * required, a rebinding page has nothing to present, and remote clients may use DNS names.
 */
export function refuseBrowserRequest(
  req: IncomingMessage,
  allowOrigins: readonly string[],
  authOn: boolean,
): HttpError | undefined {
  const origin = req.headers.origin
  if (origin !== undefined && !(allowOrigins.includes('*') || allowOrigins.includes(origin))) {
    return {
      status: 403,
      code: 'forbidden',
      message: `requests from web pages (Origin ${JSON.stringify(origin)}) are refused; CDP clients send no Origin header`,
    }
  }
  if (!authOn) {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '')
    if (host !== '' && host !== 'localhost' && !isIP(host)) {
      return {
        status: 403,
        code: 'forbidden',
        message:
          'Host must be an IP address or localhost (DNS-rebinding protection; enable --proxy-auth to use host names)',
      }
    }
  }
  return undefined
}

/** undefined when allowed (or no auth is configured); otherwise the error to answer. */
export function authorize(req: IncomingMessage, url: URL, auth: CdpProxyAuth | undefined): HttpError | undefined {
  if (!auth) return undefined
  const bearer = parseBearer(req.headers.authorization)
  let token: string | undefined
  if (bearer.kind === 'malformed')
    return {
      status: 401,
      code: 'unauthorized',
      message: 'malformed Authorization header: expected "Bearer <token>"',
      headers: challenge('invalid_request'),
    }
  if (bearer.kind === 'token') {
    token = bearer.token
  } else {
    token = url.searchParams.get('token') ?? undefined
  }
  if (!token)
    return {
      status: 401,
      code: 'unauthorized',
      message: 'missing bearer token: send "Authorization: Bearer <token>" or ?token=<token>',
      headers: challenge(),
    }
  const scopes = auth.verify(token)
  if (!scopes)
    return { status: 401, code: 'unauthorized', message: 'unknown bearer token', headers: challenge('invalid_token') }
  if (!scopes.has('cdp'))
    return { status: 403, code: 'forbidden', message: 'this token lacks the "cdp" scope needed for the CDP proxy' }
  return undefined
}

export interface HttpError {
  status: number
  code: string
  message: string
  headers?: Record<string, string>
}

const challenge = (error?: 'invalid_request' | 'invalid_token'): Record<string, string> => ({
  'WWW-Authenticate': bearerChallenge(error),
})

export function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ code, message })
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** The request target as a URL; undefined when it is not one (a 400, not a 500). Absolute-form targets keep only path and query. */
export function requestUrl(req: IncomingMessage): URL | undefined {
  const target = req.url ?? '/'
  if (!target.startsWith('/') || target.startsWith('//')) return undefined
  try {
    return new URL(target, 'http://proxy')
  } catch {
    return undefined
  }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  503: 'Service Unavailable',
}

/** Answers an upgrade request with a plain HTTP error (the socket is not a WebSocket yet). */
export function rejectUpgrade(
  socket: Duplex,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ code, message })
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    'Connection: close',
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.end(lines.join('\r\n') + '\r\n\r\n' + body)
}
