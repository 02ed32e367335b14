// Wiring only: the daemon is a list of named steps (DAEMON_STEPS), run in order at startup; each
// returns how to stop what it started, and shutdown runs those stops in reverse. Every part is built
// by its own module; this file decides the order. To add a part: write one step function that reads
// what earlier steps put on `Daemon`, sets its own field, returns its stop; add it to DAEMON_STEPS.
import { existsSync, readFileSync } from 'node:fs'
import { chmod, mkdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { ServeConfig } from './config.js'
import { createLogger, type Logger } from './log.js'
import { Redactor } from './redact.js'
import { DiskGuard } from './disk-guard.js'
import { Pipeline } from './pipeline.js'
import { configureBounds } from './bounds.js'
import { EventLog } from './store/event-log.js'
import { createApiApp, type ApiApp } from './api/app.js'
import { loadTokens, type LoadedTokens } from './api/auth.js'
import { resolveBrowserId } from './api/browser-id.js'
import type { ApiRouter } from './api/route-table.js'
import { startApiServer, type ApiServer } from './api/server.js'
import { registerUploadRoutes } from './api/routes/uploads.js'
import { registerExtensionRoutes } from './api/routes/extensions.js'
import { registerIngestRoutes } from './api/routes/ingest.js'
import { registerMetricsRoute, httpMetrics } from './api/routes/metrics.js'
import { registerViewerRoutes } from './api/routes/viewer.js'
import { createMetrics, type Metrics } from './metrics.js'
import { Monitor, capturePlan, chromiumUserFor, type CaptureSource } from './monitor/index.js'
import { CdpProxy, proxyAuthRequired } from './proxy/cdp-proxy.js'
import { ExtensionStore, type ExtensionRecord } from './uploads/extension-store.js'
import { ExtensionMetaStore } from './uploads/extension-meta.js'
import { prepareUploadRoots } from './uploads/upload-roots.js'
import { sweepSpool } from './uploads/multipart-spool.js'
import { UploadSlots } from './uploads/upload-slots.js'
import type { ZipLimits } from './uploads/zip-entries.js'
import { createConsoleCollector } from '../collectors/console.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createPageCollector } from '../collectors/page.js'
import { createInteractionCollector, type InteractionCollector } from '../collectors/interaction.js'
import { createScreenshotCollector } from '../collectors/screenshot.js'
import { startSystemCollectors, type SystemCollectors } from '../collectors/system.js'
import { startShipping, type Shipper } from './ship/index.js'

export interface DaemonOptions {
  logger?: Logger
  /** Where startup lines for the user go (the token file's path + curl line). Default: stderr. */
  announce?: (line: string) => void
  /**
   * Whether a just-generated token may be shown in clear (default: stderr is a terminal). A journal
   * or a log file must never receive it; the path to the 0600 file is always shown instead.
   */
  showNewToken?: boolean
  /** How often free disk space is checked (default 5 s; tests shorten it). */
  diskCheckIntervalMs?: number
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
  /** Undefined unless --nats-url is set. */
  shipper?: Shipper
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
      try {
        return (JSON.parse(readFileSync(url, 'utf8')) as { version?: string }).version ?? '0.0.0'
      } catch {
        /* next */
      }
    }
  }
  return '0.0.0'
}

/** Stops what a step started. Shutdown calls these in reverse step order. */
export type StopStep = () => Promise<void> | void

/** One named startup step: reads what earlier steps set on the Daemon, sets its own part. */
export interface DaemonStep {
  name: string
  start(d: Daemon): Promise<StopStep | void> | StopStep | void
}

/**
 * What the steps build. Each field is set by the step named in its comment; a step may read only
 * fields of steps before it in DAEMON_STEPS.
 */
export class Daemon {
  /** config */ browserId!: string
  /** config */ tokens!: LoadedTokens
  /** config: free space of the data dir; read-only (507 on writes) while the disk is full */ disk!: DiskGuard
  /** store */ log!: EventLog
  /** pipeline */ pipeline!: Pipeline
  /** pipeline */ metrics!: Metrics
  /** ship (undefined unless --nats-url) */ shipper?: Shipper
  /** monitor (undefined without a browser) */ monitor?: Monitor
  /** monitor: its interaction collector (binding actions for /metrics) */ interaction?: InteractionCollector
  /** system */ system!: SystemCollectors
  /** Route groups the api step mounts, in this order; steps before `api` add theirs here. */
  readonly routes: ((router: ApiRouter) => void)[] = []
  /** api */ api!: ApiApp
  /** api */ server!: ApiServer
  /** proxy (undefined with --proxy-listen off or without a browser) */ proxy?: CdpProxy

  constructor(
    readonly config: ServeConfig,
    readonly logger: Logger,
    readonly opts: DaemonOptions,
  ) {}
}

/** The data dir holds the token and the log: owner only (0700), also when it already existed. */
async function prepareDataDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  if (((await stat(dir)).mode & 0o077) !== 0) await chmod(dir, 0o700)
}

/** Data dir (and its free space, before anything writes), browser id and API tokens. */
async function resolveIdentity(d: Daemon): Promise<StopStep> {
  const { config } = d
  for (const w of config.warnings) d.logger.warn(w)
  await prepareDataDir(config.dataDir)
  const disk = (d.disk = await DiskGuard.start({
    dir: config.dataDir,
    reserveBytes: config.diskReserveBytes,
    checkIntervalMs: d.opts.diskCheckIntervalMs,
    logger: d.logger.child({ module: 'disk' }),
  }))
  d.browserId = await resolveBrowserId(config.dataDir, config.browserId)
  d.tokens = await loadTokens({ token: config.token, tokenFile: config.tokenFile, dataDir: config.dataDir })
  return () => disk.close()
}

async function openStore(d: Daemon): Promise<StopStep> {
  const log = await EventLog.open({
    path: join(d.config.dataDir, 'events'),
    logger: d.logger.child({ module: 'store' }),
    maxBytes: d.config.retentionBytes,
    maxAgeMs: d.config.retentionAgeMs,
  })
  d.log = log
  if (log.previousStopWasUnclean)
    d.logger.warn('previous run did not stop cleanly; a seq gap marks possibly lost events')
  return () => log.close()
}

/** One masking policy for events and logs (built-in lists plus --redact-headers / --redact-params). */
function redactorOf(config: ServeConfig): Redactor {
  return new Redactor({ headers: config.redactHeaders, params: config.redactParams })
}

function buildPipeline(d: Daemon): void {
  // Per-target byte bounds (URLs, header sets, request tables) read by the monitor and collectors.
  configureBounds({ ...d.config.bounds, maxEnvelopeBytes: d.config.maxEnvelopeBytes })
  d.pipeline = new Pipeline({
    log: d.log,
    logger: d.logger.child({ module: 'pipeline' }),
    categories: d.config.categories,
    maxEnvelopeBytes: d.config.maxEnvelopeBytes,
    shedding: d.config.shedding,
    redactor: redactorOf(d.config),
  })
  d.metrics = createMetrics()
}

/** Fleet shipping (off unless --nats-url): follows committed envelopes, never waits for NATS; stops before the log closes. */
async function startShipper(d: Daemon): Promise<StopStep | void> {
  const shipper = await startShipping(d.config.nats, {
    log: d.log,
    browserId: d.browserId,
    logger: d.logger.child({ module: 'ship' }),
  })
  if (!shipper) return
  d.shipper = shipper
  return () => shipper.stop()
}

/** The capture plan follows the enabled categories (PUT/PATCH of the telemetry config applies it live). */
function captureSource(d: Daemon): CaptureSource {
  const planOf = (categories: Iterable<string>) =>
    capturePlan(categories, { bodyMaxBytes: d.config.networkBodyMaxBytes })
  return {
    current: () => planOf(d.pipeline.enabledCategories()),
    onChange: l => d.pipeline.onCategoriesChanged(c => l(planOf(c))),
  }
}

/** Browser: launch or attach, with every CDP collector. Collectors are created once and survive reconnects. */
async function startMonitor(d: Daemon): Promise<StopStep | void> {
  const { config, pipeline, logger } = d
  if (!config.launch && !config.cdpUrl) return
  const collectorLogger = logger.child({ module: 'collectors' })
  d.interaction = createInteractionCollector({ logger: collectorLogger })
  const monitor = new Monitor({
    cdpUrl: config.launch ? undefined : config.cdpUrl,
    // A root daemon never runs the browser as root: pages and CDP clients must not reach the data dir.
    launch: config.launch
      ? {
          chromiumPath: config.chromiumPath,
          extraArgs: config.chromiumArgs,
          user: await chromiumUserFor(config.chromiumUser),
        }
      : undefined,
    emit: pipeline.emit,
    capture: captureSource(d),
    collectors: [
      createConsoleCollector(),
      createNetworkCollector({
        bodyMaxBytes: config.networkBodyMaxBytes,
        isEnabled: () => pipeline.isEnabled('network'),
      }),
      createPageCollector(),
      d.interaction,
      createScreenshotCollector({
        intervalMs: config.screenshotIntervalMs,
        maxBytes: config.maxEnvelopeBytes,
        isEnabled: () => pipeline.isEnabled('screenshot'),
        onEnabledChange: l => pipeline.onCategoriesChanged(c => l(c.has('screenshot'))),
        logger: collectorLogger,
      }),
    ],
    logger: logger.child({ module: 'monitor' }),
    reconnect: {
      attempts: config.reconnectAttempts,
      initialBackoffMs: config.reconnectInitialBackoffMs,
      maxBackoffMs: config.reconnectMaxBackoffMs,
    },
    maxTargets: config.maxTargets,
  })
  d.monitor = monitor
  const stop = () => monitor.stop()
  try {
    await monitor.start()
  } catch (err) {
    await stop() // the step failed: its own stop is not registered yet
    throw err
  }
  // Demo: a new tab with the page, navigated once attached so the collectors see all of it.
  if (config.open) {
    await monitor.openPage(config.open).then(
      () => logger.info({ url: config.open }, 'opened demo page'),
      (err: Error) => logger.warn({ url: config.open, err: err.message }, 'could not open the demo page'),
    )
  }
  return stop
}

/** System events: OOM kills, watched units, the launched browser's crashes, our own unclean stop. */
async function startSystem(d: Daemon): Promise<StopStep> {
  const system = await startSystemCollectors({
    emit: d.pipeline.emit,
    logger: d.logger.child({ module: 'system' }),
    kmsgPath: d.config.kmsgPath,
    watchUnits: d.config.watchUnits,
    log: d.log,
    monitor: d.monitor,
  })
  d.system = system
  return () => system.stop()
}

/**
 * Uploads and extensions live under the data dir. Interrupted merges are settled first (rolled back
 * or forward through their journals) and leftovers of interrupted uploads swept, before the API opens.
 */
async function prepareUploads(d: Daemon): Promise<StopStep> {
  const { config } = d
  const spoolDir = join(config.dataDir, 'tmp')
  await mkdir(spoolDir, { recursive: true })
  await sweepSpool(spoolDir, undefined, r => {
    if (r.rolledBack + r.settled + r.failed.length > 0)
      d.logger.warn(
        { rolledBack: r.rolledBack, settled: r.settled, failed: r.failed },
        'settled upload merges interrupted by a crash',
      )
  })
  const uploadRoots = await prepareUploadRoots(config.uploadRoots, config.dataDir)
  const zipLimits: ZipLimits = {
    maxEntries: config.zipMaxEntries,
    maxTotalBytes: config.zipMaxTotalBytes,
    maxRatio: config.zipMaxRatio,
  }
  // Extension metadata has its own database, so nothing done to the telemetry log can touch it.
  const meta = await ExtensionMetaStore.open(join(config.dataDir, 'extensions-meta'), into =>
    d.log.moveOutLegacySublevel<ExtensionRecord>('extensions', into),
  )
  let extensions: ExtensionStore
  try {
    extensions = await ExtensionStore.open({ dir: join(config.dataDir, 'extensions'), db: meta })
  } catch (err) {
    await meta.close()
    throw err
  }
  const slots = new UploadSlots(config.uploadMaxConcurrent)
  d.routes.push(
    r => registerUploadRoutes(r, { uploadRoots, spoolDir, uploadMaxBytes: config.uploadMaxBytes, zipLimits, slots }),
    r => registerExtensionRoutes(r, { store: extensions, uploadMaxBytes: config.uploadMaxBytes, zipLimits, slots }),
  )
  return () => meta.close()
}

async function startApi(d: Daemon): Promise<StopStep> {
  const { config, pipeline, monitor, system } = d
  const monitorState = (): unknown => ({
    ...(monitor ? monitor.health() : { state: 'disabled' }),
    kernel_log: system.kmsg(),
  })
  d.api = createApiApp({
    browserId: d.browserId,
    log: d.log,
    pipeline,
    tokens: d.tokens.tokens,
    logger: d.logger.child({ module: 'api' }),
    streamKeepaliveMs: config.streamKeepaliveMs,
    streamBufferEvents: config.streamBufferEvents,
    streamBufferBytes: config.streamBufferBytes,
    streamRingBytes: config.streamRingBytes,
    maxStreamClients: config.maxStreamClients,
    defaultCategories: config.categories,
    monitorState,
    shippingState: d.shipper ? () => d.shipper!.health() : undefined,
    version: packageVersion(),
    outerMiddleware: [httpMetrics(d.metrics)],
    drainLimits: { maxBytes: config.drainMaxBytes, maxMs: config.drainTimeoutMs },
    diskState: () => d.disk.status,
    routes: [
      ...d.routes,
      r => registerIngestRoutes(r, { pipeline, browserId: d.browserId }),
      r => registerMetricsRoute(r, { metrics: d.metrics }),
      r => registerViewerRoutes(r),
      ...(d.opts.routes ?? []),
    ],
  })
  const server = await startApiServer(d.api, config.listen)
  d.server = server
  return () => server.close()
}

/** CDP proxy: external automation clients reach the browser through it (cdp_connect/cdp_disconnect). */
async function startProxy(d: Daemon): Promise<StopStep | void> {
  const { config, monitor, tokens } = d
  if (!config.proxyListen || !monitor) return
  const proxy = new CdpProxy({
    listen: config.proxyListen,
    upstream: () => monitor.browserWsUrl,
    onUpstreamChanged: l => {
      monitor.events.on('upstream', l)
      return () => {
        monitor.events.off('upstream', l)
      }
    },
    emit: d.pipeline.emit,
    auth: proxyAuthRequired(config.proxyListen.host, config.proxyAuth)
      ? { verify: t => tokens.tokens.lookup(t) }
      : undefined,
    logger: d.logger.child({ module: 'proxy' }),
    maxConnections: config.proxyMaxConnections,
  })
  await proxy.start()
  d.proxy = proxy
  return () => proxy.close()
}

/** /metrics reads every part built so far; detached first at shutdown. */
function attachMetrics(d: Daemon): StopStep {
  const { monitor, proxy } = d
  return d.metrics.attach({
    pipeline: d.pipeline,
    log: d.log,
    monitor,
    sseClients: () => d.api.streams.stats.open,
    proxyConnections: proxy ? () => proxy.connectionCount : undefined,
    ship: d.shipper,
    refusedConnections: () => ({ sse: d.api.streams.stats.refused, cdp_proxy: proxy?.refusedConnections ?? 0 }),
    sseLagDisconnects: () => d.api.streams.stats.slowDisconnects,
    interactionBinding: (): Record<string, number> => {
      const s = d.interaction?.stats
      return s ? { paused: s.paused, resumed: s.resumed, terminated: s.terminated, invalid: s.invalid } : {}
    },
  })
}

function announceReady(d: Daemon): void {
  const { config, server, browserId } = d
  d.logger.info(
    { url: server.url, browserId, dataDir: config.dataDir, categories: config.categories },
    'browser-telemetry listening',
  )
  const generated = d.tokens.generated
  if (generated) {
    const announce =
      d.opts.announce ??
      ((line: string) => {
        process.stderr.write(line + '\n')
      })
    // Never logged. The token itself is shown once, when just created and a person is watching
    // (stderr is a terminal); a journal only ever gets the file's path.
    const show = generated.created && (d.opts.showNewToken ?? process.stderr.isTTY === true)
    announce(
      `API token ${generated.created ? 'generated and ' : ''}stored in ${generated.path} (mode 0600)${show ? `: ${generated.token}` : ''}`,
    )
    announce(
      `Try: curl -H "Authorization: Bearer $(cat ${generated.path})" '${server.url}/browsers/${browserId}/telemetry/events?limit=10'`,
    )
  }
}

/**
 * Startup order. Shutdown is the reverse: metrics, proxy, API (streams end), extension metadata, system, monitor, the
 * shipper (last acks, watermark saved), then the log (flushed and closed last, so every producer's
 * final events are stored).
 */
export const DAEMON_STEPS: readonly DaemonStep[] = [
  { name: 'config', start: resolveIdentity },
  { name: 'store', start: openStore },
  { name: 'pipeline', start: buildPipeline },
  { name: 'ship', start: startShipper },
  { name: 'monitor', start: startMonitor },
  { name: 'system', start: startSystem },
  { name: 'uploads', start: prepareUploads },
  { name: 'api', start: startApi },
  { name: 'proxy', start: startProxy },
  { name: 'metrics', start: attachMetrics },
  { name: 'ready', start: announceReady },
]

export async function startDaemon(config: ServeConfig, opts: DaemonOptions = {}): Promise<DaemonHandle> {
  const logger = opts.logger ?? createLogger(config.logLevel, redactorOf(config))
  const d = new Daemon(config, logger, opts)
  const stops: { name: string; stop: StopStep }[] = []
  const stopAll = async () => {
    for (const { name, stop } of stops.splice(0).reverse()) {
      try {
        await stop()
      } catch (err) {
        logger.error({ step: name, err: (err as Error).message }, 'shutdown step failed')
      }
    }
  }
  try {
    for (const step of DAEMON_STEPS) {
      const stop = await step.start(d)
      if (stop) stops.push({ name: step.name, stop })
    }
  } catch (err) {
    await stopAll()
    throw err
  }
  let closing: Promise<void> | undefined
  return {
    url: d.server.url,
    browserId: d.browserId,
    log: d.log,
    pipeline: d.pipeline,
    api: d.api,
    monitor: d.monitor,
    proxy: d.proxy,
    shipper: d.shipper,
    generatedToken: d.tokens.generated ? { token: d.tokens.generated.token, path: d.tokens.generated.path } : undefined,
    close: () => (closing ??= stopAll()),
  }
}
