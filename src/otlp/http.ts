// One OTLP/HTTP export request and the classification of its answer, per the OTLP/HTTP
// specification: 2xx = accepted (maybe partially), 429/502/503/504 = retryable (Retry-After honoured),
// any other 4xx = the payload is refused for good, network errors and other 5xx = retryable.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'

export interface HttpAnswer {
  status: number
  /** Retry-After in milliseconds, when given (seconds or an HTTP date). */
  retryAfterMs?: number
  body: Buffer
  contentType: string
}

export interface PostOptions {
  headers: Record<string, string>
  contentType: string
  timeoutMs: number
  ca?: Buffer
}

/** Posts one body; rejects on network errors and timeouts (both retryable). */
export function post(url: URL, body: Uint8Array, opts: PostOptions): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...opts.headers, 'content-type': opts.contentType, 'content-length': String(body.byteLength) },
        timeout: opts.timeoutMs,
        ...(opts.ca ? { ca: opts.ca } : {}),
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          // An answer is small (a partial-success message at most); never hold a huge one.
          if (size < 64 * 1024) chunks.push(c)
          size += c.length
        })
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfterMs: parseRetryAfter(res.headers['retry-after']),
            body: Buffer.concat(chunks),
            contentType: String(res.headers['content-type'] ?? ''),
          }),
        )
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)))
    req.on('error', reject)
    req.end(body)
  })
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value
  if (v === undefined || v.trim() === '') return undefined
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

export type AnswerClass = 'ok' | 'retry' | 'refused'

export function classify(status: number): AnswerClass {
  if (status >= 200 && status < 300) return 'ok'
  if (status === 429 || status === 502 || status === 503 || status === 504) return 'retry'
  if (status >= 400 && status < 500) return 'refused'
  return 'retry'
}

/** A short readable reason from an error answer's body (google.rpc.Status JSON or text), for logs. */
export function describeAnswer(a: HttpAnswer): string {
  const text = a.body.subarray(0, 300).toString('utf8')
  if (a.contentType.includes('json')) {
    try {
      const parsed = JSON.parse(a.body.toString('utf8')) as { message?: string }
      if (parsed.message) return `HTTP ${a.status}: ${parsed.message}`
    } catch {
      /* fall through to the text */
    }
  }
  // A protobuf google.rpc.Status carries its message as readable bytes; keep the printable run.
  const printable = text.replace(/[^\x20-\x7e]+/g, ' ').trim()
  return printable ? `HTTP ${a.status}: ${printable.slice(0, 200)}` : `HTTP ${a.status}`
}
