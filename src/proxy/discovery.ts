// The DevTools HTTP discovery endpoints (/json/version, /json/list, ...) as seen through the proxy:
// pure rewriting of the browser's answers so every WebSocket URL points at the proxy instead.

const WS_FRONTEND_PARAM = /([?&]wss?=)[^/&#]+/

/** Keys of a discovery object that hold a WebSocket URL or a DevTools frontend URL with a `ws=` param. */
const WS_URL_KEYS = ['webSocketDebuggerUrl'] as const
const FRONTEND_URL_KEYS = ['devtoolsFrontendUrl', 'devtoolsFrontendUrlCompat'] as const

/**
 * Rewrites one discovery answer (the object of /json/version or the array of /json/list) so clients
 * that know only the proxy address connect through it. `proxyHost` is host[:port] as the client
 * reached the proxy; `token` (when the client authenticated with `?token=`) is carried into the
 * WebSocket URLs because such clients cannot set headers on the follow-up connection either.
 */
export function rewriteDiscovery(body: unknown, proxyHost: string, token?: string): unknown {
  if (Array.isArray(body)) return body.map(item => rewriteDiscovery(item, proxyHost, token))
  if (!body || typeof body !== 'object') return body
  const out: Record<string, unknown> = { ...(body as Record<string, unknown>) }
  for (const key of WS_URL_KEYS) {
    const v = out[key]
    if (typeof v === 'string') out[key] = rewriteWsUrl(v, proxyHost, token)
  }
  for (const key of FRONTEND_URL_KEYS) {
    const v = out[key]
    if (typeof v === 'string') out[key] = v.replace(WS_FRONTEND_PARAM, `$1${proxyHost}`)
  }
  return out
}

export function rewriteWsUrl(wsUrl: string, proxyHost: string, token?: string): string {
  let u: URL
  try {
    u = new URL(wsUrl)
  } catch {
    return wsUrl
  }
  u.host = proxyHost
  if (token !== undefined) u.searchParams.set('token', token)
  return u.toString()
}

/** The browser's HTTP endpoint (http://host:port) for its WebSocket URL. */
export function httpBaseOf(wsUrl: string): URL {
  const u = new URL(wsUrl)
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:'
  u.pathname = '/'
  u.search = ''
  return u
}

/** Upgrade paths the proxy relays, mapped to the upstream URL they are relayed to (undefined = not relayable). */
export function upstreamPathFor(pathname: string, browserWsUrl: string): string | undefined {
  // "/" is a convenience for raw clients that only know the proxy address: the current browser target.
  if (pathname === '/' || pathname === '/devtools/browser' || pathname === '/devtools/browser/') return browserWsUrl
  if (!/^\/devtools\/(browser|page)\/[A-Za-z0-9._~-]+$/.test(pathname)) return undefined
  const u = new URL(browserWsUrl)
  u.pathname = pathname
  u.search = ''
  return u.toString()
}

/** The Host header value when it is a plain host[:port] (anything else falls back to the listen address). */
export function saneHost(host: string | undefined): string | undefined {
  return host && /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host) ? host : undefined
}
