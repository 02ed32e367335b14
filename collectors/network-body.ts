// Response bodies: which MIME types get one, how it is cut to the cap, and a bounded queue for
// Network.getResponseBody so body fetches never pile up on the CDP connection.
import type { Bounds } from '../src/collector-kit.js'

/** Exact text types whose bodies are kept (besides any `+json` / `+xml` suffix type). */
const TEXT_MIME_TYPES = new Set([
  'application/json',
  'text/json',
  'application/x-json',
  'application/xml',
  'text/xml',
  'text/html',
  'application/xhtml+xml',
  'text/plain',
  'text/csv',
  'application/csv',
  'text/x-csv',
  'application/x-www-form-urlencoded',
  'application/graphql',
  'application/yaml',
  'application/x-yaml',
  'text/yaml',
  'text/x-yaml',
])

/**
 * True for the text MIME types whose bodies are captured: JSON, XML, HTML, plain text, CSV,
 * form-urlencoded, GraphQL, YAML and the structured-syntax suffixes +json / +xml / +yaml. Scripts,
 * stylesheets and binaries get no body.
 */
export function isTextMime(mime: string | undefined): boolean {
  if (!mime) return false
  const essence = mime.split(';', 1)[0]!.trim().toLowerCase()
  return (
    TEXT_MIME_TYPES.has(essence) || essence.endsWith('+json') || essence.endsWith('+xml') || essence.endsWith('+yaml')
  )
}

export interface CutBody {
  body: string
  truncated: boolean
}

/**
 * Decodes a Network.getResponseBody result to text and cuts it to at most maxBytes UTF-8 bytes
 * without splitting a character. Base64 bodies are decoded only as far as needed.
 */
export function cutBody(raw: string, base64Encoded: boolean, maxBytes: number): CutBody {
  if (base64Encoded) {
    const padding = raw.endsWith('==') ? 2 : raw.endsWith('=') ? 1 : 0
    const fullBytes = Math.floor((raw.length * 3) / 4) - padding
    // 4 base64 chars = 3 bytes; decode a little past the cap so the cut lands on a char boundary.
    const head = raw.length > 0 && fullBytes > maxBytes ? raw.slice(0, Math.ceil((maxBytes + 4) / 3) * 4) : raw
    const buf = Buffer.from(head, 'base64')
    return fullBytes > maxBytes
      ? { body: cutUtf8(buf, maxBytes), truncated: true }
      : { body: buf.toString('utf8'), truncated: false }
  }
  // Every UTF-16 unit is at least one UTF-8 byte, so short strings need no byte count at all.
  if (raw.length * 3 <= maxBytes) return { body: raw, truncated: false }
  const buf = Buffer.from(raw.length > maxBytes ? raw.slice(0, maxBytes) : raw, 'utf8')
  if (raw.length <= maxBytes && buf.length <= maxBytes) return { body: raw, truncated: false }
  return { body: cutUtf8(buf, maxBytes), truncated: true }
}

/** The longest prefix of buf of at most maxBytes that ends on a UTF-8 character boundary. */
export function cutUtf8(buf: Buffer, maxBytes: number): string {
  if (buf.length <= maxBytes) return buf.toString('utf8')
  let end = maxBytes
  // Step back over continuation bytes (10xxxxxx) to the lead byte of the split character.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--
  return buf.subarray(0, end).toString('utf8')
}

export interface BodyJob {
  /** Groups jobs so a detaching target can cancel its queued ones. */
  owner: object
  /** Starts the fetch; the returned promise settles when the slot may be reused. */
  run(): Promise<void>
  /** Called instead of run() when the job is dropped (queue full or owner gone). */
  cancel(): void
}

/**
 * At most `concurrency` body fetches run at once and at most `maxQueued` wait; anything beyond is
 * cancelled at once (its response is emitted without a body) rather than delaying other events,
 * and counted (browser_telemetry_state_evictions_total{table="body_fetch_dropped"}).
 */
export class BodyFetchQueue {
  private active = 0
  private readonly queue: BodyJob[] = []
  constructor(
    /** Where a dropped fetch is counted. */
    private readonly bounds: Bounds,
    private readonly concurrency = 4,
    private readonly maxQueued = 256,
  ) {}

  get pending(): number {
    return this.queue.length
  }
  get running(): number {
    return this.active
  }

  submit(job: BodyJob): void {
    if (this.active < this.concurrency) this.start(job)
    else if (this.queue.length < this.maxQueued) this.queue.push(job)
    else {
      this.bounds.countEviction('body_fetch_dropped')
      job.cancel()
    }
  }

  /** Cancels every queued job of owner (running ones finish or fail on their own). */
  cancelOwner(owner: object): void {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const job = this.queue[i]!
      if (job.owner === owner) {
        this.queue.splice(i, 1)
        job.cancel()
      }
    }
  }

  private start(job: BodyJob): void {
    this.active++
    let settled: Promise<void>
    try {
      settled = job.run()
    } catch {
      settled = Promise.resolve()
    }
    settled
      .catch(() => undefined)
      .finally(() => {
        this.active--
        const next = this.queue.shift()
        if (next) this.start(next)
      })
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The bytes as text, or undefined when they are not text (invalid UTF-8, or NUL / control bytes). */
function asText(buf: Buffer): string | undefined {
  try {
    const s = utf8.decode(buf)
    // eslint-disable-next-line no-control-regex -- control characters are what marks binary text
    return /[\u0000-\u0008\u000e-\u001f]/.test(s) ? undefined : s
  } catch {
    return undefined
  }
}

/**
 * A request body for post_data: text stays text, cut to maxBytes UTF-8 bytes; a multipart body
 * keeps its text parts and replaces each binary part's content by `[binary, N bytes]`; any other
 * binary body becomes `[binary <content-type>, N bytes]`. Chromium already leaves file contents out
 * of multipart bodies it hands to Network.getRequestPostData.
 */
export function postDataText(
  raw: string,
  base64Encoded: boolean,
  contentType: string | undefined,
  maxBytes: number,
): CutBody {
  if (!base64Encoded) return cutBody(raw, false, maxBytes)
  const buf = Buffer.from(raw, 'base64')
  const whole = asText(buf)
  if (whole !== undefined) return cutBody(whole, false, maxBytes)
  const boundary = /^multipart\/[^;]+;.*\bboundary="?([^";]+)"?/i.exec(contentType ?? '')?.[1]
  if (boundary) return cutBody(summariseMultipart(buf, boundary), false, maxBytes)
  const type = contentType?.split(';', 1)[0]!.trim()
  return { body: `[binary${type ? ` ${type}` : ''}, ${buf.length} bytes]`, truncated: false }
}

/** Splits on the boundary delimiter; text parts verbatim, binary part contents summarised. */
function summariseMultipart(buf: Buffer, boundary: string): string {
  const delimiter = Buffer.from(`--${boundary}`)
  const out: string[] = []
  let at = buf.indexOf(delimiter)
  if (at < 0) return `[binary multipart, ${buf.length} bytes]`
  out.push(asText(buf.subarray(0, at)) ?? '')
  while (at >= 0) {
    const next = buf.indexOf(delimiter, at + delimiter.length)
    const part = buf.subarray(at + delimiter.length, next < 0 ? buf.length : next)
    const headEnd = part.indexOf('\r\n\r\n')
    const text = asText(part)
    if (text !== undefined || headEnd < 0) out.push(text ?? `[binary, ${part.length} bytes]`)
    else {
      // Keep the part's headers (name, filename, type); the content ends before the CRLF of the next delimiter.
      const content = part.subarray(headEnd + 4, next < 0 ? part.length : Math.max(headEnd + 4, part.length - 2))
      out.push(
        `${asText(part.subarray(0, headEnd + 4)) ?? ''}[binary, ${content.length} bytes]${next < 0 ? '' : '\r\n'}`,
      )
    }
    at = next
  }
  return out.join(`--${boundary}`)
}
