// The Koa app of `fleet serve`: the daemon's telemetry read and stream routes (same handlers, same
// paging rules, same errors and OpenAPI entries) for any browser a source knows, plus /healthz and
// /openapi.json. It has no log, pipeline or capture configuration of its own, and emits no events.
import Koa from 'koa'
import { silentLogger, type Logger } from '../log.js'
import { bearerAuth } from '../api/auth.js'
import type { TokenSet } from '../identity/tokens.js'
import { BROWSER_ID_SYNTAX } from '../identity/browser-id.js'
import { drainRefusedBodies } from '../api/body-drain.js'
import { invalidInput, notFound } from '../api/errors.js'
import { FollowedStreams, type FollowedStreamTuning } from '../sse/followed-streams.js'
import { renderErrors, requestId } from '../api/middleware.js'
import type { ApiState } from '../api/operation.js'
import { ApiRouter } from '../api/route-table.js'
import { registerOpenApiRoute } from '../api/routes/system.js'
import { registerTelemetryReadRoutes } from '../api/routes/telemetry.js'
import { FleetHealthSchema, type FleetHealth } from '../api/schemas.js'
import type { FollowedSource } from '../sse/telemetry-source.js'

export interface FleetSources {
  /** One browser's events (nothing is asked until it is read or followed). */
  browser(id: string): FollowedSource
  /** True when the source holds any event of this browser; throws a ServiceError (503) when it cannot tell. */
  exists(id: string): Promise<boolean>
  /** Reported by /healthz; `connected` makes it 200. */
  health(): Omit<FleetHealth, 'version' | 'uptime_s' | 'streams' | 'status'>
}

export interface FleetApiDeps {
  sources: FleetSources
  tokens: TokenSet
  logger?: Logger
  streams?: Partial<FollowedStreamTuning>
  version?: string
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export interface FleetApiApp {
  koa: Koa<ApiState>
  router: ApiRouter
  streams: FollowedStreams
  closeStreams(): Promise<void>
}

const startedAt = Date.now()

export function createFleetApiApp(deps: FleetApiDeps): FleetApiApp {
  const logger = deps.logger ?? silentLogger
  const version = deps.version ?? '0.0.0'
  const streams = new FollowedStreams(id => deps.sources.browser(id), { ...deps.streams, logger })
  // Any syntactically valid id may be asked; one the stream holds nothing of is unknown (404).
  const router = new ApiRouter('', bearerAuth(deps.tokens), undefined, async id => {
    if (!BROWSER_ID_SYNTAX.test(id))
      throw invalidInput('id', 'a browser id is 1-128 characters of letters, digits, ".", "_", "-"')
    if (!(await deps.sources.exists(id))) throw notFound(`browser ${JSON.stringify(id)} not found`)
  })

  router.add({
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'fleet serve health (no authentication)',
    description: '200 while connected to NATS; 503 while reads cannot be answered.',
    scope: null,
    public: true,
    skipApiCall: true,
    responses: {
      200: { description: 'Connected', schema: FleetHealthSchema },
      503: { description: 'Not connected to NATS; `reason` says why', schema: FleetHealthSchema },
    },
    handler: async ctx => {
      const h = deps.sources.health()
      const healthy = h.nats.state === 'connected'
      const body: FleetHealth = {
        status: healthy ? 'ok' : 'degraded',
        ...(healthy ? {} : { reason: `NATS ${h.nats.state}${h.nats.last_error ? `: ${h.nats.last_error}` : ''}` }),
        version,
        uptime_s: Math.round((Date.now() - startedAt) / 1000),
        nats: h.nats,
        streams: {
          open: streams.stats.open,
          slowDisconnects: streams.stats.slowDisconnects,
          refused: streams.stats.refused,
        },
      }
      ctx.status = healthy ? 200 : 503
      ctx.set('Cache-Control', 'no-store')
      ctx.body = body
    },
  })
  registerOpenApiRoute(
    router,
    version,
    "fleet serve: any browser's telemetry read back from the fleet's NATS JetStream stream, with the daemon's read API.",
  )
  registerTelemetryReadRoutes(router, { readerOf: id => deps.sources.browser(id), streams, now: deps.now })

  const koa = new Koa<ApiState>({ proxy: false })
  koa.silent = true
  koa.use(drainRefusedBodies())
  koa.use(requestId())
  koa.use(renderErrors(logger))
  koa.use(router.koa.routes() as unknown as Koa.Middleware<ApiState>)
  koa.use(router.koa.allowedMethods() as unknown as Koa.Middleware<ApiState>)
  return { koa, router, streams, closeStreams: () => streams.closeAll() }
}
