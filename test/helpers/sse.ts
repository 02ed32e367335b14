// SSE test helpers.

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
