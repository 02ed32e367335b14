// Secret masking of a performance trace as it is written: Chromium's gzip JSON is inflated, every
// JSON string is masked by the event policy, and the result is compressed again, so no file on disk
// (nor the API, nor a bundle) holds what the log would not. A trace names URLs everywhere (requests,
// frames, scripts, stack frames, navigations) and carries the page's own text (console.timeStamp
// messages, console.time labels, user timing marks), so every string is masked, not chosen fields:
// each URL inside it by the URL rule, and the whole value of a field whose name looks secret.
// Works on the token stream, whatever the layout; strings are the only state held.
import { PassThrough, Transform, Writable, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip, createGzip } from 'node:zlib'
import { StringDecoder } from 'node:string_decoder'
import type { Redactor } from '../events/redact.js'
import { maskValue } from '../events/redact.js'

/** What masks a trace's strings (the pipeline's Redactor). */
export type TraceRedactor = Pick<Redactor, 'textUrls' | 'isSecretName'>

/** A string longer than this is not held to be looked at: it is replaced by its mask (fail closed). */
export const MAX_TRACE_STRING_CHARS = 8 * 1024 * 1024

/**
 * The JSON text of a trace, masked: a Transform of UTF-8 text. Bytes outside strings pass as they
 * are; a string is re-serialised only when masking changed it.
 */
export class TraceMasker extends Transform {
  private readonly decoder = new StringDecoder('utf8')
  private inString = false
  private escaped = false
  /** The raw characters of the open string, without its quotes. */
  private raw: string[] = []
  private rawChars = 0
  /** The last string ended and only white space followed. */
  private afterString = false
  private lastString = ''
  /** A ':' followed a secret-looking name: the next string is its value. */
  private secretValue = false
  /** Strings masked (tests and the logger read it). */
  masked = 0

  constructor(private readonly redactor: TraceRedactor) {
    super()
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const out = this.scan(this.decoder.write(chunk))
    if (out) this.push(out)
    done()
  }

  override _flush(done: TransformCallback): void {
    const rest = this.scan(this.decoder.end())
    if (this.inString) return done(new Error('the trace ended inside a JSON string'))
    if (rest) this.push(rest)
    done()
  }

  private scan(text: string): string {
    let out = ''
    let from = 0 // start of the run of text not yet copied (outside strings) or held (inside)
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (c === 0x5c) this.escaped = true
        else if (c === 0x22) {
          this.hold(text.slice(from, i))
          out += this.closeString()
          from = i + 1
        }
        continue
      }
      if (c === 0x22) {
        out += text.slice(from, i)
        from = i + 1
        this.inString = true
        continue
      }
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue
      if (c === 0x3a && this.afterString) this.secretValue = this.redactor.isSecretName(this.lastString)
      else this.secretValue = false
      this.afterString = false
    }
    if (this.inString) this.hold(text.slice(from))
    else out += text.slice(from)
    return out
  }

  private hold(part: string): void {
    if (part === '') return
    this.rawChars += part.length
    if (this.rawChars <= MAX_TRACE_STRING_CHARS) this.raw.push(part)
    else this.raw.length = 0
  }

  /** The closed string as it goes out: as read, or masked. */
  private closeString(): string {
    this.inString = false
    const secret = this.secretValue
    this.secretValue = false
    this.afterString = true
    const chars = this.rawChars
    const raw = this.raw.join('')
    this.raw = []
    this.rawChars = 0
    if (chars > MAX_TRACE_STRING_CHARS) {
      this.lastString = ''
      this.masked++
      let n = 8
      while (n < chars) n *= 2
      return `"[redacted:${n}]"`
    }
    // Names and most values hold no escape: read them as they are.
    let value: string
    try {
      value = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw
    } catch {
      value = raw
    }
    this.lastString = value
    const masked = secret ? maskValue(value) : this.redactor.textUrls(value)
    if (masked === value) return `"${raw}"`
    this.masked++
    return JSON.stringify(masked)
  }
}

/** Chromium's gzip chunks in, masked gzip chunks out to `sink`, in order, with back-pressure. */
export interface MaskingWriter {
  write(gzipChunk: Buffer): Promise<void>
  /** Resolves once every masked byte reached `sink`. */
  end(): Promise<void>
  destroy(): void
}

export function maskingWriter(redactor: TraceRedactor, sink: (chunk: Buffer) => Promise<void>): MaskingWriter {
  const input = new PassThrough()
  const out = new Writable({
    write: (chunk: Buffer, _enc, done) => void sink(chunk).then(() => done(), done),
  })
  const finished = pipeline(input, createGunzip(), new TraceMasker(redactor), createGzip(), out)
  let failure: Error | undefined
  finished.catch((err: Error) => (failure ??= err))
  return {
    write: async chunk => {
      if (failure) throw failure
      if (!input.write(chunk))
        await Promise.race([new Promise(resolve => input.once('drain', resolve)), finished.then(() => undefined)])
      if (failure) throw failure
    },
    end: async () => {
      input.end()
      await finished
    },
    destroy: () => input.destroy(new Error('stopped')),
  }
}
