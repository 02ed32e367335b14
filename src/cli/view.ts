// `browser-telemetry view session.zip`: the session viewer for a debug bundle, with no daemon. A
// small HTTP server on 127.0.0.1 serves the viewer's built page and the zip beside it
// (/viewer/bundle.zip); the page reads the zip itself (src/viewer/bundle-source.ts). Prints the URL,
// or opens it with --launch; runs until interrupted.
import { spawn } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { basename } from 'node:path'
import { VIEWER_SECURITY_HEADERS, loadViewerAssets, type ViewerAssets } from '../api/viewer-assets.js'
import { intOption } from './args.js'
import { defineCommand } from './command.js'
import { CliError, usageError } from './io.js'
import { findOnPath } from './open.js'
import { hostOfHeader, isLoopbackHost } from '../util/loopback.js'

/** The name the page asks for (`?bundle=`); the server answers only this one besides the assets. */
export const VIEW_BUNDLE_NAME = 'bundle.zip'

export interface ViewServer {
  server: Server
  url: string
  close(): Promise<void>
}

/** Serves the viewer assets and one zip on host:port (0 = any free port). */
export async function startViewServer(
  zipPath: string,
  opts: { port?: number; host?: string; assets?: ViewerAssets } = {},
): Promise<ViewServer> {
  const assets = opts.assets ?? loadViewerAssets()
  if (!assets) throw new CliError('the session viewer is not built (run npm run build)')
  // The file must be readable now; it is opened again for each request (the page may reload).
  const fh = await open(zipPath, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`cannot read ${zipPath}: ${err.code ?? err.message}`)
  })
  const st = await fh.stat()
  await fh.close()
  if (!st.isFile()) throw new CliError(`${zipPath} is not a file`)
  const listenHost = (opts.host ?? '127.0.0.1').toLowerCase()
  const server = createServer((req, res) => {
    // DNS rebinding: a page of another site, resolved to 127.0.0.1, would read the bundle as its own origin.
    const host = hostOfHeader(req.headers.host)
    if (host === undefined || !(isLoopbackHost(host) || host === listenHost)) {
      const body = JSON.stringify({
        code: 'host_refused',
        message: `Host ${JSON.stringify(req.headers.host ?? '')} is refused: the viewer answers only loopback names`,
      })
      res.writeHead(421, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
      return
    }
    const path = (req.url ?? '/').split('?')[0]!
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end()
      return
    }
    if (path === '/' || path === '/viewer') {
      res.writeHead(302, { location: `/viewer/?bundle=${VIEW_BUNDLE_NAME}` }).end()
      return
    }
    for (const [name, value] of Object.entries(VIEWER_SECURITY_HEADERS)) res.setHeader(name, value)
    res.setHeader('Cache-Control', 'no-store')
    if (path === `/viewer/${VIEW_BUNDLE_NAME}`) {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': st.size })
      if (req.method === 'HEAD') return void res.end()
      const file = createReadStream(zipPath)
      file.on('error', () => res.destroy())
      file.pipe(res)
      return
    }
    const name = path.startsWith('/viewer/') ? path.slice('/viewer/'.length) || 'index.html' : ''
    const asset = assets.get(name)
    if (!asset) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n')
      return
    }
    res.writeHead(200, { 'content-type': asset.contentType, 'content-length': asset.body.length })
    res.end(req.method === 'HEAD' ? undefined : asset.body)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  return {
    server,
    url: `http://127.0.0.1:${port}/viewer/?bundle=${VIEW_BUNDLE_NAME}`,
    close: () =>
      new Promise<void>(r => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

export const viewCommand = defineCommand(
  {
    name: 'view',
    summary:
      'Open a debug bundle (from `bundle`) in the session viewer, with no daemon: serves the viewer and the zip on 127.0.0.1 and prints the URL.',
    positionals: '<bundle.zip>',
    minPositionals: 1,
    maxPositionals: 1,
    connection: false,
    options: {
      port: { type: 'string', arg: 'N', help: 'Port on 127.0.0.1 (default: any free port)' },
      launch: { type: 'boolean', help: 'Also open the URL with xdg-open (when installed)' },
    },
    notes: [
      'The zip is read by the page itself; nothing leaves this machine. Stop with Ctrl-C.',
      'Without this command: serve dist/viewer with any static server (e.g. python3 -m http.server -d dist/viewer)',
      'and open the page, then pick or drop the zip.',
      'Example:',
      '  browser-telemetry view session.zip --launch',
    ],
  },
  async ({ values, positionals }, _client, io) => {
    const zip = positionals[0]!
    const port = intOption(values.port, 'port', 0)
    if (port !== undefined && port > 65535) throw usageError(`--port: expected 0-65535, got ${port}`)
    const view = await startViewServer(zip, { port })
    io.stdout.write(`${view.url}\n`)
    io.stderr.write(`browser-telemetry view: serving ${basename(zip)} on 127.0.0.1; Ctrl-C to stop\n`)
    if (values.launch === true) {
      const opener = findOnPath('xdg-open', io.env.PATH)
      if (!opener)
        io.stderr.write('browser-telemetry view: xdg-open is not installed; open the URL above in a browser\n')
      else {
        const child = spawn(opener, [view.url], { detached: true, stdio: 'ignore', env: io.env })
        child.once('error', () => {})
        child.unref()
      }
    }
    const stop = io.signal ?? signalOf()
    await new Promise<void>(r => (stop.aborted ? r() : stop.addEventListener('abort', () => r(), { once: true })))
    await view.close()
    return 0
  },
)

/** Ctrl-C / SIGTERM as an abort signal (the command runs until then). */
function signalOf(): AbortSignal {
  const ctl = new AbortController()
  const stop = () => ctl.abort()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  return ctl.signal
}
