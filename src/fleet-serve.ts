// `browser-telemetry fleet serve`: wiring only. The fleet stream as a source (src/ship) behind the
// daemon's telemetry read and stream routes (src/api), on its own port. Stateless: everything it
// answers comes from the stream at the time of the request, so several can run side by side.
import { createFleetApiApp, type FleetApiApp } from './api/fleet-app.js'
import { loadTokens } from './api/auth.js'
import { startApiServer } from './api/server.js'
import { helpText, type CommandSpec } from './cli/args.js'
import { ConfigError, FLEET_SERVE_OPTIONS, envName, parseFleetServeConfig, type FleetServeConfig } from './config.js'
import { createLogger, type Logger } from './log.js'
import { FleetSource } from './ship/fleet-source.js'

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

const SPEC: CommandSpec = {
  name: 'fleet serve',
  summary:
    "Serve any VM's telemetry from the fleet stream with the daemon's read API (events pages, SSE). Each flag is also read from the env var shown in brackets.",
  connection: false,
  options: Object.fromEntries(Object.entries(FLEET_SERVE_OPTIONS).map(([f, o]) => [f, { ...o, env: envName(f) }])),
  notes: [
    'Examples:',
    '  browser-telemetry fleet serve --nats-url nats://nats:4222 --listen 0.0.0.0:10223 --token-file /etc/bt/tokens',
    `  curl -H "Authorization: Bearer $TOKEN" 'http://127.0.0.1:10223/browsers/vm-42/telemetry/events?since=1h&limit=100'`,
  ],
}

/** Runs until SIGINT/SIGTERM; the exit code. */
export async function runFleetServe(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(helpText(SPEC))
    return 0
  }
  let handle: FleetServe
  try {
    handle = await startFleetServe(parseFleetServeConfig(argv, process.env))
  } catch (err) {
    process.stderr.write(
      `browser-telemetry fleet serve: ${err instanceof ConfigError ? '' : 'cannot start: '}${(err as Error).message}\n`,
    )
    return 1
  }
  process.stderr.write(`browser-telemetry fleet serve: listening on ${handle.url}\n`)
  return new Promise<number>(resolve => {
    const stop = () => {
      setTimeout(() => resolve(1), 5000).unref()
      handle.close().then(
        () => resolve(0),
        () => resolve(1),
      )
    }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
}
