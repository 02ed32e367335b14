// Performance traces on demand: start one, list them, download one (the Chrome trace-event JSON,
// gzipped, as Perfetto and the DevTools Performance panel open it). Recording and storage are
// src/perf's; these routes read the body and answer.
import { Type } from '@sinclair/typebox'
import type { PerfTraces } from '../../perf/perf-traces.js'
import { ErrorBodySchema } from '../schemas.js'
import { invalidInput, notFound } from '../errors.js'
import { jsonBody } from '../json-body.js'
import type { ApiRouter } from '../route-table.js'
import { ApiError } from '../errors.js'

export interface PerfTraceRouteDeps {
  perfTraces: PerfTraces
}

export const MAX_TRACE_DURATION_MS = 60_000
const CATEGORY_PATTERN = '^-?[A-Za-z0-9_.:*-]{1,200}$'

const StartBodySchema = Type.Object(
  {
    duration_ms: Type.Integer({ minimum: 1, maximum: MAX_TRACE_DURATION_MS, description: 'How long to trace' }),
    target_id: Type.Optional(
      Type.String({ description: 'An attached page to trace (its session); without it, the browser is traced' }),
    ),
    categories: Type.Optional(
      Type.Array(Type.String({ pattern: CATEGORY_PATTERN }), {
        minItems: 1,
        maxItems: 100,
        description: "Chromium trace categories (default: the DevTools Performance panel's, without screenshots)",
      }),
    ),
  },
  { additionalProperties: false, $id: 'StartPerfTrace' },
)

const PerfTraceSchema = Type.Object(
  {
    trace_id: Type.String(),
    state: Type.Union([Type.Literal('recording'), Type.Literal('ready'), Type.Literal('failed')]),
    started_at: Type.String({ format: 'date-time' }),
    ended_at: Type.Optional(Type.String({ format: 'date-time' })),
    duration_ms: Type.Integer(),
    target_id: Type.Optional(Type.String()),
    categories: Type.Array(Type.String()),
    bytes: Type.Optional(Type.Integer({ description: 'Size of the gzip file (ready traces)' })),
    data_loss: Type.Optional(Type.Boolean({ description: "Chromium's trace buffer overflowed: events are missing" })),
    error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
  },
  { $id: 'PerfTrace' },
)
const TRACE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const FIELDS = ['duration_ms', 'target_id', 'categories']

export function registerPerfTraceRoutes(router: ApiRouter, deps: PerfTraceRouteDeps): void {
  router.add({
    method: 'POST',
    path: '/browsers/:id/telemetry/perf-traces',
    operationId: 'startBrowserPerfTrace',
    summary: 'Record a performance trace',
    description:
      'Starts a Chromium performance trace for duration_ms (1 to 60000) of the whole browser or of one page ' +
      '(target_id) and answers 202 {trace_id}. One trace runs at a time (409 while one records). Telemetry capture goes on ' +
      'meanwhile. When it ends, perf_trace_recorded is stored and GET .../perf-traces/{trace_id} serves the file.',
    scope: 'write',
    requestBody: { contentType: 'application/json', schema: StartBodySchema, required: true },
    responses: {
      202: { description: 'Recording', schema: Type.Object({ trace_id: Type.String() }) },
      404: { description: 'target_id is not an attached page (not_found)', schema: ErrorBodySchema },
      409: { description: 'A trace is already recording (conflict)', schema: ErrorBodySchema },
      503: { description: 'The daemon has no browser (unavailable)', schema: ErrorBodySchema },
    },
    middleware: [startBody],
    handler: ctx => {
      const b = startRequest(ctx.request.body)
      const info = deps.perfTraces.start(b)
      ctx.status = 202
      ctx.set('Location', `/browsers/${encodeURIComponent(ctx.params.id!)}/telemetry/perf-traces/${info.trace_id}`)
      ctx.body = { trace_id: info.trace_id }
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/perf-traces',
    operationId: 'listBrowserPerfTraces',
    summary: 'List the performance traces',
    description:
      'Kept traces oldest first (state ready), then recent failures, then the one recording. The store keeps ' +
      '--perf-trace-keep traces and --perf-trace-store-bytes bytes at most; the oldest go first.',
    scope: 'read',
    responses: { 200: { description: 'The traces', schema: Type.Array(PerfTraceSchema) } },
    handler: ctx => {
      ctx.body = deps.perfTraces.list()
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/perf-traces/:trace_id',
    operationId: 'getBrowserPerfTrace',
    summary: 'Download a performance trace',
    description:
      'While it records: 202 with its state. Then 200 application/gzip: the Chrome trace-event JSON ' +
      '({"traceEvents": [...]}) that Perfetto and the DevTools Performance panel open. A failed trace answers 422 ' +
      '(perf_trace_failed) with why; an unknown or removed one 404.',
    scope: 'read',
    responses: {
      200: {
        description: 'The trace, gzipped JSON',
        contentType: 'application/gzip',
        schema: Type.String({ format: 'binary' }),
      },
      202: { description: 'Still recording', schema: PerfTraceSchema },
      404: { description: 'Unknown, or removed by the store bound (not_found)', schema: ErrorBodySchema },
      422: { description: 'The trace failed (perf_trace_failed)', schema: ErrorBodySchema },
    },
    handler: async ctx => {
      const id = String(ctx.params.trace_id)
      if (!TRACE_ID.test(id)) throw invalidInput('trace_id', `expected a trace id (UUID), got ${JSON.stringify(id)}`)
      const info = deps.perfTraces.get(id)
      if (!info) throw notFound(`performance trace ${id} not found (never recorded, or removed by the store bound)`)
      if (info.state === 'recording') {
        ctx.status = 202
        ctx.set('Retry-After', '1')
        ctx.body = info
        return
      }
      if (info.state === 'failed')
        throw new ApiError(422, 'perf_trace_failed', `performance trace ${id} failed: ${info.error?.message ?? ''}`)
      const file = await deps.perfTraces.open(id)
      if (!file) throw notFound(`performance trace ${id} was removed by the store bound`)
      ctx.status = 200
      ctx.type = 'application/gzip'
      ctx.length = info.bytes!
      ctx.set('Content-Disposition', `attachment; filename="perf-trace-${id}.json.gz"`)
      ctx.set('Cache-Control', 'private, max-age=31536000, immutable')
      ctx.body = file
    },
  })
}

function startRequest(body: unknown) {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidInput('body', 'expected a JSON object')
  const b = body as Record<string, unknown>
  for (const k of Object.keys(b))
    if (!FIELDS.includes(k)) throw invalidInput(k, `unknown field (allowed: ${FIELDS.join(', ')})`)
  const d = b.duration_ms
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > MAX_TRACE_DURATION_MS)
    throw invalidInput(
      'duration_ms',
      `expected an integer from 1 to ${MAX_TRACE_DURATION_MS}, got ${JSON.stringify(d)}`,
    )
  if (b.target_id !== undefined && (typeof b.target_id !== 'string' || b.target_id === '' || b.target_id.length > 128))
    throw invalidInput('target_id', 'expected a target id')
  let categories: string[] | undefined
  if (b.categories !== undefined) {
    const c = b.categories
    if (!Array.isArray(c) || c.length === 0 || c.length > 100)
      throw invalidInput('categories', 'expected an array of 1 to 100 category names')
    const pattern = new RegExp(CATEGORY_PATTERN)
    for (const name of c)
      if (typeof name !== 'string' || !pattern.test(name))
        throw invalidInput('categories', `not a trace category name: ${JSON.stringify(name)}`)
    categories = c as string[]
  }
  return {
    durationMs: d,
    ...(b.target_id !== undefined ? { targetId: b.target_id as string } : {}),
    ...(categories ? { categories } : {}),
  }
}

const startBody = jsonBody({
  limit: '16kb',
  requireJsonType: 'send the trace request as JSON with Content-Type: application/json',
})
