// The daemon's capture-side startup stages, one function per part: identity, store, pipeline,
// sinks, monitor with the collectors, system collectors. Each takes the parts it reads (built by the
// stages before it) and returns its own part and how to stop what it started; main.ts runs them in
// order and the stops in reverse.
import { mkdir, chmod, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { ServeConfig } from '../config/config.js'
import { Redactor } from '../events/redact.js'
import { DiskGuard } from './disk-guard.js'
import { Pipeline } from '../pipeline/pipeline.js'
import { Bounds } from '../pipeline/bounds.js'
import { EventLog } from '../store/event-log.js'
import { FrameStore } from '../recording/frame-store.js'
import { RecordingSwitch } from '../recording/switch.js'
import { Toggle } from '../util/toggle.js'
import { loadTokens } from '../identity/tokens.js'
import { resolveBrowserId } from '../identity/browser-id.js'
import { createMetrics } from '../metrics/metrics.js'
import { Monitor, RECORDING, chromiumUserFor, type CaptureSource } from '../monitor/index.js'
import { moveLegacyExtensionMeta } from '../uploads/legacy-extension-meta.js'
import { createCollectors, startSystemCollectors } from '../../collectors/index.js'
import { startSinks } from '../ship/sinks.js'
import { SourceMaps } from '../symbols/source-maps.js'
import { capturedLookup } from '../symbols/captured.js'
import {
  type Started,
  type Base,
  type Identity,
  type Store,
  type Core,
  type Shipping,
  type Browser,
  type System,
  type Symbols,
} from './parts.js'

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
    reserveBytes: config.store.reserveBytes,
    checkIntervalMs: d.opts.diskCheckIntervalMs,
    logger: d.logger.child({ module: 'disk' }),
  })
  const browserId = await resolveBrowserId(config.dataDir, config.browserId)
  const tokens = await loadTokens({ ...config.auth, dataDir: config.dataDir })
  return { part: { browserId, tokens, disk }, stop: () => disk.close() }
}

export async function openStore(d: Base): Promise<Started<Store>> {
  const path = join(d.config.dataDir, 'events')
  // Before the log opens: the move needs the log's LevelDB to itself.
  await moveLegacyExtensionMeta(path, join(d.config.dataDir, 'extensions-meta'))
  const log = await EventLog.open({
    path,
    logger: d.logger.child({ module: 'store' }),
    ...d.config.store.retention,
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
  return new Redactor(config.redaction)
}

export function buildPipeline(d: Base & Store): Started<Core> {
  const pipeline = new Pipeline({
    log: d.log,
    logger: d.logger.child({ module: 'pipeline' }),
    categories: d.config.capture.categories,
    maxEnvelopeBytes: d.config.capture.maxEnvelopeBytes,
    shedding: d.config.shedding,
    redactor: d.redactor,
  })
  // Per-target byte bounds (URLs, header sets, request tables) for the monitor and collectors.
  const bounds = new Bounds({ ...d.config.bounds, maxEnvelopeBytes: d.config.capture.maxEnvelopeBytes })
  const recording = new RecordingSwitch(d.config.recording.enabled)
  recording.onChange(on => d.logger.info({ enabled: on }, on ? 'screen recording on' : 'screen recording off'))
  const maskTypedKeys = new Toggle(d.config.capture.maskTypedKeys)
  maskTypedKeys.onChange(on =>
    d.logger.info({ enabled: on }, on ? 'typed keys stored without their value' : 'typed keys stored as typed'),
  )
  return { part: { pipeline, metrics: createMetrics(), bounds, recording, maskTypedKeys } }
}

/**
 * Source maps (`<data-dir>/sourcemaps`): before the sinks and the monitor, which map stacks with
 * them. A map that cannot be used is reported as sourcemap_failed through the pipeline.
 */
export async function openSourceMaps(d: Base & Store & Core): Promise<Started<Symbols>> {
  const { config } = d
  const { redactor } = d
  const sourceMaps = await SourceMaps.open({
    dir: join(config.dataDir, 'sourcemaps'),
    maxMapBytes: config.sourcemaps.maxBytes,
    storeBytes: config.sourcemaps.storeBytes,
    cacheBytes: config.sourcemaps.cacheBytes,
    fetch: config.sourcemaps.fetch,
    report: data =>
      void d.pipeline.emit({
        type: 'sourcemap_failed',
        source: { kind: 'cdp', event: 'Network.loadNetworkResource' },
        data,
      }),
    captured: capturedLookup(d.log),
    maskSource: source => redactor.url(source),
    maskUrl: url => redactor.url(url),
    maxEnvelopeBytes: config.capture.maxEnvelopeBytes,
    logger: d.logger.child({ module: 'sourcemaps' }),
    ...d.opts.sourceMapNet,
  })
  return { part: { sourceMaps }, stop: () => sourceMaps.close() }
}

/**
 * Sinks: every destination of committed events, as one list. They follow the log and never wait
 * for their destination; they stop before the log closes.
 */
export async function startSinkList(d: Base & Identity & Store & Core & Symbols): Promise<Started<Shipping>> {
  const sinks = await startSinks(
    { nats: d.config.nats, otlp: d.config.otlp },
    {
      log: d.log,
      browserId: d.browserId,
      version: d.version,
      metrics: d.metrics.registry,
      logger: d.logger,
      mapping: d.sourceMaps,
    },
  )
  return { part: { sinks }, stop: () => sinks.stop() }
}

/**
 * The capture plan's switches follow the enabled categories and the recording switch (PUT/PATCH of
 * the telemetry config applies either live); the monitor builds the plan over its collectors.
 */
function captureSource(d: Base & Core): CaptureSource {
  const switchesOf = (categories: Iterable<string>) => ({
    enabled: d.recording.enabled ? [...categories, RECORDING] : [...categories],
    bodyMaxBytes: d.config.capture.networkBodyMaxBytes,
  })
  return {
    current: () => switchesOf(d.pipeline.enabledCategories()),
    onChange: l => {
      const offCategories = d.pipeline.onCategoriesChanged(c => l(switchesOf(c)))
      const offRecording = d.recording.onChange(() => l(switchesOf(d.pipeline.enabledCategories())))
      return () => {
        offCategories()
        offRecording()
      }
    },
  }
}

/** Browser: launch or attach, with every CDP collector. Collectors are created once and survive reconnects. */
export async function startMonitor(d: Base & Store & Core & Symbols): Promise<Started<Browser>> {
  const { config, pipeline, logger, bounds } = d
  const { browser, capture } = config
  if (!browser.launch && !browser.cdpUrl)
    return { part: { monitor: undefined, interaction: undefined, screencast: undefined, perfTrace: undefined } }
  const rec = config.recording
  const { list, interaction, screencast, perfTrace } = createCollectors({
    bounds,
    isEnabled: c => pipeline.isEnabled(c),
    onCategoriesChanged: l => pipeline.onCategoriesChanged(l),
    networkBodyMaxBytes: capture.networkBodyMaxBytes,
    screenshotIntervalMs: capture.screenshotIntervalMs,
    maxEnvelopeBytes: capture.maxEnvelopeBytes,
    recording: {
      sink: d.frames,
      lastSeq: () => d.log.lastAssignedSeq,
      maxFps: rec.maxFps,
      quality: rec.quality,
      maxWidth: rec.maxWidth,
      maxHeight: rec.maxHeight,
    },
    logger: logger.child({ module: 'collectors' }),
    sourceMaps: d.sourceMaps,
    maskTypedKeys: () => d.maskTypedKeys.enabled,
  })
  const monitor = new Monitor({
    cdpUrl: browser.launch ? undefined : browser.cdpUrl,
    // A root daemon never runs the browser as root: pages and CDP clients must not reach the data dir.
    launch: browser.launch
      ? {
          chromiumPath: browser.chromiumPath,
          extraArgs: browser.chromiumArgs,
          user: await chromiumUserFor(browser.chromiumUser),
        }
      : undefined,
    emit: pipeline.emit,
    capture: captureSource(d),
    collectors: list,
    logger: logger.child({ module: 'monitor' }),
    reconnect: browser.reconnect,
    maxTargets: browser.maxTargets,
    bounds,
    emitUnbuilt: pipeline.emit,
  })
  const stop = () => monitor.stop()
  try {
    await monitor.start()
  } catch (err) {
    await stop() // the stage failed: its own stop is not registered yet
    throw err
  }
  // Demo: a new tab with the page, navigated once attached so the collectors see all of it.
  const { open } = browser
  if (open) {
    await monitor.openPage(open).then(
      () => logger.info({ url: open }, 'opened demo page'),
      (err: Error) => logger.warn({ url: open, err }, 'could not open the demo page'),
    )
  }
  return { part: { monitor, interaction, screencast, perfTrace }, stop }
}

/** System events: OOM kills, watched units, the launched browser's crashes, our own unclean stop. */
export async function startSystem(d: Base & Store & Core & Browser): Promise<Started<System>> {
  const system = await startSystemCollectors({
    emit: d.pipeline.emit,
    logger: d.logger.child({ module: 'system' }),
    ...d.config.system,
    log: d.log,
    monitor: d.monitor,
  })
  return { part: { system }, stop: () => system.stop() }
}
