// The daemon's parts as its startup stages build them: what every stage may read (Base), what each
// adds (one interface per stage), and what a stage returns (its part and how to stop it).
import { existsSync, readFileSync } from 'node:fs'
import type { ServeConfig } from '../config/config.js'
import type { Logger } from '../log.js'
import { DiskGuard } from './disk-guard.js'
import { Pipeline } from '../pipeline/pipeline.js'
import { Bounds } from '../pipeline/bounds.js'
import { EventLog } from '../store/event-log.js'
import { FrameStore } from '../recording/frame-store.js'
import { RecordingSwitch } from '../recording/switch.js'
import type { Toggle } from '../util/toggle.js'
import { type ApiApp } from '../api/app.js'
import { type LoadedTokens } from '../identity/tokens.js'
import type { ApiRouter } from '../api/route-table.js'
import { type ApiServer } from '../api/server.js'
import type { ExtensionRouteDeps } from '../api/routes/extensions.js'
import type { UploadRouteDeps } from '../api/routes/uploads.js'
import { type Metrics } from '../metrics/metrics.js'
import { Monitor } from '../monitor/index.js'
import { CdpProxy } from '../proxy/cdp-proxy.js'
import type { Redactor } from '../events/redact.js'
import type { StepRegistry } from '../agent/step-registry.js'
import {
  type InteractionCollector,
  type PerfTraceCollector,
  type RecordingCollector,
  type SystemCollectors,
} from '../../collectors/index.js'
import type { PerfTraces } from '../perf/perf-traces.js'
import { type SinkList } from '../ship/sinks.js'
import type { SourceMaps, SourceMapsOptions } from '../symbols/source-maps.js'

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
  /** Tests only: the source maps' resolver and dialled address for the daemon's own fetch (direct-fetch.ts). */
  sourceMapNet?: Pick<SourceMapsOptions, 'resolveHost' | 'dial'>
}

/** Stops what a stage started. Shutdown calls these in reverse stage order. */
export type StopStage = () => Promise<void> | void

/** What a stage built, and how to stop it (nothing to stop: no stop). */
export interface Started<Part> {
  part: Part
  stop?: StopStage
}

/** What every stage may read. */
export interface Base {
  readonly config: ServeConfig
  readonly logger: Logger
  readonly opts: DaemonOptions
  /** The one masking policy of events, logs, perf traces and exports (built-in lists plus --redact-*). */
  readonly redactor: Redactor
  /** The daemon's version (package.json), read once at start. */
  readonly version: string
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
  /** Printable keys stored without their value (--mask-typed-keys; the capture config toggles it). */
  maskTypedKeys: Toggle
}
/** sourcemaps: uploaded and fetched source maps, and the stack mapping every reader uses */
export interface Symbols {
  sourceMaps: SourceMaps
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
  perfTrace: PerfTraceCollector | undefined
}
/** performance traces on demand (a browser records them; without one, starting answers 503) */
export interface PerfTracing {
  perfTraces: PerfTraces
}
/** system */
export interface System {
  system: SystemCollectors
}
/** uploads: what the upload and extension routes write to. */
export interface Uploads {
  uploads: UploadRouteDeps
  extensions: ExtensionRouteDeps
}
/** api */
export interface Api {
  api: ApiApp
  server: ApiServer
}
/** the agent's steps (HTTP routes and the CDP proxy share one registry) */
export interface AgentSteps {
  steps: StepRegistry
}
/** proxy (undefined with --proxy-listen off or without a browser) */
export interface CdpProxyPart {
  proxy: CdpProxy | undefined
}

export function packageVersion(): string {
  // src/daemon/parts.ts and dist/src/daemon/parts.js sit at different depths below package.json.
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
