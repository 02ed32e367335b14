// Finding the browser's WebSocket endpoint, and the reconnect backoff rule (pure, tested without a browser).

export interface BackoffOptions {
  initialBackoffMs: number
  maxBackoffMs: number
}

/** Delay before reconnect attempt n (1-based): initial, doubling, capped at max. */
export function backoffDelay(attempt: number, o: BackoffOptions): number {
  return Math.min(o.initialBackoffMs * 2 ** Math.max(0, attempt - 1), o.maxBackoffMs)
}

/** http(s)://host:port of a cdp URL given as http(s):// or ws(s)://host:port/... */
export function httpBaseOf(cdpUrl: string): string {
  const u = new URL(cdpUrl)
  const protocol = u.protocol === 'wss:' || u.protocol === 'https:' ? 'https:' : 'http:'
  return `${protocol}//${u.host}`
}

/** Asks /json/version for the browser-level WebSocket URL. */
export async function fetchBrowserWsUrl(httpBase: string, timeoutMs = 5000): Promise<string> {
  const url = `${httpBase.replace(/\/+$/, '')}/json/version`
  let res: Response
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  } catch (err) {
    throw new Error(`cannot reach ${url}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`)
  }
  if (!res.ok) throw new Error(`${url} answered ${res.status}`)
  const body = await res.json().catch(() => undefined) as { webSocketDebuggerUrl?: unknown } | undefined
  const ws = body?.webSocketDebuggerUrl
  if (typeof ws !== 'string' || !/^wss?:\/\//.test(ws)) throw new Error(`${url} has no webSocketDebuggerUrl`)
  return ws
}

/**
 * The WebSocket URL to connect to now. For an http URL: /json/version. For a ws URL: /json/version on
 * the same host:port first (a restarted browser has a new URL), falling back to the URL as given.
 */
export async function resolveBrowserWsUrl(cdpUrl: string): Promise<string> {
  if (/^https?:\/\//.test(cdpUrl)) return fetchBrowserWsUrl(cdpUrl)
  try {
    return await fetchBrowserWsUrl(httpBaseOf(cdpUrl), 2000)
  } catch {
    return cdpUrl
  }
}
