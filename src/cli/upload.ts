// Streams a multipart upload to the daemon with a progress line on a terminal.
import type { ApiClient } from './client.js'
import type { OutStream } from './io.js'
import { multipartBody, type Part } from './multipart.js'
import { formatBytes, progress } from './progress.js'

export async function upload(
  client: ApiClient,
  path: string,
  parts: Part[],
  opts: { stderr: OutStream; signal?: AbortSignal; accept?: string },
): Promise<Response> {
  const bar = progress(opts.stderr)
  const body = await multipartBody(parts, (sent, total) => {
    bar.update(
      `uploading ${formatBytes(sent)} / ${formatBytes(total)} (${Math.floor((sent / Math.max(total, 1)) * 100)}%)`,
    )
  })
  try {
    return await client.request('POST', path, {
      headers: {
        'content-type': body.contentType,
        'content-length': String(body.length),
        ...(opts.accept ? { accept: opts.accept } : {}),
      },
      body: body.stream as unknown as BodyInit,
      duplex: 'half',
      signal: opts.signal,
    })
  } finally {
    bar.done()
  }
}
