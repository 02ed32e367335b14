// Finding the browser's WebSocket endpoint, and the reconnect backoff rule (pure, tested without a browser).
import { get as httpGet, type IncomingMessage } from 'node:http'
import { get as httpsGet } from 'node:https'

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

/** /json/version answers are a few hundred bytes; anything far larger is not a DevTools endpoint. */
const VERSION_MAX_BYTES = 64 * 1024

/**
 * Asks /json/version for the browser-level WebSocket URL. Plain node:http, not the global fetch:
 * the first fetch() in a process compiles undici's WebAssembly HTTP parser, a one-off ~40 MB RSS
 * peak (V8 compiler zones) for one tiny GET.
 */
export async function fetchBrowserWsUrl(httpBase: string, timeoutMs = 5000): Promise<string> {
  const url = `${httpBase.replace(/\/+$/, '')}/json/version`
  let res: { status: number; body: string }
  try {
    res = await getSmall(url, timeoutMs)
  } catch (err) {
    throw new Error(`cannot reach ${url}: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (res.status < 200 || res.status > 299) throw new Error(`${url} answered ${res.status}`)
  let body: { webSocketDebuggerUrl?: unknown } | undefined
  try {
    body = JSON.parse(res.body) as typeof body
  } catch {
    body = undefined
  }
  const ws = body?.webSocketDebuggerUrl
  if (typeof ws !== 'string' || !/^wss?:\/\//.test(ws)) throw new Error(`${url} has no webSocketDebuggerUrl`)
  return ws
}

/** One GET with a time bound on the whole exchange and a byte bound on the body. */
function getSmall(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet
    const req = get(url, (res: IncomingMessage) => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (c: Buffer) => {
        size += c.length
        if (size > VERSION_MAX_BYTES) {
          req.destroy(new Error(`answer over ${VERSION_MAX_BYTES} bytes`))
          return
        }
        chunks.push(c)
      })
      res.on('end', () => {
        clearTimeout(timer)
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') })
      })
      res.on('error', err => {
        clearTimeout(timer)
        reject(err)
      })
    })
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    req.on('error', err => {
      clearTimeout(timer)
      reject(err)
    })
  })
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
