// One idea, the relay of client connections: external CDP clients (Playwright connectOverCDP,
// Puppeteer connect, raw WebSocket) reach the current browser through it; each connection is
// reported as cdp_connect/cdp_disconnect and each command as cdp_command (command-log.ts). Frames
// are passed through as Buffers (text stays text, binary stays binary). Who may connect is
// admission.ts; /json/* is discovery-route.ts.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocket, WebSocketServer, type RawData } from 'ws'
import type { Emit } from '../pipeline/pipeline.js'
import { silentLogger, type Logger } from '../log.js'
import {
  authorize,
  refuseBrowserRequest,
  rejectUpgrade,
  requestUrl,
  sendError,
  type CdpProxyAuth,
  type HttpError,
} from './admission.js'
import { CommandLog } from './command-log.js'
import { answerTelemetryCommand, isTelemetryCommand } from './telemetry-domain.js'
import { parseTraceparent, type StepRegistry } from '../agent/step-registry.js'
import { answerDiscovery } from './discovery-route.js'
import { isFileUrl, type FileGuard } from './file-guard.js'
import { upstreamPathFor } from './discovery.js'
import { DEFAULT_SETTINGS } from '../defaults.js'

export { proxyAuthRequired, type CdpProxyAuth } from './admission.js'

export type CdpDisconnectReason = 'client_close' | 'upstream_changed' | 'upstream_error' | 'context_cancelled'

export interface CdpProxyOptions {
  listen: { host: string; port: number }
  /** The current browser-level WebSocket URL; undefined while no browser is available. */
  upstream: () => string | undefined
  /** Subscribes to "the upstream URL may have changed" (the monitor's 'upstream' event); returns the unsubscribe. */
  onUpstreamChanged?: (listener: () => void) => () => void
  emit: Emit
  /** Bearer auth (scope cdp); omit to accept every client. */
  auth?: CdpProxyAuth
  logger?: Logger
  /**
   * When the browser side of a session drops on its own, how long to wait for a new upstream before
   * calling it upstream_error rather than upstream_changed (a killed browser drops its sockets before
   * the monitor has relaunched it). The client is closed at once either way. Default 5 s.
   */
  upstreamLossGraceMs?: number
  /** Origins whose WebSocket/discovery requests are let through ('*' = any); default none (like Chromium). */
  allowOrigins?: readonly string[]
  /** Largest frame accepted from either side (default 256 MiB: screenshots and heap snapshots are big). */
  maxPayloadBytes?: number
  /** Client connections at most; beyond, the upgrade is answered 503 too_many_connections (default 32). */
  maxConnections?: number
  /** Store each command's parameters and result (JSON text cut to maxBytes, then redacted); off by default. */
  captureCommandParams?: { maxBytes: number }
  /** The agent's steps: BrowserTelemetry.* commands start and end them; commands carry the innermost. */
  steps?: StepRegistry
  /** Commands refused when the browser runs as the daemon's own user (file: URLs, data-dir paths). */
  fileGuard?: FileGuard
}

/** Above this many unsent bytes towards one side, the other side is paused until they drain. */
const HIGH_WATER_BYTES = 8 * 1024 * 1024
const SOURCE = { kind: 'local_process' } as const

type ConnState = 'dialing' | 'open' | 'lost' | 'ended'

export const DEFAULT_MAX_PROXY_CONNECTIONS = DEFAULT_SETTINGS.proxyMaxConnections

/** One client connection and its upstream twin. */
interface Relay {
  /** Carried by both events of the pair, so overlapping clients' connects and disconnects can be joined. */
  id: string
  client: WebSocket
  upstream: WebSocket
  /** The browser URL current when the client connected (to notice a browser restart). */
  browserUrl: string
  state: ConnState
  startedAt: number
  endedAt?: number
  messages: number
  /** The cdp_command record of this connection. */
  commands: CommandLog
  /** Client frames received while the upstream was still being dialled. */
  early: { data: RawData; binary: boolean }[] | undefined
  lostTimer?: NodeJS.Timeout
}

/** Whether /json/new would open a file: Chromium reads the unescaped query (as relayed, token removed) as the URL. */
function opensFile(url: URL): boolean {
  const relayed = new URL(url.href)
  relayed.searchParams.delete('token')
  const unescape = (q: string) => {
    try {
      return decodeURIComponent(q)
    } catch {
      return q
    }
  }
  return [url.search, relayed.search].some(q => isFileUrl(unescape(q.slice(1))))
}

function zeroMask(mask: Buffer): void {
  mask.fill(0)
}

export class CdpProxy {
  private readonly opts: CdpProxyOptions
  private readonly logger: Logger
  private readonly server: Server
  private readonly wss: WebSocketServer
  private readonly relays = new Set<Relay>()
  private unsubscribe: (() => void) | undefined
  private closing: Promise<void> | undefined
  private readonly graceMs: number
  private readonly maxPayload: number

  constructor(opts: CdpProxyOptions) {
    this.opts = opts
    this.logger = opts.logger ?? silentLogger
    this.graceMs = opts.upstreamLossGraceMs ?? 5000
    this.maxPayload = opts.maxPayloadBytes ?? 256 * 1024 * 1024
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: this.maxPayload,
      skipUTF8Validation: true,
    })
    this.server = createServer((req, res) => {
      this.handleHttp(req, res).catch(err => this.failHttp(res, err))
    })
    this.server.on('upgrade', (req, socket, head) => this.handleUpgrade(req, socket, head))
    this.server.on('clientError', (_err, socket) => {
      socket.destroy()
    })
  }

  /** Starts listening; resolves with the bound address (port 0 picks a free port). */
  async start(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(this.opts.listen.port, this.opts.listen.host, () => {
        this.server.off('error', reject)
        resolve()
      })
    })
    this.unsubscribe = this.opts.onUpstreamChanged?.(() => this.upstreamChanged())
    const addr = this.address()
    this.logger.info({ host: addr.address, port: addr.port, auth: this.opts.auth !== undefined }, 'CDP proxy listening')
    return addr
  }

  address(): AddressInfo {
    return this.server.address() as AddressInfo
  }

  /** Live client connections (for /healthz and metrics). */
  get connectionCount(): number {
    return this.relays.size
  }
  /** Upgrades refused by the connection cap (metrics). */
  refusedConnections = 0

  /** Stops accepting, closes every session (cdp_disconnect reason context_cancelled) and the listener. */
  close(message = 'proxy shutting down'): Promise<void> {
    this.closing ??= (async () => {
      this.unsubscribe?.()
      const sockets: WebSocket[] = []
      for (const r of [...this.relays]) {
        if (r.state === 'lost') {
          this.end(r, 'upstream_error')
          continue
        }
        this.end(r, 'context_cancelled')
        sockets.push(r.client, r.upstream)
        closeSocket(r.client, 1001, message)
        closeSocket(r.upstream, 1000, message)
      }
      this.server.closeAllConnections()
      await Promise.all([
        new Promise<void>(resolve => this.server.close(() => resolve())),
        ...sockets.map(s => closed(s, 2000)),
      ])
    })()
    return this.closing
  }

  // ---- WebSocket relay ----

  private handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy())
    if (this.closing) return rejectUpgrade(socket, 503, 'unavailable', 'the CDP proxy is shutting down')
    const max = this.opts.maxConnections ?? DEFAULT_MAX_PROXY_CONNECTIONS
    if (this.relays.size >= max) {
      this.refusedConnections++
      return rejectUpgrade(
        socket,
        503,
        'too_many_connections',
        `at most ${max} CDP proxy connections may be open at once; retry later`,
        { 'Retry-After': '5' },
      )
    }
    const url = requestUrl(req)
    if (!url) return rejectUpgrade(socket, 400, 'bad_request', 'malformed request target')
    const denied = this.admit(req, url)
    if (denied) return rejectUpgrade(socket, denied.status, denied.code, denied.message, denied.headers)
    const browserUrl = this.opts.upstream()
    if (!browserUrl)
      return rejectUpgrade(socket, 503, 'browser_unavailable', 'no browser is available right now; retry shortly')
    const target = upstreamPathFor(url.pathname, browserUrl)
    if (!target)
      return rejectUpgrade(
        socket,
        404,
        'not_found',
        `no CDP endpoint at ${url.pathname}: use /devtools/browser/<id> or /devtools/page/<id> (see /json/version)`,
      )
    // A session still waiting to learn whether its browser restarted has its answer now.
    this.settleLost(browserUrl)
    const pageTarget = /^\/devtools\/page\/([^/]+)$/.exec(url.pathname)?.[1]
    // The agent's span, when its client sent one (an invalid traceparent is ignored, as W3C says).
    const tp = req.headers.traceparent
    const traceparent =
      typeof tp === 'string' && parseTraceparent(tp.trim().toLowerCase()) ? tp.trim().toLowerCase() : undefined
    this.wss.handleUpgrade(req, socket, head, client => this.relay(client, target, browserUrl, pageTarget, traceparent))
  }

  private relay(
    client: WebSocket,
    target: string,
    browserUrl: string,
    pageTarget: string | undefined,
    traceparent: string | undefined,
  ): void {
    const upstream = new WebSocket(target, {
      perMessageDeflate: false,
      maxPayload: this.maxPayload,
      skipUTF8Validation: true,
      // A zero mask: the relayed command goes out as it came, not copied and XORed (the mask guards
      // shared HTTP intermediaries; this socket goes straight to the browser on this machine).
      generateMask: zeroMask,
      handshakeTimeout: 10_000,
    })
    const id = randomUUID()
    const steps = this.opts.steps
    const r: Relay = {
      id,
      client,
      upstream,
      browserUrl,
      state: 'dialing',
      startedAt: performance.now(),
      messages: 0,
      commands: new CommandLog({
        emit: this.opts.emit,
        connectionId: id,
        targetId: pageTarget,
        captureParams: this.opts.captureCommandParams,
        logger: this.logger,
        stampFor: steps ? () => steps.stampFor(id) : undefined,
      }),
      early: [],
    }
    this.relays.add(r)
    steps?.connectionOpened(id, traceparent)
    this.opts.emit({
      type: 'cdp_connect',
      data: { connection_id: r.id, ...(traceparent ? { traceparent } : {}) },
      source: SOURCE,
    })

    // Relayed first, recorded after: the command log's bookkeeping is not on the round trip.
    const guard = this.opts.fileGuard
    client.on('message', (data, isBinary) => {
      if (guard && !isBinary && Buffer.isBuffer(data)) {
        const refusal = guard.answer(data)
        if (refusal !== undefined) {
          if (client.readyState === WebSocket.OPEN) client.send(refusal)
          return
        }
      }
      // The daemon's own domain is answered here and never reaches the browser.
      if (!isBinary && Buffer.isBuffer(data) && isTelemetryCommand(data)) {
        const answer = answerTelemetryCommand(data, id, steps)
        if (answer !== undefined) {
          if (client.readyState === WebSocket.OPEN) client.send(answer)
          return
        }
      }
      if (r.early) {
        r.early.push({ data, binary: isBinary })
        // Bound what a client can pile up before the browser answers.
        if (r.early.length === 64) client.pause()
      } else this.forward(r, client, upstream, data, isBinary)
      if (Buffer.isBuffer(data)) r.commands.fromClient(data, isBinary)
    })
    client.on('error', err => this.logger.debug({ err }, 'CDP proxy client error'))
    client.on('close', () => {
      if (r.state !== 'dialing' && r.state !== 'open') return
      this.end(r, 'client_close')
      if (upstream.readyState === WebSocket.CONNECTING) upstream.terminate()
      else closeSocket(upstream, 1000, 'client closed')
    })

    upstream.on('open', () => {
      if (r.state !== 'dialing') return
      r.state = 'open'
      const early = r.early!
      r.early = undefined
      for (const m of early) this.forward(r, client, upstream, m.data, m.binary)
      client.resume()
    })
    upstream.on('message', (data, isBinary) => {
      this.forward(r, upstream, client, data, isBinary)
      if (Buffer.isBuffer(data)) r.commands.fromBrowser(data, isBinary)
    })
    upstream.on('error', err => {
      this.logger.warn(
        { err, target },
        r.state === 'dialing' ? 'CDP proxy could not dial the browser' : 'CDP proxy upstream error',
      )
    })
    upstream.on('close', (code, reason) => {
      if (r.state === 'dialing') {
        this.end(r, 'upstream_error')
        closeSocket(client, 1011, 'could not connect to the browser')
      } else if (r.state === 'open') {
        this.upstreamLost(r)
        closeSocket(
          client,
          clientCodeFor(code),
          reason.length > 0 && reason.length <= 123 ? reason.toString() : 'browser connection lost',
        )
      }
    })
  }

  private forward(r: Relay, from: WebSocket, to: WebSocket, data: RawData, binary: boolean): void {
    if (to.readyState !== WebSocket.OPEN || r.state !== 'open') return
    r.messages++
    if (to.bufferedAmount < HIGH_WATER_BYTES) {
      to.send(data, { binary })
    } else {
      from.pause()
      to.send(data, { binary }, () => from.resume())
    }
  }

  /** The browser side dropped on its own: a restart (upstream_changed) or a failure (upstream_error). */
  private upstreamLost(r: Relay): void {
    r.state = 'lost'
    r.endedAt = performance.now()
    const current = this.opts.upstream()
    if (current !== undefined && current !== r.browserUrl) {
      this.end(r, 'upstream_changed')
      return
    }
    r.lostTimer = setTimeout(() => this.end(r, 'upstream_error'), this.graceMs)
    r.lostTimer.unref()
  }

  /** Lost sessions whose browser has since been replaced by `current` are upstream_changed. */
  private settleLost(current: string | undefined): void {
    if (current === undefined) return
    for (const r of this.relays) {
      if (r.state === 'lost' && r.browserUrl !== current) this.end(r, 'upstream_changed')
    }
  }

  private upstreamChanged(): void {
    const current = this.opts.upstream()
    // "No browser right now" says nothing about live sessions: if their browser died, their own
    // sockets say so (and wait for the replacement in upstreamLost); if only the monitor's connection
    // dropped, they are fine.
    if (current === undefined) return
    this.settleLost(current)
    // Live sessions still talk to a browser that is no longer the current one: close them so their
    // clients reconnect to the new browser (a browser restarted mid-session tears the proxy connections down).
    for (const r of [...this.relays]) {
      if ((r.state === 'open' || r.state === 'dialing') && r.browserUrl !== current) {
        this.end(r, 'upstream_changed')
        closeSocket(r.client, 1012, 'browser restarted; reconnect')
        if (r.upstream.readyState === WebSocket.CONNECTING) r.upstream.terminate()
        else closeSocket(r.upstream, 1000, 'browser restarted')
      }
    }
  }

  /** Emits the one cdp_disconnect of a session. */
  private end(r: Relay, reason: CdpDisconnectReason): void {
    if (r.state === 'ended') return
    r.state = 'ended'
    if (r.lostTimer) clearTimeout(r.lostTimer)
    this.relays.delete(r)
    // Commands still waiting for their answer never get one: recorded before the disconnect.
    r.commands.end()
    this.opts.steps?.connectionClosed(r.id)
    const durationMs = Math.max(0, Math.round((r.endedAt ?? performance.now()) - r.startedAt))
    this.opts.emit({
      type: 'cdp_disconnect',
      data: { connection_id: r.id, duration_ms: durationMs, message_count: r.messages, reason, ...r.commands.counts() },
      source: SOURCE,
    })
    this.logger.debug({ connectionId: r.id, reason, messages: r.messages, durationMs }, 'CDP proxy session ended')
  }

  // ---- HTTP discovery ----

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req)
    if (!url) return sendError(res, 400, 'bad_request', 'malformed request target')
    if (url.pathname !== '/json' && !url.pathname.startsWith('/json/')) {
      return sendError(
        res,
        404,
        'not_found',
        `no such endpoint ${url.pathname}: the CDP proxy serves /json/version, /json/list and WebSocket upgrades`,
      )
    }
    const denied = this.admit(req, url)
    if (denied) return sendError(res, denied.status, denied.code, denied.message, denied.headers)
    const browserUrl = this.opts.upstream()
    if (!browserUrl)
      return sendError(res, 503, 'browser_unavailable', 'no browser is available right now; retry shortly')
    if (this.opts.fileGuard && url.pathname.startsWith('/json/new') && opensFile(url))
      return sendError(
        res,
        403,
        'file_url_refused',
        'file: URLs are refused: the browser runs as the daemon’s user, which can read its token and log',
      )
    await answerDiscovery(req, res, url, {
      browserUrl,
      listenHost: this.listenHost(),
      carryToken: this.opts.auth !== undefined,
      logger: this.logger,
    })
  }

  /** undefined when the request may go on; otherwise the refusal to answer. */
  private admit(req: IncomingMessage, url: URL): HttpError | undefined {
    return (
      refuseBrowserRequest(req, this.opts.allowOrigins ?? [], this.opts.auth !== undefined) ??
      authorize(req, url, this.opts.auth)
    )
  }

  private failHttp(res: ServerResponse, err: unknown): void {
    this.logger.error({ err }, 'CDP proxy request failed')
    if (!res.headersSent) sendError(res, 500, 'internal', 'internal error in the CDP proxy')
    else res.destroy()
  }

  private listenHost(): string {
    const { address, port } = this.address()
    const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address
    return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`
  }
}

/** Close codes a peer may send (RFC 6455 7.4: 1005/1006/1015 are never sent on the wire). */
function clientCodeFor(upstreamCode: number): number {
  const sendable =
    (upstreamCode >= 1000 && upstreamCode <= 1014 && ![1004, 1005, 1006].includes(upstreamCode)) ||
    (upstreamCode >= 3000 && upstreamCode <= 4999)
  return sendable ? upstreamCode : 1011
}

function closeSocket(ws: WebSocket, code: number, reason: string): void {
  if (ws.readyState === WebSocket.CLOSED) return
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.terminate()
    return
  }
  try {
    ws.close(code, reason)
  } catch {
    ws.terminate()
  }
}

/** Resolves once the socket is closed, terminating it after `ms` if the peer never answers the close. */
function closed(ws: WebSocket, ms: number): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve()
  return new Promise(resolve => {
    const t = setTimeout(() => ws.terminate(), ms)
    ws.once('close', () => {
      clearTimeout(t)
      resolve()
    })
  })
}
