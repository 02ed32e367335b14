// `fleet serve` wiring (its command lives in cli.ts, next to `serve`). The fleet stream as a source
// (source.ts) behind the daemon's telemetry read and stream routes (src/api, through app.ts), on its
// own port. Stateless: everything it answers comes from the stream at the time of the request, so
// several can run side by side.
import { createFleetApiApp, type FleetApiApp } from './app.js'
import { loadTokens } from '../identity/tokens.js'
import { startApiServer } from '../api/server.js'
import type { FleetServeConfig } from '../config/config.js'
import { createLogger, type Logger } from '../log.js'
import { FleetSource } from './source.js'

export interface FleetServe {
  url: string
  app: FleetApiApp
  source: FleetSource
  close(): Promise<void>
}

export interface FleetServeExtras {
  logger?: Logger
  version?: string
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export async function startFleetServe(config: FleetServeConfig, extras: FleetServeExtras = {}): Promise<FleetServe> {
  const logger = extras.logger ?? createLogger(config.logLevel)
  // fleet serve has no data dir: a token is required (parseFleetServeConfig checks), never generated.
  const { tokens } = await loadTokens({ token: config.token, tokenFile: config.tokenFile, dataDir: '' })
  const source = new FleetSource({
    nats: config.nats,
    stream: config.stream,
    subjectPrefix: config.subjectPrefix,
    timeoutMs: config.requestTimeoutMs,
    logger,
  })
  source.start()
  const app = createFleetApiApp({
    sources: source,
    tokens,
    logger,
    streams: { maxClients: config.maxStreamClients },
    version: extras.version,
    now: extras.now,
  })
  let server
  try {
    server = await startApiServer(app, config.listen)
  } catch (err) {
    await source.stop()
    throw err
  }
  const listening = server
  logger.info({ url: listening.url, stream: config.stream }, 'fleet serve listening')
  return {
    url: listening.url,
    app,
    source,
    async close() {
      await listening.close(2000)
      await source.stop()
    },
  }
}
