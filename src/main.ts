// Wiring only: config -> logger -> event log -> pipeline -> (monitor, collectors, proxy) -> API server.
// Every part is built by its own module; this file decides the order and the shutdown order.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { ServeConfig } from './config.js'
import { createLogger, type Logger } from './log.js'
import { Pipeline } from './pipeline.js'
import { EventLog } from './store/event-log.js'
import { createApiApp, type ApiApp } from './api/app.js'
import { loadTokens } from './api/auth.js'
import { resolveBrowserId } from './api/browser-id.js'
import type { ApiRouter } from './api/route-table.js'
import { startApiServer } from './api/server.js'

export interface DaemonOptions {
  logger?: Logger
  /** Where startup lines for the user go (the generated token + curl line). Default: stderr. */
  announce?: (line: string) => void
  /** Extra route groups (tests, or parts not yet wired below). */
  routes?: ((router: ApiRouter) => void)[]
}

export interface DaemonHandle {
  /** e.g. http://127.0.0.1:10222 */
  url: string
  browserId: string
  log: EventLog
  pipeline: Pipeline
  api: ApiApp
  /** Set when no token was configured: the generated (or reused) token and its file. */
  generatedToken?: { token: string; path: string }
  /** Graceful stop: stop accepting, end streams, flush and close the log. Idempotent. */
  close(): Promise<void>
}

export function packageVersion(): string {
  // src/main.ts and dist/src/main.js sit at different depths below package.json.
  for (const rel of ['../package.json', '../../package.json']) {
    const url = new URL(rel, import.meta.url)
    if (existsSync(url)) {
      try { return (JSON.parse(readFileSync(url, 'utf8')) as { version?: string }).version ?? '0.0.0' } catch { /* next */ }
    }
  }
  return '0.0.0'
}

export async function startDaemon(config: ServeConfig, opts: DaemonOptions = {}): Promise<DaemonHandle> {
  const logger = opts.logger ?? createLogger(config.logLevel)
  const announce = opts.announce ?? ((line: string) => { process.stderr.write(line + '\n') })
  await mkdir(config.dataDir, { recursive: true })
  const browserId = await resolveBrowserId(config.dataDir, config.browserId)
  const { tokens, generated } = await loadTokens({ token: config.token, tokenFile: config.tokenFile, dataDir: config.dataDir })

  const log = await EventLog.open({
    path: join(config.dataDir, 'events'),
    logger: logger.child({ module: 'store' }),
    maxBytes: config.retentionBytes,
    maxAgeMs: config.retentionAgeMs,
  })
  const cleanups: (() => Promise<void> | void)[] = [() => log.close()]
  const closeAll = async () => {
    for (const c of cleanups.splice(0).reverse()) {
      try { await c() } catch (err) { logger.error({ err: (err as Error).message }, 'shutdown step failed') }
    }
  }
  try {
    if (log.previousStopWasUnclean) logger.warn('previous run did not stop cleanly; a seq gap marks possibly lost events')
    const pipeline = new Pipeline({
      log,
      logger: logger.child({ module: 'pipeline' }),
      categories: config.categories,
      maxEnvelopeBytes: config.maxEnvelopeBytes,
      redactHeaders: config.redactHeaders,
    })

    // --- WIRE (lead): system collectors (OOM kills from config.kmsgPath, service_crashed for
    //     config.watchUnits) start here with pipeline.emit; push their stop() onto `cleanups`.

    // --- WIRE (lead): browser monitor. For now the daemon runs with --no-browser semantics.
    //     When config.launch or config.cdpUrl: launch/attach, start the reconnect machine and the
    //     collectors with pipeline.emit, push its close() onto `cleanups`, and pass its state
    //     getter as `monitorState` below.
    const monitorState = (): unknown => ({ state: 'disabled', reason: 'no browser wired yet' })

    const api = createApiApp({
      browserId,
      log,
      pipeline,
      tokens,
      logger: logger.child({ module: 'api' }),
      streamKeepaliveMs: config.streamKeepaliveMs,
      streamBufferEvents: config.streamBufferEvents,
      defaultCategories: config.categories,
      monitorState,
      version: packageVersion(),
      routes: [
        // --- WIRE (lead): (r) => registerUploadRoutes(r, {...}), (r) => registerExtensionRoutes(r, {...}),
        //     (r) => registerIngestRoutes(r, {...})
        ...(opts.routes ?? []),
      ],
    })
    const server = await startApiServer(api, config.listen)
    // The API stops first (no new requests, streams ended), then the producers, then the log (last).
    cleanups.push(() => server.close())

    // --- WIRE (lead): CDP proxy on config.proxyListen (emits cdp_connect/cdp_disconnect); push its close().

    logger.info({ url: server.url, browserId, dataDir: config.dataDir, categories: config.categories }, 'browser-telemetry listening')
    if (generated) {
      // Printed for the user, never logged: this is the one place a token is shown.
      announce(`API token (${generated.created ? 'generated and ' : ''}stored in ${generated.path}, mode 0600): ${generated.token}`)
      announce(`Try: curl -H 'Authorization: Bearer ${generated.token}' '${server.url}/browsers/${browserId}/telemetry/events?limit=10'`)
    }
    let closing: Promise<void> | undefined
    return {
      url: server.url,
      browserId,
      log,
      pipeline,
      api,
      generatedToken: generated ? { token: generated.token, path: generated.path } : undefined,
      close: () => (closing ??= closeAll()),
    }
  } catch (err) {
    await closeAll()
    throw err
  }
}
