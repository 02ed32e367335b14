// The single route table. Every route is added once, with its documentation, through ApiRouter.add:
// the Koa router and the OpenAPI document (openapi.ts) are both built from it, so they cannot drift.
import { Router, type RouterContext, type RouterMiddleware } from '@koa/router'
import type { TSchema } from '@sinclair/typebox'
import { notFound, type ApiError } from './errors.js'
import { operation, type ApiState, type Scope } from './operation.js'
import { compileQuery, type RawQuery } from './query-params.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type ApiContext = RouterContext<ApiState>
export type ApiMiddleware = RouterMiddleware<ApiState>

export interface ParamDoc {
  schema: TSchema
  description?: string
  required?: boolean
}
export interface ResponseDoc {
  description: string
  /** Defaults to application/json when a schema is given. */
  contentType?: string
  schema?: TSchema
  headers?: Record<string, { schema: TSchema; description?: string }>
}

export interface RouteDef {
  method: HttpMethod
  /** Koa-style path (`/browsers/:id/telemetry`). A `:id` right after `/browsers/` must name a served browser (else 404). */
  path: string
  operationId: string
  summary: string
  description?: string
  /** Scope the bearer token must hold; null = any valid token. */
  scope: Scope | null
  /** No authentication at all (only GET /healthz). */
  public?: boolean
  /**
   * Another way in besides the bearer token (the trace route's signed links): given the bearer
   * check, returns the route's own; it must set ctx.state.scopes as the bearer check does.
   */
  authenticate?: (bearer: ApiMiddleware) => ApiMiddleware
  /** Telemetry reads and streams: no api_call event (a poller must not feed itself). */
  skipApiCall?: boolean
  query?: Record<string, ParamDoc>
  headers?: Record<string, ParamDoc>
  requestBody?: { contentType: string; schema: TSchema; required?: boolean; description?: string }
  /** Success responses; the error responses (400/401/403/404/500) are added to the document for every route. */
  responses: Record<number, ResponseDoc>
  /** Runs before the handler, after auth, scope and browser-id checks (e.g. a body parser). */
  middleware?: ApiMiddleware[]
  handler: ApiMiddleware
}

/** Decides whether `/browsers/{id}` names a browser this server answers for; throws an ApiError (400, 404, 503) when not. */
export type BrowserCheck = (id: string) => Promise<void>

export class ApiRouter {
  readonly routes: RouteDef[] = []
  readonly koa = new Router<ApiState>()

  /**
   * @param browserId the one browser session this daemon serves under /browsers/{id}.
   * @param authenticate bearer auth (auth.ts); runs inside each non-public route, after the route's
   *   operation id is known, so a rejected request is still attributed to its operation.
   * @param browserCheck replaces the equality check with browserId when one server answers for
   *   many browsers (`fleet serve`).
   */
  constructor(
    readonly browserId: string,
    private readonly authenticate: ApiMiddleware,
    private readonly writeGuard?: () => ApiError | undefined,
    private readonly browserCheck?: BrowserCheck,
  ) {}

  add(def: RouteDef): void {
    if (this.routes.some(r => r.method === def.method && r.path === def.path)) {
      throw new Error(`route ${def.method} ${def.path} registered twice`)
    }
    if (this.routes.some(r => r.operationId === def.operationId))
      throw new Error(`operationId ${def.operationId} used twice`)
    this.routes.push(def)
    const chain: ApiMiddleware[] = [
      async (ctx, next) => {
        ctx.state.operationId = def.operationId
        if (def.skipApiCall) ctx.state.skipApiCall = true
        await next()
      },
    ]
    if (!def.public)
      chain.push(
        def.authenticate ? def.authenticate(this.authenticate) : this.authenticate,
        operation(def.operationId, def.scope) as unknown as ApiMiddleware,
      )
    // Routes that write (scope write/publish) are refused while the daemon is read-only (full disk).
    if (this.writeGuard && (def.scope === 'write' || def.scope === 'publish')) {
      const guard = this.writeGuard
      chain.push(async (ctx, next) => {
        const refusal = guard()
        if (refusal) throw refusal
        await next()
      })
    }
    if (/^\/browsers\/:id(\/|$)/.test(def.path)) chain.push(this.requireBrowser)
    // The documented query schemas are the validation: a handler reads ctx.state.query, never ctx.query.
    if (def.query) {
      const check = compileQuery(def.query)
      chain.push(async (ctx, next) => {
        ctx.state.query = check(ctx.query as RawQuery)
        await next()
      })
    }
    chain.push(...(def.middleware ?? []), def.handler)
    this.koa.register(def.path, [def.method], chain)
  }

  private readonly requireBrowser: ApiMiddleware = async (ctx, next) => {
    if (this.browserCheck) await this.browserCheck(ctx.params.id!)
    else if (ctx.params.id !== this.browserId) throw notFound(`browser ${JSON.stringify(ctx.params.id)} not found`)
    await next()
  }
}

/** The signature of every route group (telemetry, system, uploads, extensions, ingest). */
export type RegisterRoutes<D> = (router: ApiRouter, deps: D) => void
