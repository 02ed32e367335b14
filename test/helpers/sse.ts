// SSE test helpers.
import { EventEmitter } from 'node:events'
import { createParser } from 'eventsource-parser'

/** Undoes HTTP/1.1 chunked encoding of a (possibly truncated) body. */
export function dechunk(body: string): string {
  let out = ''
  let pos = 0
  const buf = Buffer.from(body, 'utf8')
  while (pos < buf.length) {
    const eol = buf.indexOf('\r\n', pos)
    if (eol < 0) break
    const size = parseInt(buf.toString('latin1', pos, eol), 16)
    if (!Number.isFinite(size) || size === 0) break
    const start = eol + 2
    out += buf.toString('utf8', start, Math.min(start + size, buf.length))
    pos = start + size + 2
  }
  return out
}

/**
 * Stands in for a ServerResponse given to TelemetryStreams: records each write (one write = one
 * syscall's worth). It always drains unless paused: then every write reports backpressure until
 * `drain()` (emits 'drain', still paused: the next write pushes back again) or `resume()`.
 */
export class RecordingResponse extends EventEmitter {
  writes: string[] = []
  writableEnded = false
  destroyed = false
  closed = false
  paused = false
  socket = { setNoDelay: () => undefined }
  writeHead() {
    return this
  }
  flushHeaders() {
    /* nothing buffered */
  }
  cork() {
    /* writes are recorded one by one */
  }
  uncork() {
    /* idem */
  }
  write(chunk: Buffer | string) {
    this.writes.push(chunk.toString())
    return !this.paused
  }
  drain() {
    this.emit('drain')
  }
  resume() {
    this.paused = false
    this.emit('drain')
  }
  end(chunk?: Buffer | string) {
    if (chunk !== undefined) this.writes.push(chunk.toString())
    this.writableEnded = true
    this.closed = true
    this.emit('close')
    return this
  }
  destroy() {
    this.closed = true
  }
}

/**
 * Reads an SSE response (eventsource-parser) until a frame with id >= `lastSeq` arrived or the
 * stream ended, then aborts it; returns each frame's id and data.
 */
export async function readSseUntil(
  res: Response,
  ctl: AbortController,
  lastSeq: number,
): Promise<{ seq: number; json: string }[]> {
  const out: { seq: number; json: string }[] = []
  let done = false
  const parser = createParser({
    onEvent: e => {
      if (done || e.id === undefined) return
      out.push({ seq: Number(e.id), json: e.data })
      if (Number(e.id) >= lastSeq) done = true
    },
  })
  const decoder = new TextDecoder()
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }))
      if (done) break
    }
  } finally {
    ctl.abort()
  }
  return out
}
