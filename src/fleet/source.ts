// The fleet stream as `fleet serve`'s source of every browser's events: one NATS connection that
// keeps reconnecting (never given up, so a server outage only costs 503s while it lasts), and one
// FleetBrowserLog per request. No state of its own beyond the connection: several processes can
// serve the same stream side by side.
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { silentLogger, type Logger } from '../log.js'
import { connectionOptions, redactUrl, type NatsAuth } from '../nats/connect.js'
import { FleetLog, type FleetBrowserLog, type FleetLogStats } from './fleet-log.js'

export interface FleetSourceOptions {
  nats: NatsAuth
  stream: string
  subjectPrefix: string
  /** One JetStream API request's timeout. */
  timeoutMs: number
  logger?: Logger
}

export type FleetConnectionState = 'connecting' | 'connected' | 'reconnecting'

export interface FleetSourceHealth {
  nats: {
    state: FleetConnectionState
    server?: string
    stream: string
    subject_prefix: string
    last_error?: string
  }
}

export class FleetSource {
  private nc: NatsConnection | undefined
  private state: FleetConnectionState = 'connecting'
  private lastError: string | undefined
  private stopped = false
  private connecting: Promise<void> | undefined
  readonly log: FleetLog
  private readonly logger: Logger

  constructor(private readonly opts: FleetSourceOptions) {
    this.logger = opts.logger ?? silentLogger
    this.log = new FleetLog(() => (this.state === 'connected' ? this.nc : undefined), {
      stream: opts.stream,
      subjectPrefix: opts.subjectPrefix,
      timeoutMs: opts.timeoutMs,
    })
  }

  get stats(): FleetLogStats {
    return this.log.stats
  }

  /** Starts connecting in the background (resolves at once); reads answer 503 until connected. */
  start(): void {
    this.connecting ??= this.connectLoop()
  }

  /** Resolves once connected (tests and the CLI's startup line). */
  async connected(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (this.state !== 'connected' && Date.now() < deadline && !this.stopped)
      await new Promise(r => setTimeout(r, 20))
    return this.state === 'connected'
  }

  browser(id: string): FleetBrowserLog {
    return this.log.browser(id)
  }

  exists(id: string): Promise<boolean> {
    return this.log.browser(id).exists()
  }

  health(): FleetSourceHealth {
    const nc = this.nc
    return {
      nats: {
        state: this.state,
        ...(this.state === 'connected' && nc && !nc.isClosed() ? { server: redactUrl(nc.getServer()) } : {}),
        stream: this.opts.stream,
        subject_prefix: this.opts.subjectPrefix,
        ...(this.lastError && this.state !== 'connected' ? { last_error: this.lastError } : {}),
      },
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    const nc = this.nc
    this.nc = undefined
    await nc?.close().catch(() => undefined)
    await this.connecting
  }

  private async connectLoop(): Promise<void> {
    let waitMs = 250
    while (!this.stopped && !this.nc) {
      try {
        const nc = await connect(
          await connectionOptions(this.opts.nats, {
            name: 'browser-telemetry fleet serve',
            noAsyncTraces: true,
            timeout: this.opts.timeoutMs,
            reconnect: true,
            maxReconnectAttempts: -1,
            reconnectTimeWait: 250,
          }),
        )
        if (this.stopped) {
          await nc.close()
          return
        }
        this.nc = nc
        this.state = 'connected'
        this.logger.info({ server: redactUrl(nc.getServer()) }, 'fleet serve connected to NATS')
        void this.watch(nc)
      } catch (err) {
        this.lastError = `cannot connect to NATS (${this.opts.nats.servers.map(redactUrl).join(', ')}): ${(err as Error).message}`
        this.logger.warn({ err: this.lastError }, 'fleet serve: NATS connection failed; retrying')
        await new Promise(r => setTimeout(r, waitMs))
        waitMs = Math.min(waitMs * 2, 5000)
      }
    }
  }

  /** Connection status: reads answer 503 at once while it is away instead of waiting for timeouts. */
  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this.state = 'reconnecting'
        this.lastError = `disconnected from ${redactUrl(s.server)}`
        this.log.reset()
      } else if (s.type === 'reconnect') {
        this.state = 'connected'
        this.log.reset()
      } else if (s.type === 'error') this.lastError = String(s.error?.message ?? s.error)
    }
    // Closed (stop, or the client gave up): connect again unless stopping.
    if (!this.stopped && this.nc === nc) {
      this.nc = undefined
      this.state = 'reconnecting'
      this.log.reset()
      this.connecting = this.connectLoop()
    }
  }
}
