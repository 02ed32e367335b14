// The Koa app: app-wide middleware + the route table. Route groups register through
// `(router: ApiRouter) => void` functions, so uploads/extensions/ingest plug in without touching this file.
import Koa from 'koa'
import type { EventLog } from '../store/event-log.js'
import type { ConfigurableCategory, Pipeline } from '../pipeline/pipeline.js'
import { CONFIGURABLE_CATEGORIES } from '../events/index.js'
import { silentLogger, type Logger } from '../log.js'
import { bearerAuth } from './auth.js'
import type { TokenSet } from '../identity/tokens.js'
import { apiCallEvents, renderErrors, requestId } from './middleware.js'
import { drainRefusedBodies, type DrainLimits } from './body-drain.js'
import type { ApiState } from './operation.js'
import { ApiError } from './errors.js'
import { ApiRouter } from './route-table.js'
import { registerSystemRoutes, type SystemRouteDeps } from './routes/system.js'
import { registerTelemetryRoutes } from './routes/telemetry.js'
import type { ReadMapping } from '../store/read-mapping.js'
import type { RecordingSwitch } from '../recording/switch.js'
import type { Toggle } from '../util/toggle.js'
import { TelemetryStreams, type StreamTuning } from '../sse/telemetry-streams.js'

export interface ApiDeps {
  /** The browser session id served under /browsers/{id}. */
  browserId: string
  log: EventLog
  /** Records as the events route and the SSE streams serve them (source-mapped stack frames). */
  mapping?: ReadMapping
  pipeline: Pipeline
  tokens: TokenSet
  logger?: Logger
  /** The SSE streams' settings (absent ones: their defaults, `src/sse/telemetry-streams.ts`). */
  streams?: Partial<StreamTuning>
  /** The screen recording's on/off switch (capture config `recording`); absent: not offered. */
  recording?: RecordingSwitch
  /** What PUT sets the recording to when its body does not name it (default: off). */
  defaultRecording?: boolean
  /** Printable keys stored without their value (capture config `mask_typed_keys`); absent: not offered. */
  maskTypedKeys?: Toggle
  /** What PUT sets it to when its body does not name it (the daemon's --mask-typed-keys; default: off). */
  defaultMaskTypedKeys?: boolean
  /** What PUT /browsers/{id}/telemetry layers its body onto (default: the pipeline's categories at creation). */
  defaultCategories?: readonly ConfigurableCategory[]
  /** Reported by /healthz under `monitor`. */
  monitorState?: () => unknown
  /** Reported by /healthz under `sinks`. */
  sinksState?: SystemRouteDeps['sinksState']
  /** Full-disk read-only mode: /healthz reports it, write and publish routes answer 507. */
  diskState?: SystemRouteDeps['diskState']
  /** Reported by /healthz under `warnings`. */
  warnings?: SystemRouteDeps['warnings']
  /**
   * Middleware mounted right after the request id, outside error rendering, so it sees the final
   * status (e.g. httpMetrics from routes/metrics.ts).
   */
  outerMiddleware?: Koa.Middleware<ApiState>[]
  /** Bounds on reading and discarding the unread body of a refused request (default 64 MiB, 10 s). */
  drainLimits?: DrainLimits
  /** Further route groups, e.g. `(r) => registerUploadRoutes(r, uploadDeps)`. */
  routes?: ((router: ApiRouter) => void)[]
  version?: string
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export interface ApiApp {
  koa: Koa<ApiState>
  router: ApiRouter
  streams: TelemetryStreams
  /** Ends every SSE stream cleanly (call when shutting down, before closing the log). */
  closeStreams(): Promise<void>
}

export function createApiApp(deps: ApiDeps): ApiApp {
  const logger = deps.logger ?? silentLogger
  const streams = new TelemetryStreams(deps.log, {
    ...deps.streams,
    mapping: deps.mapping,
    logger,
  })
  const diskState = deps.diskState
  const router = new ApiRouter(
    deps.browserId,
    bearerAuth(deps.tokens),
    diskState &&
      (() => {
        const disk = diskState()
        return disk.readOnly
          ? new ApiError(
              507,
              'insufficient_storage',
              disk.reason ?? 'the data disk is full; the daemon is read-only until space is freed',
            )
          : undefined
      }),
  )
  registerSystemRoutes(router, {
    log: deps.log,
    streams,
    version: deps.version ?? '0.0.0',
    monitorState: deps.monitorState,
    sinksState: deps.sinksState,
    diskState,
    warnings: deps.warnings,
  })
  registerTelemetryRoutes(router, {
    log: deps.log,
    mapping: deps.mapping,
    pipeline: deps.pipeline,
    streams,
    defaultCategories: deps.defaultCategories ?? CONFIGURABLE_CATEGORIES.filter(c => deps.pipeline.isEnabled(c)),
    recording: deps.recording,
    defaultRecording: deps.defaultRecording,
    maskTypedKeys: deps.maskTypedKeys,
    defaultMaskTypedKeys: deps.defaultMaskTypedKeys,
    now: deps.now,
  })
  for (const register of deps.routes ?? []) register(router)

  const koa = new Koa<ApiState>({ proxy: false })
  koa.silent = true // errors are rendered and logged by renderErrors
  // outermost: drains the body of any refused request once the final status is known
  koa.use(drainRefusedBodies(deps.drainLimits))
  koa.use(requestId())
  for (const m of deps.outerMiddleware ?? []) koa.use(m)
  koa.use(apiCallEvents(deps.pipeline.emit))
  koa.use(renderErrors(logger))
  koa.use(router.koa.routes() as unknown as Koa.Middleware<ApiState>)
  koa.use(router.koa.allowedMethods() as unknown as Koa.Middleware<ApiState>)
  return { koa, router, streams, closeStreams: () => streams.closeAll() }
}
