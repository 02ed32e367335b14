// The daemon's serving steps: uploads, the HTTP API with every route group, the CDP proxy, the
// metrics wiring and the ready announcement. Same contract as stages.ts.
import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { createApiApp } from '../api/app.js'
import { startApiServer } from '../api/server.js'
import { httpMetrics } from '../api/routes/metrics.js'
import { daemonRoutes } from '../api/routes/index.js'
import { TraceLinkRevocations, TraceLinkSigner } from '../api/trace-links.js'
import { ExportSlots } from '../api/zip-response.js'
import { CONFIGURABLE_CATEGORIES } from '../events/index.js'
import { CdpProxy, proxyAuthRequired } from '../proxy/cdp-proxy.js'
import { StepRegistry } from '../agent/step-registry.js'
import { PerfTraces } from '../perf/perf-traces.js'
import { PerfTraceStore } from '../perf/trace-store.js'
import { COMMAND_PARAMS_MAX_BYTES } from '../proxy/command-log.js'
import { FileGuard } from '../proxy/file-guard.js'
import { isLoopbackHost } from '../util/loopback.js'
import { ExtensionStore } from '../uploads/extension-store.js'
import { ExtensionMetaStore } from '../uploads/extension-meta.js'
import { prepareUploadRoots } from '../uploads/upload-roots.js'
import { isInside } from '../uploads/destination.js'
import { chromiumUserHome } from '../monitor/index.js'
import { sweepSpool } from '../uploads/multipart-spool.js'
import { UploadSlots } from '../uploads/upload-slots.js'
import type { ZipLimits } from '../uploads/zip-entries.js'
import {
  type Started,
  type Base,
  type Identity,
  type Store,
  type Core,
  type Shipping,
  type Browser,
  type System,
  type Uploads,
  type Api,
  type CdpProxyPart,
  type AgentSteps,
  type Symbols,
  type PerfTracing,
} from './parts.js'

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
  const uploadRoots = await prepareUploadRoots(
    config.uploads.roots,
    config.dataDir,
    await chromiumUserHome(config.browser.chromiumUser),
  )
  // A root such as /tmp or a home may hold the daemon's own files: those are never written.
  const protectedPaths = [config.dataDir, config.auth.tokenFile, config.traceLinks.keyFile].filter(
    (p): p is string => p !== undefined,
  )
  const zipLimits: ZipLimits = config.uploads.zip
  // Extension metadata has its own database, so nothing done to the telemetry log can touch it.
  const meta = await ExtensionMetaStore.open(join(config.dataDir, 'extensions-meta'))
  let extensions: ExtensionStore
  try {
    extensions = await ExtensionStore.open({ dir: join(config.dataDir, 'extensions'), db: meta })
  } catch (err) {
    await meta.close()
    throw err
  }
  const slots = new UploadSlots(config.uploads.maxConcurrent)
  return {
    part: {
      uploads: { uploadRoots, protectedPaths, spoolDir, uploadMaxBytes: config.uploads.maxBytes, zipLimits, slots },
      extensions: { store: extensions, uploadMaxBytes: config.uploads.maxBytes, zipLimits, slots },
    },
    stop: () => meta.close(),
  }
}

/** The agent's steps; at shutdown (after the API and the proxy stop) open steps end as abandoned. */
export function startAgentSteps(d: Core): Started<AgentSteps> {
  const steps = new StepRegistry({ emit: d.pipeline.emit })
  return { part: { steps }, stop: () => steps.close() }
}

/** Performance traces on demand, kept in <data-dir>/perf-traces; at shutdown a running one is dropped. */
export async function openPerfTraces(d: Base & Core & Browser): Promise<Started<PerfTracing>> {
  const { config } = d
  const store = await PerfTraceStore.open({
    dir: join(config.dataDir, 'perf-traces'),
    maxCount: config.perfTraces.keep,
    maxBytes: config.perfTraces.storeBytes,
  })
  const perfTraces = new PerfTraces({
    store,
    recorder: d.perfTrace,
    maxTraceBytes: config.perfTraces.maxTraceBytes,
    redactor: d.redactor,
    report: data =>
      void d.pipeline.emit({
        type: 'perf_trace_recorded',
        source: { kind: 'cdp', event: 'Tracing.tracingComplete' },
        data,
      }),
    logger: d.logger.child({ module: 'perf-traces' }),
  })
  return { part: { perfTraces }, stop: () => perfTraces.stop() }
}

export async function startApi(
  d: Base & Identity & Store & Core & Symbols & Shipping & Browser & System & Uploads & AgentSteps & PerfTracing,
): Promise<Started<Api>> {
  const { config, pipeline, monitor, system, sinks, metrics, disk, sourceMaps } = d
  const monitorState = (): unknown => ({
    ...(monitor ? monitor.health() : { state: 'disabled' }),
    kernel_log: system.kmsg(),
  })
  // The API has no TLS of its own: beyond loopback, tokens and telemetry cross the network in clear
  // unless a TLS proxy sits in front (which the daemon cannot see, so it says so once).
  const listenWarning = isLoopbackHost(config.listen.host)
    ? []
    : [
        `the API listens on ${config.listen.host}, beyond loopback, without TLS: bearer tokens and telemetry cross the network in clear unless a TLS proxy is in front`,
      ]
  for (const w of listenWarning) d.logger.warn(w)
  const exportSlots = new ExportSlots(config.exportMaxConcurrent)
  const api = createApiApp({
    browserId: d.browserId,
    log: d.log,
    mapping: sourceMaps,
    pipeline,
    tokens: d.tokens.tokens,
    logger: d.logger.child({ module: 'api' }),
    streams: config.streams,
    defaultCategories: config.capture.categories,
    monitorState,
    warnings: () => [...listenWarning, ...(monitor?.warnings() ?? [])],
    sinksState: () => sinks.health(),
    version: d.version,
    outerMiddleware: [httpMetrics(metrics)],
    drainLimits: config.drain,
    diskState: () => disk.status,
    recording: d.recording,
    defaultRecording: config.recording.enabled,
    maskTypedKeys: d.maskTypedKeys,
    defaultMaskTypedKeys: config.capture.maskTypedKeys,
    routes: [
      ...daemonRoutes({
        uploads: d.uploads,
        extensions: d.extensions,
        ingest: { pipeline, browserId: d.browserId },
        steps: { steps: d.steps },
        perfTraces: { perfTraces: d.perfTraces },
        metrics: { metrics },
        recording: {
          frames: d.frames,
          log: d.log,
          recording: d.recording,
          captureStats: d.screencast ? () => ({ ...d.screencast!.stats }) : undefined,
        },
        bundle: {
          source: {
            browserId: d.browserId,
            daemonVersion: d.version,
            log: d.log,
            frames: d.frames,
            recordingEnabled: () => d.recording.enabled,
            categories: () => CONFIGURABLE_CATEGORIES.filter(c => pipeline.isEnabled(c)),
            redaction: d.redactor.policy(),
            sourceMaps,
            perfTraces: d.perfTraces,
          },
          logger: d.logger.child({ module: 'bundle' }),
          slots: exportSlots,
        },
        actions: { reader: d.log },
        digest: { reader: d.log, flush: () => d.log.flush(), mapping: sourceMaps },
        trace: {
          source: {
            browserId: d.browserId,
            log: d.log,
            frames: d.frames,
            mapRecords: records => sourceMaps.mapRecords(records),
          },
          signer: config.traceLinks.keyFile
            ? await TraceLinkSigner.fromFile(config.traceLinks.keyFile)
            : TraceLinkSigner.random(),
          revocations: await TraceLinkRevocations.open(join(config.dataDir, 'trace-link-revocations.json')),
          corsOrigins: config.traceLinks.origins,
          logger: d.logger.child({ module: 'trace' }),
          slots: exportSlots,
        },
        sourceMaps: { sourceMaps, maxBytes: config.sourcemaps.maxBytes },
      }),
      ...(d.opts.routes ?? []),
    ],
  })
  const server = await startApiServer(api, config.listen)
  return {
    part: { api, server },
    stop: async () => {
      await server.close()
    },
  }
}

/** CDP proxy: external automation clients reach the browser through it (cdp_connect/cdp_disconnect). */
export async function startProxy(
  d: Base & Identity & Core & Browser & AgentSteps & Uploads,
): Promise<Started<CdpProxyPart>> {
  const { config, monitor, tokens } = d
  const { listen } = config.proxy
  if (!listen || !monitor) return { part: { proxy: undefined } }
  const proxy = new CdpProxy({
    listen,
    upstream: () => monitor.browserWsUrl,
    onUpstreamChanged: l => {
      monitor.events.on('upstream', l)
      return () => {
        monitor.events.off('upstream', l)
      }
    },
    emit: d.pipeline.emit,
    steps: d.steps,
    auth: proxyAuthRequired(listen.host, config.proxy.auth) ? { verify: t => tokens.tokens.lookup(t) } : undefined,
    logger: d.logger.child({ module: 'proxy' }),
    maxConnections: config.proxy.maxConnections,
    captureCommandParams: config.proxy.captureCommandParams ? { maxBytes: COMMAND_PARAMS_MAX_BYTES } : undefined,
    // A browser of another user cannot read the data dir anyway; one of the daemon's own user could.
    fileGuard: monitor.sharesDaemonUser
      ? new FileGuard({
          protectedDirs: [config.dataDir],
          // Only the roots inside the data dir (its uploads): a root around it (/tmp) must not open it.
          allowedDirs: d.uploads.uploadRoots.filter(r => isInside(resolve(config.dataDir), r)),
        })
      : undefined,
  })
  await proxy.start()
  return { part: { proxy }, stop: () => proxy.close() }
}

/** /metrics reads every part built so far; detached first at shutdown. */
export function attachMetrics(d: Store & Core & Symbols & Shipping & Browser & Api & CdpProxyPart): Started<object> {
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
    recording: () => ({ enabled: d.recording.enabled, store: d.frames.stats(), capture: d.screencast?.stats }),
    sourceMaps: () => {
      const s = d.sourceMaps.stats
      return {
        scripts: { mapped: s.learned, none: s.none, failed: s.failed },
        loads: s.fetches,
        indexBytes: d.sourceMaps.indexBytesWritten,
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
    { url: server.url, browserId, dataDir: config.dataDir, categories: config.capture.categories },
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
