// The HTTP server around the Koa app: listen on host:port, graceful close.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ApiApp } from './app.js'

export interface ApiServer {
  server: Server
  /** e.g. http://127.0.0.1:10222 */
  url: string
  /** Stop accepting, end SSE streams, let in-flight requests finish (up to graceMs), then drop what is left. */
  close(graceMs?: number): Promise<void>
}

export async function startApiServer(
  app: Pick<ApiApp, 'koa' | 'closeStreams'>,
  listen: { host: string; port: number },
): Promise<ApiServer> {
  const handle = app.koa.callback() // answers every error itself (the error middleware)
  const server = createServer({ noDelay: true, keepAliveTimeout: 5000 }, (req, res) => void handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const addr = server.address() as AddressInfo
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
  let closing: Promise<void> | undefined
  return {
    server,
    url: `http://${host}:${addr.port}`,
    close(graceMs = 5000) {
      closing ??= (async () => {
        const closed = new Promise<void>(r => server.close(() => r()))
        await app.closeStreams()
        server.closeIdleConnections()
        const timer = setTimeout(() => server.closeAllConnections(), graceMs)
        timer.unref()
        await closed
        clearTimeout(timer)
      })()
      return closing
    },
  }
}
