// A small HTTP client for the daemon API: bearer auth, the browser id (asked from GET /healthz when
// not configured), error bodies turned into one-line CliErrors, paging by X-Has-More/X-Next-Offset.
import { CliError } from './io.js'
import type { Connection } from './args.js'

export type Query = Record<string, string | number | string[] | undefined>

export interface RequestOptions {
  query?: Query
  headers?: Record<string, string>
  body?: BodyInit
  /** Streams need this for a ReadableStream body (Node's fetch). */
  duplex?: 'half'
  signal?: AbortSignal
}

export class ApiClient {
  private browserIdPromise?: Promise<string>

  constructor(readonly conn: Connection) {}

  url(path: string, query: Query = {}): string {
    const u = new URL(this.conn.url + path)
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined) continue
      for (const one of Array.isArray(v) ? v : [v]) u.searchParams.append(k, String(one))
    }
    return u.toString()
  }

  /** Sends a request; any non-2xx answer becomes a CliError carrying the server's {code, message}. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...opts.headers }
    if (this.conn.token) headers.authorization = `Bearer ${this.conn.token}`
    let res: Response
    try {
      res = await fetch(this.url(path, opts.query), {
        method,
        headers,
        body: opts.body,
        signal: opts.signal,
        ...(opts.duplex ? { duplex: opts.duplex } : {}),
      } as RequestInit)
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err
      const cause = (err as { cause?: { code?: string; message?: string } }).cause
      const why = cause?.code ?? cause?.message ?? (err as Error).message
      throw new CliError(
        `cannot reach ${this.conn.url} (${why}); is the daemon running? (--url / BROWSER_TELEMETRY_URL)`,
      )
    }
    if (!res.ok) throw await errorOf(res, this.conn)
    return res
  }

  async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, { ...opts, headers: { accept: 'application/json', ...opts.headers } })
    const text = await res.text()
    try {
      return JSON.parse(text) as T
    } catch {
      throw new CliError(`${method} ${path}: the daemon answered ${res.status} with a body that is not JSON`)
    }
  }

  /** The configured browser id, else the one the daemon serves (GET /healthz, no auth needed). */
  browserId(): Promise<string> {
    if (this.conn.browserId) return Promise.resolve(this.conn.browserId)
    this.browserIdPromise ??= this.json<{ browser_id?: unknown }>('GET', '/healthz')
      .catch((err: unknown) => {
        // /healthz answers 503 with the same body while the store cannot write; the id is still there.
        if (
          err instanceof ApiResponseError &&
          typeof (err.body as { browser_id?: unknown } | undefined)?.browser_id === 'string'
        ) {
          return err.body as { browser_id: string }
        }
        throw err
      })
      .then(h => {
        if (typeof h.browser_id !== 'string' || h.browser_id === '') {
          throw new CliError('the daemon did not report a browser id on /healthz; pass --browser-id')
        }
        return h.browser_id
      })
    return this.browserIdPromise
  }

  async browserPath(suffix: string): Promise<string> {
    return `/browsers/${encodeURIComponent(await this.browserId())}${suffix}`
  }
}

/** A non-2xx answer; message is "<status> <code>: <message>" as the server gave them. */
export class ApiResponseError extends CliError {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message)
    this.name = 'ApiResponseError'
  }
}

async function errorOf(res: Response, conn: Connection): Promise<ApiResponseError> {
  const text = await res.text().catch(() => '')
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  const b = body as { code?: unknown; message?: unknown } | undefined
  let message = typeof b?.message === 'string' ? b.message : text.split('\n')[0]!.slice(0, 200) || res.statusText
  if (typeof b?.code === 'string') message = `${b.code}: ${message}`
  if (res.status === 401 && !conn.token) message += ' (no token given: use --token or BROWSER_TELEMETRY_TOKEN)'
  return new ApiResponseError(`${res.status} ${message}`, res.status, body)
}

/** Pages of a list operation until X-Has-More is not "true" (the same rule as the real client). */
export async function* pages<T>(
  client: ApiClient,
  path: string,
  query: Query,
  signal?: AbortSignal,
): AsyncGenerator<T[]> {
  let offset: string | undefined
  for (;;) {
    const res = await client.request('GET', path, {
      query: { ...query, offset },
      headers: { accept: 'application/json' },
      signal,
    })
    const body = (await res.json()) as T[]
    if (!Array.isArray(body)) throw new CliError(`GET ${path}: expected a JSON array`)
    yield body
    const more = res.headers.get('x-has-more') === 'true'
    const next = res.headers.get('x-next-offset')
    if (!more || !next || next === '0' || body.length === 0) return
    offset = next
  }
}
