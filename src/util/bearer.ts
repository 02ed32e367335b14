// RFC 6750 bearer tokens on the wire: one parser and one challenge for every listener that checks
// them (the API's auth middleware and the CDP proxy's upgrade check).

/** RFC 6750 b64token: the only characters a token may have (generated and configured ones too). */
export const TOKEN_SYNTAX = /^[A-Za-z0-9\-._~+/]+=*$/
const REALM = 'browser-telemetry'

export type BearerHeader =
  | { kind: 'missing' }
  /** Not `Bearer <token>`, or a token outside RFC 6750 (it can never match a configured one). */
  | { kind: 'malformed' }
  | { kind: 'token'; token: string }

/** Reads an Authorization header value (undefined or '' when absent). */
export function parseBearer(header: string | undefined): BearerHeader {
  if (header === undefined || header === '') return { kind: 'missing' }
  const m = /^Bearer +(\S+) *$/i.exec(header)
  if (!m || !TOKEN_SYNTAX.test(m[1]!)) return { kind: 'malformed' }
  return { kind: 'token', token: m[1]! }
}

/** The WWW-Authenticate value of a 401. */
export function bearerChallenge(error?: 'invalid_request' | 'invalid_token'): string {
  return error ? `Bearer realm="${REALM}", error="${error}"` : `Bearer realm="${REALM}"`
}
