// A single-use redirect on 127.0.0.1, so `open --launch` can hand xdg-open a URL without the token:
// a process's argv is readable by every user (/proc/<pid>/cmdline), this URL's random path is
// worthless without the redirect, and the redirect answers only a client of our own uid (the peer
// socket's owner in /proc/net/tcp), once; the token travels only in its Location header.
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface RedirectOnce {
  /** The URL to open: http://127.0.0.1:<port>/<random>. */
  url: string
  /** Resolves once the redirect was answered. */
  followed: Promise<void>
  close(): Promise<void>
}

/** 127.0.0.1:port as /proc/net/tcp spells it (address little-endian, port big-endian, hex). */
function procTcpAddress(port: number): string {
  return `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`
}

/** The uid owning the client end of a loopback connection to this server, from /proc/net/tcp. */
export async function peerUid(socket: Socket, procNetTcp = '/proc/net/tcp'): Promise<number | undefined> {
  if (socket.remoteAddress !== '127.0.0.1' || socket.remotePort === undefined) return undefined
  const local = procTcpAddress(socket.remotePort)
  const remote = procTcpAddress(socket.localPort!)
  const table = await readFile(procNetTcp, 'utf8').catch(() => '')
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    if (f[1] === local && f[2] === remote) return Number(f[7])
  }
  return undefined
}

function refuse(res: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ code, message })
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    })
    .end(body)
}

/** Serves one 303 to `location` at a random path; every other request is refused. */
export async function serveRedirectOnce(location: string, opts: { uid?: number } = {}): Promise<RedirectOnce> {
  const uid = opts.uid ?? process.getuid?.()
  const path = `/${randomBytes(32).toString('base64url')}`
  let used = false
  let followed!: () => void
  const followedP = new Promise<void>(r => (followed = r))
  const server = createServer((req, res) => {
    void (async () => {
      if ((req.url ?? '') !== path) return refuse(res, 404, 'not_found', 'no such link')
      if (req.method !== 'GET') return refuse(res, 405, 'method_not_allowed', 'GET only')
      if (used) return refuse(res, 410, 'link_used', 'this link was used already')
      // Another local user who read the path from xdg-open's argv must not get the token.
      const owner = uid === undefined ? undefined : await peerUid(req.socket)
      if (uid !== undefined && owner !== uid)
        return refuse(res, 403, 'forbidden', 'this link answers only the user who made it')
      if (used) return refuse(res, 410, 'link_used', 'this link was used already')
      used = true
      res.writeHead(303, { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).end()
      res.once('finish', followed)
    })()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}${path}`,
    followed: followedP,
    close: () =>
      new Promise<void>(r => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}
