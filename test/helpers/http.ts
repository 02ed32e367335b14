// A local HTTP server for test pages, bound to 127.0.0.1 on a free port.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'

export type Handler = (req: IncomingMessage, res: ServerResponse) => void
export interface TestServer {
  url: string
  origin: string
  port: number
  server: Server
  route(path: string, h: Handler | string): void
}

/**
 * Routes map a path (without query) to a handler or a literal HTML body; a path ending in `*` is
 * a prefix. Unknown paths answer 404.
 */
export async function startServer(t: Test, routes: Record<string, Handler | string> = {}): Promise<TestServer> {
  const table = new Map<string, Handler>()
  const route = (path: string, h: Handler | string) => {
    table.set(
      path,
      typeof h === 'string'
        ? (_req, res) => {
            res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
            res.end(h)
          }
        : h,
    )
  }
  for (const [p, h] of Object.entries(routes)) route(p, h)
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    // Exact paths first, then a route ending in '*' (a prefix: an installed package's files).
    let h = table.get(path)
    if (!h) for (const [p, ph] of table) if (p.endsWith('*') && path.startsWith(p.slice(0, -1))) h = ph
    if (h) h(req, res)
    else {
      res.writeHead(404, { 'content-type': 'text/plain' })
      res.end('not found')
    }
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  t.teardown(
    () =>
      new Promise<void>(r => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  return { url: `http://127.0.0.1:${port}/`, origin: `http://127.0.0.1:${port}`, port, server, route }
}

/** Resolves when predicate() is true, polling every few ms; fails after timeoutMs. */
export async function waitFor<T>(
  predicate: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await predicate()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise(r => setTimeout(r, 10))
  }
}

/** The files under `root` as `<prefix>*` serves them (`prefix` stripped from the path), 404 when absent. */
export function staticFiles(root: string, prefix: string): Handler {
  return (req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!.slice(prefix.length))
    const type = path.endsWith('.js')
      ? 'text/javascript; charset=utf-8'
      : path.endsWith('.css')
        ? 'text/css; charset=utf-8'
        : path.endsWith('.svg')
          ? 'image/svg+xml'
          : 'application/octet-stream'
    let body: Buffer
    try {
      if (path.split('/').includes('..')) throw new Error('outside the root')
      body = readFileSync(join(root, path))
    } catch {
      res.writeHead(404)
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': type })
    res.end(body)
  }
}
