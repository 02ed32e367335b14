// Daemon routes: GET /healthz (no auth) and GET /openapi.json.
import { Type } from '@sinclair/typebox'
import type { EventLog } from '../../store/event-log.js'
import { buildOpenApi, type OpenApiDocument } from '../openapi.js'
import type { ApiRouter } from '../route-table.js'
import { HealthSchema, type Health } from '../schemas.js'
import type { TelemetryStreams } from '../../sse/telemetry-streams.js'

export interface SystemRouteDeps {
  log: EventLog
  streams: TelemetryStreams
  version: string
  /** State of the CDP monitor, reported as is (the monitor owns its shape). */
  monitorState?: () => unknown
  /** Every destination of committed events by name (src/ship); absent = none. */
  sinksState?: () => Health['sinks']
  /** Full-disk read-only mode (src/daemon/disk-guard.ts). */
  diskState?: () => { readOnly: boolean; reason?: string }
  /** Isolation warnings of the deployment (the daemon's wiring knows them). */
  warnings?: () => string[]
}

const startedAt = Date.now()

export function registerSystemRoutes(router: ApiRouter, deps: SystemRouteDeps): void {
  router.add({
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Daemon health (no authentication)',
    description: '200 while the event log can write; 503 when it cannot (events are buffered and retried meanwhile).',
    scope: null,
    public: true,
    skipApiCall: true, // probes must not fill the log
    responses: {
      200: { description: 'Healthy', schema: HealthSchema },
      503: {
        description:
          'The event log cannot write, or the data disk is full (read-only: writes get 507); `reason` says which',
        schema: HealthSchema,
      },
    },
    handler: async ctx => {
      const store = deps.log.health()
      const disk = deps.diskState?.()
      const healthy = store.writable && !disk?.readOnly
      const reason = disk?.readOnly
        ? disk.reason
        : !store.writable
          ? `the event log cannot write: ${store.lastWriteError ?? 'unknown error'}`
          : undefined
      const body: Health = {
        status: healthy ? 'ok' : 'degraded',
        ...(reason ? { reason } : {}),
        browser_id: router.browserId,
        version: deps.version,
        uptime_s: Math.round((Date.now() - startedAt) / 1000),
        warnings: deps.warnings?.() ?? [],
        store,
        monitor: deps.monitorState ? deps.monitorState() : { state: 'disabled' },
        streams: { ...deps.streams.stats },
        sinks: deps.sinksState ? deps.sinksState() : {},
      }
      ctx.status = healthy ? 200 : 503
      ctx.set('Cache-Control', 'no-store')
      ctx.body = body
    },
  })

  registerOpenApiRoute(
    router,
    deps.version,
    'In-VM browser telemetry daemon: paged reads, live SSE stream, capture configuration, uploads and extensions.',
  )
}

/** GET /openapi.json: the document of every route registered on this router. */
export function registerOpenApiRoute(router: ApiRouter, version: string, description: string): void {
  let doc: OpenApiDocument | undefined
  router.add({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI 3.1 document',
    scope: null,
    responses: {
      200: {
        description: 'OpenAPI 3.1 document',
        schema: Type.Object({ openapi: Type.String() }, { additionalProperties: true }),
      },
    },
    handler: async ctx => {
      // Built on first use, when every route group has registered.
      doc ??= buildOpenApi(router.routes, { title: 'browser-telemetry', version, description })
      ctx.body = doc
    },
  })
}
