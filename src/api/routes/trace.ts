// GET /browsers/{id}/telemetry/trace.zip: a Playwright trace of a window, streamed (src/trace), and
// POST /browsers/{id}/telemetry/trace-links: a signed, expiring URL of one such trace that a viewer
// in another origin can fetch (trace-links.ts). The trace route takes the bearer token or that link;
// no other route takes a link.
import { Type } from '@sinclair/typebox'
import type { Logger } from '../../log.js'
import { silentLogger } from '../../log.js'
import {
  buildTrace,
  DEFAULT_TRACE_LIMITS,
  traceFileName,
  type TraceLimits,
  type TraceSource,
  type TraceWindow,
} from '../../trace/index.js'
import { invalidInput } from '../errors.js'
import { jsonBody } from '../json-body.js'
import type { ApiContext, ApiMiddleware, ApiRouter } from '../route-table.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'
import { ExportSlots, sendZipInSlot } from '../zip-response.js'
import { DEFAULT_SETTINGS } from '../../defaults.js'
import {
  LINK_ID_PATTERN,
  LINK_PARAM,
  LINK_TTL_DEFAULT_S,
  LINK_TTL_MAX_S,
  MAX_REVOKED_LINKS,
  newLinkId,
  TraceLinkRevocations,
  type TraceLinkSigner,
} from '../trace-links.js'
import { ErrorBodySchema } from '../schemas.js'

export interface TraceRouteDeps {
  source: TraceSource
  signer: TraceLinkSigner
  /** Revoked link ids (default: in memory, which suits a signer whose key dies with the process). */
  revocations?: TraceLinkRevocations
  /** Origins allowed to read a trace through a link (Access-Control-Allow-Origin). */
  corsOrigins: readonly string[]
  limits?: TraceLimits
  logger?: Logger
  /** Unix microseconds (tests pin it). */
  now?: () => number
  /** Exports built at once, shared with the bundle (default: this route's own, --export-max-concurrent's default). */
  slots?: ExportSlots
}

export const PLAYWRIGHT_VIEWER = 'https://trace.playwright.dev'

const TARGET_PARAM = {
  schema: Type.String({ minLength: 1, maxLength: 128 }),
  description: "Only this target's pages, requests, console and frames",
}

const LinkBodySchema = Type.Object(
  {
    since: Type.Optional(Type.String({ description: 'As for the events API (default 5m)' })),
    until: Type.Optional(Type.String({ description: 'As for the events API (default: now)' })),
    target_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: LINK_TTL_MAX_S, default: LINK_TTL_DEFAULT_S, description: 'Link lifetime' }),
    ),
  },
  { additionalProperties: false, $id: 'TraceLinkRequest' },
)
const LinkSchema = Type.Object(
  {
    url: Type.String({ description: 'GET this for the trace (no token needed; expires)' }),
    viewer_url: Type.String({ description: 'The trace opened in https://trace.playwright.dev' }),
    expires_at: Type.String({ format: 'date-time' }),
    link_id: Type.String({ description: 'Names the link for revokeBrowserTelemetryTraceLink' }),
  },
  { $id: 'TraceLink' },
)
const LINK_FIELDS = ['since', 'until', 'target_id', 'ttl_seconds']

/** The deps with their defaults filled in, which every handler shares. */
interface TraceRoutes {
  deps: TraceRouteDeps
  logger: Logger
  now: () => number
  revocations: TraceLinkRevocations
  slots: ExportSlots
}

export function registerTraceRoutes(router: ApiRouter, deps: TraceRouteDeps): void {
  const r: TraceRoutes = {
    deps,
    logger: deps.logger ?? silentLogger,
    now: deps.now ?? (() => Date.now() * 1000),
    revocations: deps.revocations ?? TraceLinkRevocations.inMemory(),
    slots: deps.slots ?? new ExportSlots(DEFAULT_SETTINGS.exportMaxConcurrent),
  }

  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/trace.zip',
    operationId: 'downloadBrowserTelemetryTrace',
    summary: 'Download a Playwright trace (zip) of a time window',
    description:
      'A trace the Playwright trace viewer opens (format version 8: trace.trace, trace.network, resources/), streamed: ' +
      "the agent's steps and actions, the recording's frames (else the screenshots) as the film strip, every request as " +
      'a HAR entry with its captured body, console messages, uncaught errors with their stacks, navigations, dialogs, ' +
      'downloads and crashes. since/until as in readBrowserTelemetryEvents (default since: 5m); target_id keeps one ' +
      `target. Authenticated by the bearer token, or by a signed link (?${LINK_PARAM}=, from createBrowserTelemetryTraceLink), ` +
      'which fixes the window and answers CORS for the configured viewer origins.',
    scope: 'read',
    authenticate: linkOrBearer(r),
    query: {
      since: EVENTS_QUERY.since,
      until: EVENTS_QUERY.until,
      target_id: TARGET_PARAM,
      [LINK_PARAM]: { schema: Type.String({ maxLength: 2048 }), description: 'A signed trace link credential' },
    },
    responses: {
      200: {
        description: 'The zip (no Content-Length: it is streamed)',
        contentType: 'application/zip',
        schema: Type.String({ format: 'binary' }),
      },
      429: {
        description:
          'As many trace and bundle exports as --export-max-concurrent are being built (too_many_requests; Retry-After)',
        schema: ErrorBodySchema,
      },
    },
    handler: downloadTrace(r),
  })

  // A preflight carries no credential: it only says which origins may read (and, for a page on the
  // internet reaching a daemon on a private address, that Chromium may let it: Private Network Access).
  router.koa.options('/browsers/:id/telemetry/trace.zip', preflight(r))

  router.add({
    method: 'POST',
    path: '/browsers/:id/telemetry/trace-links',
    operationId: 'createBrowserTelemetryTraceLink',
    summary: 'Make a signed, expiring link to the Playwright trace of a window',
    description:
      'Answers {url, viewer_url, expires_at, link_id}. url fetches the trace of that window (and target) with a signed read-only ' +
      `credential in the query, valid until expires_at (ttl_seconds, default ${LINK_TTL_DEFAULT_S}, at most ${LINK_TTL_MAX_S}) ` +
      'or until link_id is revoked (revokeBrowserTelemetryTraceLink), and for nothing else; ' +
      'the bearer token never goes into it. Links die when the signing key changes (a restart without a configured ' +
      `--trace-link-key-file). viewer_url opens it in ${PLAYWRIGHT_VIEWER}. The window is fixed when the link is made ` +
      '(until defaults to now).',
    scope: 'read',
    requestBody: { contentType: 'application/json', schema: LinkBodySchema, required: false },
    responses: { 201: { description: 'The link', schema: LinkSchema } },
    middleware: [optionalLinkBody],
    handler: createLink(r),
  })

  router.add({
    method: 'DELETE',
    path: '/browsers/:id/telemetry/trace-links/:link_id',
    operationId: 'revokeBrowserTelemetryTraceLink',
    summary: 'Revoke one trace link before it expires',
    description:
      'The link named by link_id (from createBrowserTelemetryTraceLink) is refused from now on (401, ' +
      '"trace link refused: the link was revoked"); other links keep working. Idempotent: 204 whether or not the id ' +
      `was revoked before. Revocations outlive a restart (they are kept in the data dir for ${LINK_TTL_MAX_S} s, ` +
      'the longest a link lives). To end every link at once, change the link key.',
    scope: 'write',
    responses: {
      204: { description: 'Revoked' },
      429: {
        description: `${MAX_REVOKED_LINKS} links are revoked and not yet expired (too_many_requests; Retry-After)`,
        schema: ErrorBodySchema,
      },
    },
    handler: revokeLink(r),
  })
}

/** A signed link authenticates this route only, for reading the one window it names. */
function linkOrBearer(r: TraceRoutes): (bearer: ApiMiddleware) => ApiMiddleware {
  const { deps, now, revocations } = r
  return bearer => async (ctx, next) => {
    const link = ctx.query[LINK_PARAM]
    if (link === undefined) return bearer(ctx, next)
    const origin = ctx.get('origin')
    if (origin && deps.corsOrigins.includes(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin)
      ctx.set('Access-Control-Expose-Headers', 'Content-Disposition')
    }
    ctx.set('Vary', 'Origin')
    ctx.state.authRejected = true
    if (typeof link !== 'string') throw invalidInput(LINK_PARAM, 'give one link')
    const grant = deps.signer.verify(link, ctx.params.id!, now(), revocations)
    for (const p of ['since', 'until', 'target_id'])
      if (ctx.query[p] !== undefined) throw invalidInput(p, 'a link fixes the window; leave this out')
    ctx.state.scopes = new Set(['read'])
    ctx.state.tokenName = 'trace-link'
    ctx.state.authRejected = false
    ;(ctx.state as { traceWindow?: TraceWindow }).traceWindow = {
      sinceUs: grant.sinceUs,
      untilUs: grant.untilUs,
      ...(grant.targetId !== undefined ? { targetId: grant.targetId } : {}),
    }
    await next()
  }
}

/** GET …/trace.zip: the window of the link, else of the query, streamed in an export slot. */
function downloadTrace(r: TraceRoutes): ApiMiddleware {
  const { deps, now, slots, logger } = r
  return async ctx => {
    const nowUs = now()
    const window = (ctx.state as { traceWindow?: TraceWindow }).traceWindow ?? windowOfQuery(ctx.state.query!, nowUs)
    const start = () =>
      buildTrace(deps.source, window, deps.limits ?? DEFAULT_TRACE_LIMITS, () => new Date(nowUs / 1000))
    void sendZipInSlot(ctx, slots, start, traceFileName(deps.source.browserId, new Date(nowUs / 1000)), logger, 'trace')
  }
}

/** OPTIONS …/trace.zip: the CORS preflight of a viewer fetching through a link. */
function preflight(r: TraceRoutes): (ctx: ApiContext) => void {
  const { deps } = r
  return (ctx: ApiContext) => {
    const origin = ctx.get('origin')
    if (origin && deps.corsOrigins.includes(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin)
      ctx.set('Access-Control-Allow-Methods', 'GET')
      ctx.set('Access-Control-Max-Age', '600')
      if (ctx.get('access-control-request-private-network') === 'true')
        ctx.set('Access-Control-Allow-Private-Network', 'true')
    }
    ctx.set('Vary', 'Origin')
    ctx.status = 204
  }
}

/** POST …/trace-links: a signed link to the window (until defaults to now). */
function createLink(r: TraceRoutes): ApiMiddleware {
  const { deps, now } = r
  return ctx => {
    const nowUs = now()
    const b = linkBody(ctx.request.body)
    const read = readQueryOf({ order: 'asc', limit: 1, since: b.since, until: b.until }, nowUs)
    const ttl = b.ttl_seconds ?? LINK_TTL_DEFAULT_S
    const expUs = nowUs + ttl * 1_000_000
    const linkId = newLinkId()
    const credential = deps.signer.sign({
      linkId,
      browserId: ctx.params.id!,
      sinceUs: read.sinceUs!,
      untilUs: read.untilUs ?? nowUs,
      expUs,
      ...(b.target_id !== undefined ? { targetId: b.target_id } : {}),
    })
    const url = `${ctx.protocol}://${ctx.host}/browsers/${encodeURIComponent(ctx.params.id!)}/telemetry/trace.zip?${LINK_PARAM}=${credential}`
    ctx.status = 201
    ctx.body = {
      url,
      viewer_url: `${PLAYWRIGHT_VIEWER}/?trace=${encodeURIComponent(url)}`,
      expires_at: new Date(expUs / 1000).toISOString(),
      link_id: linkId,
    }
  }
}

/** DELETE …/trace-links/:link_id: the id is refused from now on. */
function revokeLink(r: TraceRoutes): ApiMiddleware {
  const { revocations, now } = r
  return async ctx => {
    const id = String(ctx.params.link_id)
    if (!LINK_ID_PATTERN.test(id))
      throw invalidInput(
        'link_id',
        `expected the link_id of a link (22 base64url characters), got ${JSON.stringify(id.slice(0, 64))}`,
      )
    await revocations.revoke(id, now())
    ctx.status = 204
  }
}

function windowOfQuery(q: NonNullable<ApiContext['state']['query']>, nowUs: number): TraceWindow {
  const read = readQueryOf({ ...q, order: 'asc', limit: 1 }, nowUs)
  return {
    sinceUs: read.sinceUs!,
    ...(read.untilUs !== undefined ? { untilUs: read.untilUs } : {}),
    ...(typeof q.target_id === 'string' ? { targetId: q.target_id } : {}),
  }
}

function linkBody(body: unknown): { since?: string; until?: string; target_id?: string; ttl_seconds?: number } {
  if (body === undefined) return {}
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidInput('body', 'expected a JSON object')
  const b = body as Record<string, unknown>
  for (const k of Object.keys(b))
    if (!LINK_FIELDS.includes(k)) throw invalidInput(k, `unknown field (allowed: ${LINK_FIELDS.join(', ')})`)
  for (const k of ['since', 'until', 'target_id'])
    if (b[k] !== undefined && (typeof b[k] !== 'string' || b[k] === '')) throw invalidInput(k, 'expected a string')
  if (
    b.ttl_seconds !== undefined &&
    (typeof b.ttl_seconds !== 'number' ||
      !Number.isInteger(b.ttl_seconds) ||
      b.ttl_seconds < 1 ||
      b.ttl_seconds > LINK_TTL_MAX_S)
  )
    throw invalidInput('ttl_seconds', `expected a whole number of seconds from 1 to ${LINK_TTL_MAX_S}`)
  return b as { since?: string; until?: string; target_id?: string; ttl_seconds?: number }
}

/** The body may be left out (the last 5 minutes, 900 s). */
const optionalLinkBody = jsonBody({
  limit: '16kb',
  requireJsonType: 'send the link request as JSON (Content-Type: application/json)',
  optional: true,
})
