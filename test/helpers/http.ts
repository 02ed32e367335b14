// A local HTTP server for test pages, bound to 127.0.0.1 on a free port.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http'
import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { extname, resolve } from 'node:path'
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
 * Routes map a path (without query) to a handler or a literal HTML body; a route ending in `/*`
 * takes every path under it (the longest such prefix wins). Unknown paths answer 404.
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
    const h = table.get(path) ?? underPrefix(table, path)
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

function underPrefix(table: Map<string, Handler>, path: string): Handler | undefined {
  for (let at = path.lastIndexOf('/'); at >= 0; at = path.lastIndexOf('/', at - 1)) {
    const h = table.get(`${path.slice(0, at)}/*`)
    if (h || at === 0) return h
  }
  return undefined
}

/** The content types of an installed web app's files (scripts and styles as UTF-8). */
export const STATIC_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
}

/** Files under `root` for a `<prefix>/*` route, with their content type (a path leaving root answers 404). */
export function serveFiles(root: string, prefix: string, types: Record<string, string>): Handler {
  return (req, res) => {
    const rel = decodeURIComponent((req.url ?? '/').split('?')[0]!.slice(prefix.length))
    const file = resolve(root, `.${rel}`)
    if (!file.startsWith(`${resolve(root)}/`)) return notFound(res)
    readFile(file).then(
      body => {
        res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' })
        res.end(body)
      },
      () => notFound(res),
    )
  }
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/plain' })
  res.end('not found')
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
