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
import { registerUploadRoutes } from './api/routes/uploads.js'
import { registerExtensionRoutes } from './api/routes/extensions.js'
import { registerIngestRoutes } from './api/routes/ingest.js'
import { registerMetricsRoute, httpMetrics } from './api/routes/metrics.js'
import { createMetrics } from './metrics.js'
import { Monitor } from './monitor/index.js'
import { CdpProxy, proxyAuthRequired } from './proxy/cdp-proxy.js'
import { ExtensionStore, type ExtensionRecord } from './uploads/extension-store.js'
import { prepareUploadRoots } from './uploads/upload-roots.js'
import { sweepSpool } from './uploads/multipart-spool.js'
import type { ZipLimits } from './uploads/zip-entries.js'
import { createConsoleCollector } from '../collectors/console.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'
import { createInteractionCollector } from '../collectors/interaction.js'
import { createScreenshotCollector } from '../collectors/screenshot.js'
import { startSystemCollectors } from '../collectors/system.js'

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
  /** Undefined with --no-browser. */
  monitor?: Monitor
  /** Undefined with --proxy-listen off. */
  proxy?: CdpProxy
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
  for (const w of config.warnings) logger.warn(w)
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

    const metrics = createMetrics()

    // Browser: launch or attach, with every CDP collector. Collectors are created once and survive reconnects.
    let monitor: Monitor | undefined
    if (config.launch || config.cdpUrl) {
      const collectorLogger = logger.child({ module: 'collectors' })
      monitor = new Monitor({
        cdpUrl: config.launch ? undefined : config.cdpUrl,
        launch: config.launch ? { chromiumPath: config.chromiumPath, extraArgs: config.chromiumArgs } : undefined,
        emit: pipeline.emit,
        collectors: [
          createConsoleCollector(),
          createNetworkCollector({ bodyMaxBytes: config.networkBodyMaxBytes, isEnabled: () => pipeline.isEnabled('network') }),
          createPageCollector(),
          createInteractionCollector({ logger: collectorLogger }),
          createScreenshotCollector({
            intervalMs: config.screenshotIntervalMs,
            maxBytes: config.maxEnvelopeBytes,
            isEnabled: () => pipeline.isEnabled('screenshot'),
            onEnabledChange: (l) => pipeline.onCategoriesChanged((c) => l(c.has('screenshot'))),
            logger: collectorLogger,
          }),
        ],
        logger: logger.child({ module: 'monitor' }),
        reconnect: { attempts: config.reconnectAttempts, initialBackoffMs: config.reconnectInitialBackoffMs, maxBackoffMs: config.reconnectMaxBackoffMs },
      })
      const m = monitor
      cleanups.push(() => m.stop())
      await m.start()
      // Demo: a new tab with the page, navigated once attached so the collectors see all of it.
      if (config.open) {
        await m.openPage(config.open).then(
          () => logger.info({ url: config.open }, 'opened demo page'),
          (err: Error) => logger.warn({ url: config.open, err: err.message }, 'could not open the demo page'))
      }
    }

    // System events: OOM kills, watched units, the launched browser's crashes, our own unclean stop.
    const system = await startSystemCollectors({
      emit: pipeline.emit, logger: logger.child({ module: 'system' }), kmsgPath: config.kmsgPath,
      watchUnits: config.watchUnits, log, monitorEvents: monitor?.events,
    })
    cleanups.push(() => system.stop())
    const monitorState = (): unknown => ({ ...(monitor ? monitor.health() : { state: 'disabled' }), kernel_log: system.kmsg() })

    // Uploads and extensions live under the data dir; leftovers of an interrupted upload are swept first.
    const spoolDir = join(config.dataDir, 'tmp')
    await mkdir(spoolDir, { recursive: true })
    await sweepSpool(spoolDir)
    const uploadRoots = await prepareUploadRoots(config.uploadRoots, config.dataDir)
    const zipLimits: ZipLimits = { maxEntries: config.zipMaxEntries, maxTotalBytes: config.zipMaxTotalBytes, maxRatio: config.zipMaxRatio }
    const extensions = await ExtensionStore.open({ dir: join(config.dataDir, 'extensions'), db: log.sublevel<ExtensionRecord>('extensions') })

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
      outerMiddleware: [httpMetrics(metrics)],
      routes: [
        (r) => registerUploadRoutes(r, { uploadRoots, spoolDir, uploadMaxBytes: config.uploadMaxBytes, zipLimits }),
        (r) => registerExtensionRoutes(r, { store: extensions, uploadMaxBytes: config.uploadMaxBytes, zipLimits }),
        (r) => registerIngestRoutes(r, { pipeline, browserId }),
        (r) => registerMetricsRoute(r, { metrics }),
        ...(opts.routes ?? []),
      ],
    })
    const server = await startApiServer(api, config.listen)
    // Shutdown runs these in reverse: proxy, API (streams end), system, monitor, metrics, then the log.
    cleanups.push(() => server.close())

    // CDP proxy: external automation clients reach the browser through it (cdp_connect/cdp_disconnect).
    let proxy: CdpProxy | undefined
    if (config.proxyListen && monitor) {
      const m = monitor
      proxy = new CdpProxy({
        listen: config.proxyListen,
        upstream: () => m.browserWsUrl,
        onUpstreamChanged: (l) => { m.events.on('upstream', l); return () => { m.events.off('upstream', l) } },
        emit: pipeline.emit,
        auth: proxyAuthRequired(config.proxyListen.host, config.proxyAuth) ? { verify: (t) => tokens.lookup(t) } : undefined,
        logger: logger.child({ module: 'proxy' }),
      })
      const p = proxy
      await p.start()
      cleanups.push(() => p.close())
    }
    const probedMonitor = monitor
    const probedProxy = proxy
    cleanups.push(metrics.attach({
      pipeline, log,
      monitor: probedMonitor ? { state: () => probedMonitor.state, attachedTargets: () => probedMonitor.targetCounts() } : undefined,
      sseClients: () => api.streams.stats.open,
      proxyConnections: probedProxy ? () => probedProxy.connectionCount : undefined,
    }))

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
      monitor,
      proxy,
      generatedToken: generated ? { token: generated.token, path: generated.path } : undefined,
      close: () => (closing ??= closeAll()),
    }
  } catch (err) {
    await closeAll()
    throw err
  }
}
