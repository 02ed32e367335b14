// Wiring only: startDaemon runs the startup stages of daemon/ in order. Each stage takes the typed
// record of what the stages before it built and returns its own part and how to stop it; shutdown
// runs those stops in reverse. To add a part: write one stage function in daemon/ (stages.ts for
// capture, serve-stages.ts for serving; its parameter type says what it reads) and call it here at
// its place in the order.
import type { ServeConfig } from './config/config.js'
import { createLogger } from './log.js'
import type { EventLog } from './store/event-log.js'
import type { FrameStore } from './recording/frame-store.js'
import type { RecordingSwitch } from './recording/switch.js'
import type { RecordingCollector } from '../collectors/index.js'
import type { Pipeline } from './pipeline/pipeline.js'
import type { ApiApp } from './api/app.js'
import type { Monitor } from './monitor/index.js'
import type { CdpProxy } from './proxy/cdp-proxy.js'
import type { StepRegistry } from './agent/step-registry.js'
import type { SinkList } from './ship/sinks.js'
import type { SourceMaps } from './symbols/source-maps.js'
import {
  buildPipeline,
  openSourceMaps,
  openStore,
  redactorOf,
  resolveIdentity,
  startMonitor,
  startSinkList,
  startSystem,
} from './daemon/stages.js'
import {
  announceReady,
  attachMetrics,
  openPerfTraces,
  prepareUploads,
  startApi,
  startProxy,
  startAgentSteps,
} from './daemon/serve-stages.js'
import { packageVersion, type Base, type DaemonOptions, type Started, type StopStage } from './daemon/parts.js'

export { packageVersion, type DaemonOptions, type StopStage } from './daemon/parts.js'

export interface DaemonHandle {
  /** e.g. http://127.0.0.1:10222 */
  url: string
  browserId: string
  log: EventLog
  /** The screen recording's frames (beside the log). */
  frames: FrameStore
  /** Screen recording on/off (the capture config's `recording`). */
  recording: RecordingSwitch
  /** The screencast collector (undefined with --no-browser). */
  screencast?: RecordingCollector
  pipeline: Pipeline
  api: ApiApp
  /** Undefined with --no-browser. */
  monitor?: Monitor
  /** Undefined with --proxy-listen off. */
  proxy?: CdpProxy
  /** The agent's steps (HTTP and CDP). */
  steps: StepRegistry
  /** Every destination of committed events (NATS, OTLP); empty when none is configured. */
  sinks: SinkList
  /** Uploaded and fetched source maps, and the stack mapping of every reader. */
  sourceMaps: SourceMaps
  /** Set when no token was configured: the generated (or reused) token and its file. */
  generatedToken?: { token: string; path: string }
  /** Graceful stop: stop accepting, end streams, flush and close the log. Idempotent. */
  close(): Promise<void>
}

/**
 * Startup order: config → store → pipeline → source maps → ship → monitor → system → uploads → agent steps →
 * perf traces → api → proxy → metrics → ready. Shutdown is the reverse: metrics, proxy, API (streams
 * end), a running perf trace (dropped), extension metadata, system, monitor, the shipper (last acks, watermark saved), then the log (flushed and closed last,
 * so every producer's final events are stored).
 */
export async function startDaemon(config: ServeConfig, opts: DaemonOptions = {}): Promise<DaemonHandle> {
  const redactor = redactorOf(config)
  const logger = opts.logger ?? createLogger(config.logLevel, redactor)
  const stops: { name: string; stop: StopStage }[] = []
  const stopAll = async () => {
    for (const { name, stop } of stops.splice(0).reverse()) {
      try {
        await stop()
      } catch (err) {
        logger.error({ stage: name, err }, 'shutdown stage failed')
      }
    }
  }
  /** Awaits one stage and keeps its stop (a stage that throws cleans up after itself). */
  const stage = async <Part>(name: string, started: Started<Part> | Promise<Started<Part>>): Promise<Part> => {
    const { part, stop } = await started
    if (stop) stops.push({ name, stop })
    return part
  }
  try {
    const base: Base = { config, logger, opts, redactor, version: packageVersion() }
    const identity = { ...base, ...(await stage('config', resolveIdentity(base))) }
    const stored = { ...identity, ...(await stage('store', openStore(identity))) }
    const core = { ...stored, ...(await stage('pipeline', buildPipeline(stored))) }
    const mapped = { ...core, ...(await stage('sourcemaps', openSourceMaps(core))) }
    const shipping = { ...mapped, ...(await stage('sinks', startSinkList(mapped))) }
    const browser = { ...shipping, ...(await stage('monitor', startMonitor(shipping))) }
    const system = { ...browser, ...(await stage('system', startSystem(browser))) }
    const uploads = { ...system, ...(await stage('uploads', prepareUploads(system))) }
    const agent = { ...uploads, ...(await stage('agent-steps', startAgentSteps(uploads))) }
    const traced = { ...agent, ...(await stage('perf-traces', openPerfTraces(agent))) }
    const served = { ...traced, ...(await stage('api', startApi(traced))) }
    const d = { ...served, ...(await stage('proxy', startProxy(served))) }
    await stage('metrics', attachMetrics(d))
    announceReady(d)
    let closing: Promise<void> | undefined
    return {
      url: d.server.url,
      browserId: d.browserId,
      log: d.log,
      frames: d.frames,
      recording: d.recording,
      screencast: d.screencast,
      pipeline: d.pipeline,
      api: d.api,
      monitor: d.monitor,
      proxy: d.proxy,
      steps: d.steps,
      sinks: d.sinks,
      sourceMaps: d.sourceMaps,
      generatedToken: d.tokens.generated
        ? { token: d.tokens.generated.token, path: d.tokens.generated.path }
        : undefined,
      close: () => (closing ??= stopAll()),
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}
