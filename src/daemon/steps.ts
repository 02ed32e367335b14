// The daemon's startup steps, one function per part. Each takes the typed record of the parts it
// reads (built by the steps before it) and returns its own part and how to stop what it started;
// main.ts runs them in order and the stops in reverse.
import { mkdir, chmod, stat } from 'node:fs/promises'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ServeConfig } from '../config/config.js'
import type { Logger } from '../log.js'
import { Redactor } from '../events/redact.js'
import { DiskGuard } from './disk-guard.js'
import { Pipeline } from '../pipeline/pipeline.js'
import { Bounds } from '../pipeline/bounds.js'
import { EventLog } from '../store/event-log.js'
import { FrameStore } from '../recording/frame-store.js'
import { RecordingSwitch } from '../recording/switch.js'
import { registerRecordingRoutes } from '../api/routes/recording.js'
import { createApiApp, type ApiApp } from '../api/app.js'
import { loadTokens, type LoadedTokens } from '../api/auth.js'
import { resolveBrowserId } from '../api/browser-id.js'
import type { ApiRouter } from '../api/route-table.js'
import { startApiServer, type ApiServer } from '../api/server.js'
import { registerUploadRoutes } from '../api/routes/uploads.js'
import { registerExtensionRoutes } from '../api/routes/extensions.js'
import { registerIngestRoutes } from '../api/routes/ingest.js'
import { registerMetricsRoute, httpMetrics } from '../api/routes/metrics.js'
import { registerViewerRoutes } from '../api/routes/viewer.js'
import { registerBundleRoutes } from '../api/routes/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../events/index.js'
import { createMetrics, type Metrics } from '../metrics/metrics.js'
import { Monitor, RECORDING, capturePlan, chromiumUserFor, type CaptureSource } from '../monitor/index.js'
import { CdpProxy, proxyAuthRequired } from '../proxy/cdp-proxy.js'
import { COMMAND_PARAMS_MAX_BYTES } from '../proxy/command-log.js'
import { ExtensionStore } from '../uploads/extension-store.js'
import { ExtensionMetaStore } from '../uploads/extension-meta.js'
import { moveLegacyExtensionMeta } from '../uploads/legacy-extension-meta.js'
import { prepareUploadRoots } from '../uploads/upload-roots.js'
import { sweepSpool } from '../uploads/multipart-spool.js'
import { UploadSlots } from '../uploads/upload-slots.js'
import type { ZipLimits } from '../uploads/zip-entries.js'
import { createConsoleCollector } from '../../collectors/console.js'
import { createNetworkCollector } from '../../collectors/network.js'
import { createPageCollector } from '../../collectors/page.js'
import { createInteractionCollector, type InteractionCollector } from '../../collectors/interaction.js'
import { createScreenshotCollector } from '../../collectors/screenshot.js'
import { createRecordingCollector, type RecordingCollector } from '../../collectors/recording.js'
import { startSystemCollectors, type SystemCollectors } from '../../collectors/system.js'
import { startSinks, type SinkList } from '../ship/sinks.js'

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

/** Stops what a step started. Shutdown calls these in reverse step order. */
export type StopStep = () => Promise<void> | void

/** What a step built, and how to stop it (nothing to stop: no stop). */
export interface Started<Part> {
  part: Part
  stop?: StopStep
}

/** What every step may read. */
export interface Base {
  readonly config: ServeConfig
  readonly logger: Logger
  readonly opts: DaemonOptions
}
/** config: browser id, API tokens, and the data dir's free space (read-only, 507 on writes, while the disk is full). */
export interface Identity {
  browserId: string
  tokens: LoadedTokens
  disk: DiskGuard
}
/** store: the event log, and the screen recording's frame store beside it. */
export interface Store {
  log: EventLog
  frames: FrameStore
}
/** pipeline: the one way into the log, metrics, the byte bounds of per-target state, the recording switch. */
export interface Core {
  pipeline: Pipeline
  metrics: Metrics
  bounds: Bounds
  recording: RecordingSwitch
}
/** sinks: every destination of committed events (NATS unless --nats-url is unset, OTLP unless --otlp-endpoint is) */
export interface Shipping {
  sinks: SinkList
}
/** monitor (undefined without a browser), with its interaction collector (binding actions for /metrics) and the screencast. */
export interface Browser {
  monitor: Monitor | undefined
  interaction: InteractionCollector | undefined
  screencast: RecordingCollector | undefined
}
/** system */
export interface System {
  system: SystemCollectors
}
/** uploads: the route groups the api step mounts first. */
export interface Uploads {
  uploadRoutes: ((router: ApiRouter) => void)[]
}
/** api */
export interface Api {
  api: ApiApp
  server: ApiServer
}
/** proxy (undefined with --proxy-listen off or without a browser) */
export interface Proxy {
  proxy: CdpProxy | undefined
}

export function packageVersion(): string {
  // src/daemon/steps.ts and dist/src/daemon/steps.js sit at different depths below package.json.
  for (const rel of ['../../package.json', '../../../package.json']) {
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

/** The data dir holds the token and the log: owner only (0700), also when it already existed. */
async function prepareDataDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  if (((await stat(dir)).mode & 0o077) !== 0) await chmod(dir, 0o700)
}

/** Data dir (and its free space, before anything writes), browser id and API tokens. */
export async function resolveIdentity(d: Base): Promise<Started<Identity>> {
  const { config } = d
  for (const w of config.warnings) d.logger.warn(w)
  await prepareDataDir(config.dataDir)
  const disk = await DiskGuard.start({
    dir: config.dataDir,
    reserveBytes: config.diskReserveBytes,
    checkIntervalMs: d.opts.diskCheckIntervalMs,
    logger: d.logger.child({ module: 'disk' }),
  })
  const browserId = await resolveBrowserId(config.dataDir, config.browserId)
  const tokens = await loadTokens({ token: config.token, tokenFile: config.tokenFile, dataDir: config.dataDir })
  return { part: { browserId, tokens, disk }, stop: () => disk.close() }
}

export async function openStore(d: Base): Promise<Started<Store>> {
  const path = join(d.config.dataDir, 'events')
  // Before the log opens: the move needs the log's LevelDB to itself.
  await moveLegacyExtensionMeta(path, join(d.config.dataDir, 'extensions-meta'))
  const log = await EventLog.open({
    path,
    logger: d.logger.child({ module: 'store' }),
    maxBytes: d.config.retentionBytes,
    maxAgeMs: d.config.retentionAgeMs,
  })
  if (log.previousStopWasUnclean)
    d.logger.warn('previous run did not stop cleanly; a seq gap marks possibly lost events')
  let frames: FrameStore
  try {
    frames = await FrameStore.open({
      dir: join(d.config.dataDir, 'recording'),
      maxBytes: d.config.recording.maxBytes,
      logger: d.logger.child({ module: 'recording' }),
    })
  } catch (err) {
    await log.close()
    throw err
  }
  const stop = async () => {
    await frames.close()
    await log.close()
  }
  return { part: { log, frames }, stop }
}

/** One masking policy for events and logs (built-in lists plus --redact-headers / --redact-params). */
export function redactorOf(config: ServeConfig): Redactor {
  return new Redactor({ headers: config.redactHeaders, params: config.redactParams })
}

export function buildPipeline(d: Base & Store): Started<Core> {
  const pipeline = new Pipeline({
    log: d.log,
    logger: d.logger.child({ module: 'pipeline' }),
    categories: d.config.categories,
    maxEnvelopeBytes: d.config.maxEnvelopeBytes,
    shedding: d.config.shedding,
    redactor: redactorOf(d.config),
  })
  // Per-target byte bounds (URLs, header sets, request tables) for the monitor and collectors.
  const bounds = new Bounds({ ...d.config.bounds, maxEnvelopeBytes: d.config.maxEnvelopeBytes })
  const recording = new RecordingSwitch(d.config.recording.enabled)
  recording.onChange(on => d.logger.info({ enabled: on }, on ? 'screen recording on' : 'screen recording off'))
  return { part: { pipeline, metrics: createMetrics(), bounds, recording } }
}

/**
 * Sinks: every destination of committed events, as one list. They follow the log and never wait
 * for their destination; they stop before the log closes.
 */
export async function startSinkList(d: Base & Identity & Store & Core): Promise<Started<Shipping>> {
  const sinks = await startSinks(
    { nats: d.config.nats, otlp: d.config.otlp },
    { log: d.log, browserId: d.browserId, version: packageVersion(), metrics: d.metrics.registry, logger: d.logger },
  )
  return { part: { sinks }, stop: () => sinks.stop() }
}

/**
 * The capture plan follows the enabled categories and the recording switch (PUT/PATCH of the
 * telemetry config applies either live).
 */
function captureSource(d: Base & Core): CaptureSource {
  const planOf = (categories: Iterable<string>) =>
    capturePlan(d.recording.enabled ? [...categories, RECORDING] : categories, {
      bodyMaxBytes: d.config.networkBodyMaxBytes,
    })
  return {
    current: () => planOf(d.pipeline.enabledCategories()),
    onChange: l => {
      const offCategories = d.pipeline.onCategoriesChanged(c => l(planOf(c)))
      const offRecording = d.recording.onChange(() => l(planOf(d.pipeline.enabledCategories())))
      return () => {
        offCategories()
        offRecording()
      }
    },
  }
}

/** Browser: launch or attach, with every CDP collector. Collectors are created once and survive reconnects. */
export async function startMonitor(d: Base & Store & Core): Promise<Started<Browser>> {
  const { config, pipeline, logger, bounds } = d
  if (!config.launch && !config.cdpUrl)
    return { part: { monitor: undefined, interaction: undefined, screencast: undefined } }
  const collectorLogger = logger.child({ module: 'collectors' })
  const interaction = createInteractionCollector({ logger: collectorLogger })
  const rec = config.recording
  const screencast = createRecordingCollector({
    sink: d.frames,
    lastSeq: () => d.log.lastAssignedSeq,
    maxFps: rec.maxFps,
    quality: rec.quality,
    maxWidth: rec.maxWidth,
    maxHeight: rec.maxHeight,
    logger: collectorLogger,
  })
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
      createConsoleCollector({ bounds }),
      createNetworkCollector({
        bodyMaxBytes: config.networkBodyMaxBytes,
        bounds,
        isEnabled: () => pipeline.isEnabled('network'),
      }),
      createPageCollector({ bounds }),
      interaction,
      createScreenshotCollector({
        intervalMs: config.screenshotIntervalMs,
        maxBytes: config.maxEnvelopeBytes,
        isEnabled: () => pipeline.isEnabled('screenshot'),
        onEnabledChange: l => pipeline.onCategoriesChanged(c => l(c.has('screenshot'))),
        logger: collectorLogger,
      }),
      screencast,
    ],
    logger: logger.child({ module: 'monitor' }),
    reconnect: {
      attempts: config.reconnectAttempts,
      initialBackoffMs: config.reconnectInitialBackoffMs,
      maxBackoffMs: config.reconnectMaxBackoffMs,
    },
    maxTargets: config.maxTargets,
    bounds,
  })
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
      (err: Error) => logger.warn({ url: config.open, err }, 'could not open the demo page'),
    )
  }
  return { part: { monitor, interaction, screencast }, stop }
}

/** System events: OOM kills, watched units, the launched browser's crashes, our own unclean stop. */
export async function startSystem(d: Base & Store & Core & Browser): Promise<Started<System>> {
  const system = await startSystemCollectors({
    emit: d.pipeline.emit,
    logger: d.logger.child({ module: 'system' }),
    kmsgPath: d.config.kmsgPath,
    watchUnits: d.config.watchUnits,
    log: d.log,
    monitor: d.monitor,
  })
  return { part: { system }, stop: () => system.stop() }
}

/**
 * Uploads and extensions live under the data dir. Interrupted merges are settled first (rolled back
 * or forward through their journals) and leftovers of interrupted uploads swept, before the API opens.
 */
export async function prepareUploads(d: Base): Promise<Started<Uploads>> {
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
  const meta = await ExtensionMetaStore.open(join(config.dataDir, 'extensions-meta'))
  let extensions: ExtensionStore
  try {
    extensions = await ExtensionStore.open({ dir: join(config.dataDir, 'extensions'), db: meta })
  } catch (err) {
    await meta.close()
    throw err
  }
  const slots = new UploadSlots(config.uploadMaxConcurrent)
  const uploadRoutes = [
    (r: ApiRouter) =>
      registerUploadRoutes(r, { uploadRoots, spoolDir, uploadMaxBytes: config.uploadMaxBytes, zipLimits, slots }),
    (r: ApiRouter) =>
      registerExtensionRoutes(r, { store: extensions, uploadMaxBytes: config.uploadMaxBytes, zipLimits, slots }),
  ]
  return { part: { uploadRoutes }, stop: () => meta.close() }
}

export async function startApi(
  d: Base & Identity & Store & Core & Shipping & Browser & System & Uploads,
): Promise<Started<Api>> {
  const { config, pipeline, monitor, system, sinks, metrics, disk } = d
  const monitorState = (): unknown => ({
    ...(monitor ? monitor.health() : { state: 'disabled' }),
    kernel_log: system.kmsg(),
  })
  const api = createApiApp({
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
    sinksState: () => sinks.health(),
    version: packageVersion(),
    outerMiddleware: [httpMetrics(metrics)],
    drainLimits: { maxBytes: config.drainMaxBytes, maxMs: config.drainTimeoutMs },
    diskState: () => disk.status,
    recording: d.recording,
    defaultRecording: config.recording.enabled,
    routes: [
      ...d.uploadRoutes,
      r => registerIngestRoutes(r, { pipeline, browserId: d.browserId }),
      r => registerMetricsRoute(r, { metrics }),
      r => registerViewerRoutes(r),
      r =>
        registerRecordingRoutes(r, {
          frames: d.frames,
          recording: d.recording,
          captureStats: d.screencast ? () => ({ ...d.screencast!.stats }) : undefined,
        }),
      r =>
        registerBundleRoutes(r, {
          source: {
            browserId: d.browserId,
            daemonVersion: packageVersion(),
            log: d.log,
            frames: d.frames,
            recordingEnabled: () => d.recording.enabled,
            categories: () => CONFIGURABLE_CATEGORIES.filter(c => pipeline.isEnabled(c)),
            redaction: redactorOf(config).policy(),
          },
          logger: d.logger.child({ module: 'bundle' }),
        }),
      ...(d.opts.routes ?? []),
    ],
  })
  const server = await startApiServer(api, config.listen)
  return { part: { api, server }, stop: () => server.close() }
}

/** CDP proxy: external automation clients reach the browser through it (cdp_connect/cdp_disconnect). */
export async function startProxy(d: Base & Identity & Core & Browser): Promise<Started<Proxy>> {
  const { config, monitor, tokens } = d
  if (!config.proxyListen || !monitor) return { part: { proxy: undefined } }
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
    captureCommandParams: config.captureCommandParams ? { maxBytes: COMMAND_PARAMS_MAX_BYTES } : undefined,
  })
  await proxy.start()
  return { part: { proxy }, stop: () => proxy.close() }
}

/** /metrics reads every part built so far; detached first at shutdown. */
export function attachMetrics(d: Store & Core & Shipping & Browser & Api & Proxy): Started<object> {
  const { monitor, proxy, api, interaction, sinks } = d
  const stop = d.metrics.attach({
    pipeline: d.pipeline,
    log: d.log,
    monitor,
    sseClients: () => api.streams.stats.open,
    proxyConnections: proxy ? () => proxy.connectionCount : undefined,
    sinks: () => sinks.sinks,
    refusedConnections: () => ({ sse: api.streams.stats.refused, cdp_proxy: proxy?.refusedConnections ?? 0 }),
    sseLagDisconnects: () => api.streams.stats.slowDisconnects,
    evictions: () => d.bounds.evictions,
    recording: () => {
      const f = d.frames.stats()
      const c = d.screencast?.stats
      return {
        enabled: d.recording.enabled,
        bytes: f.bytes,
        frames: {
          received: c?.received ?? 0,
          duplicate: c?.duplicates ?? 0,
          rate_limited: c?.rateLimited ?? 0,
          hidden: c?.hidden ?? 0,
          stored: f.stored_total,
          dropped_backpressure: f.dropped.backpressure,
          dropped_write_error: f.dropped.write_error,
          dropped_too_large: f.dropped.too_large,
          removed_retention: f.removed_by_retention,
        },
      }
    },
    interactionBinding: (): Record<string, number> => {
      const s = interaction?.stats
      return s ? { paused: s.paused, resumed: s.resumed, terminated: s.terminated, invalid: s.invalid } : {}
    },
  })
  return { part: {}, stop }
}

export function announceReady(d: Base & Identity & Api): void {
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
