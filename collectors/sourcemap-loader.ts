// Loading a script or a source map the way DevTools does: Network.loadNetworkResource for the
// target's frame (the page's cookies, cache and network apply; the page sees no request event),
// then the body read in 1 MiB steps through IO.read until the caller has enough. The whole load
// runs under one deadline; the stream is closed whatever happens.
import { withTimeout, type FetchOutcome, type ResourceLoader, type TargetSession } from '../src/collector-kit.js'

const READ_BYTES = 1024 * 1024

export function browserLoader(session: TargetSession): ResourceLoader {
  return {
    async fetch(url, onChunk, timeoutMs): Promise<FetchOutcome> {
      const deadline = Date.now() + timeoutMs
      let handle: string | undefined
      try {
        // Frame targets name their frame; workers must not.
        const frameId =
          session.targetType === 'page' || session.targetType === 'iframe' ? session.context().frame_id : undefined
        const { resource } = await withTimeout(
          session.send('Network.loadNetworkResource', {
            ...(frameId ? { frameId } : {}),
            url,
            options: { disableCache: false, includeCredentials: true },
          }),
          timeoutMs,
        )
        if (!resource.success) {
          const status = resource.httpStatusCode
          const message = `${resource.netErrorName ?? 'failed'}${status !== undefined ? ` (HTTP ${status})` : ''}`
          return { ok: false, reason: status === 404 || status === 410 ? 'not_found' : 'fetch_failed', message }
        }
        handle = resource.stream
        if (handle) {
          const decoder = new TextDecoder()
          for (;;) {
            const chunk = await withTimeout(
              session.send('IO.read', { handle, size: READ_BYTES }),
              deadline - Date.now(),
            )
            const text = chunk.base64Encoded
              ? decoder.decode(Buffer.from(chunk.data, 'base64'), { stream: !chunk.eof })
              : chunk.data
            if (text !== '' && !onChunk(text)) break
            if (chunk.eof) break
          }
        }
        return { ok: true, status: resource.httpStatusCode ?? 200, headers: resource.headers ?? {} }
      } catch (err) {
        // A closed tab says nothing about the URL: the source maps ask again with the next error.
        if (session.signal.aborted)
          return { ok: false, reason: 'fetch_failed', message: 'the target went away', gone: true }
        if ((err as Error).name === 'TimeoutError')
          return { ok: false, reason: 'timeout', message: `not loaded within ${timeoutMs} ms` }
        return { ok: false, reason: 'fetch_failed', message: (err as Error).message }
      } finally {
        if (handle) void session.sendMayFail('IO.close', { handle })
      }
    },
  }
}
