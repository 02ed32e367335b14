// A multipart/form-data body streamed from disk (a 1 GiB zip is never held in memory), with the
// exact Content-Length known up front and a byte counter for the progress line.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { randomBytes } from 'node:crypto'
import { CliError } from './io.js'

export type Part =
  { name: string; value: string } | { name: string; file: string; filename?: string; contentType?: string }

export interface MultipartBody {
  contentType: string
  length: number
  stream: ReadableStream<Uint8Array>
}

const quote = (s: string) => s.replace(/["\r\n\\]/g, c => encodeURIComponent(c))

export async function multipartBody(
  parts: Part[],
  onBytes?: (sent: number, total: number) => void,
): Promise<MultipartBody> {
  const boundary = `----browser-telemetry-${randomBytes(12).toString('hex')}`
  const chunks: ({ bytes: Buffer } | { file: string; size: number })[] = []
  for (const p of parts) {
    if ('value' in p) {
      chunks.push({
        bytes: Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quote(p.name)}"\r\n\r\n${p.value}\r\n`,
        ),
      })
    } else {
      let size: number
      try {
        const st = await stat(p.file)
        if (!st.isFile()) throw new CliError(`${p.file} is not a regular file`)
        size = st.size
      } catch (err) {
        if (err instanceof CliError) throw err
        throw new CliError(`cannot read ${p.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
      }
      const filename = p.filename ?? basename(p.file)
      chunks.push({
        bytes: Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quote(p.name)}"; filename="${quote(filename)}"\r\nContent-Type: ` +
            `${p.contentType ?? 'application/octet-stream'}\r\n\r\n`,
        ),
      })
      chunks.push({ file: p.file, size })
      chunks.push({ bytes: Buffer.from('\r\n') })
    }
  }
  chunks.push({ bytes: Buffer.from(`--${boundary}--\r\n`) })
  const length = chunks.reduce((n, c) => n + ('bytes' in c ? c.bytes.length : c.size), 0)
  let sent = 0
  async function* generate(): AsyncGenerator<Uint8Array> {
    for (const c of chunks) {
      if ('bytes' in c) {
        sent += c.bytes.length
        onBytes?.(sent, length)
        yield c.bytes
        continue
      }
      for await (const piece of createReadStream(c.file, { highWaterMark: 256 * 1024 })) {
        sent += (piece as Buffer).length
        onBytes?.(sent, length)
        yield piece as Buffer
      }
    }
  }
  const it = generate()
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await it.next()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel() {
      await it.return(undefined)
    },
  })
  return { contentType: `multipart/form-data; boundary=${boundary}`, length, stream }
}
