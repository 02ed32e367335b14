// POST /browsers/{id}/telemetry/events: one event from an in-VM producer (the live view server, a
// captcha solver, an extension) enters through the same emit() pipeline as everything else.
//
// Decisions (documented in the OpenAPI description too):
// - `ts` from the producer is NOT the envelope ts: the pipeline stamps ts on acceptance so ts stays
//   non-decreasing in seq order (a time window seeks by position). The producer's value is kept as
//   `source.metadata.producer_ts` (decimal string, as the producer meant it: Unix microseconds).
// - The monitor category and api_call are emitted only by the daemon itself (monitor state machine,
//   API middleware); a producer cannot inject them. `source.kind` may not be `kernel_api` or `cdp` (kinds the
//   daemon owns); `source.metadata.published_by` records the publishing token's name.
// - captcha_solve_result: `captcha_type` `press_and_hold` (the solver's kind beyond the document's
//   list) is stored as `other`, with `source.metadata.captcha_type` `press_and_hold`; `error_code` is
//   required when status is `failure` (documented: "an error_code accompanies it") and rejected when
//   status is `success`. Every captcha event's `website_path` is a path only (no `?`/`#`).
// - Optional string fields may not be "": absent means absent.
// - No api_call for this route: it is telemetry plumbing like the reads and the stream, and a
//   producer publishing every live-view blip would otherwise double the log with control events.
import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import {
  EnvelopeSchema,
  EVENT_TYPES,
  SourceSchema,
  categoryOf,
  isEventType,
  validateData,
  type EventData,
  type EventType,
  type Source,
} from '../../events/index.js'
import type { EventInput, Pipeline } from '../../pipeline/pipeline.js'
import { ApiError, invalidInput } from '../errors.js'
import { jsonBody } from '../json-body.js'
import type { ApiRouter } from '../route-table.js'

export interface IngestRouteDeps {
  pipeline: Pipeline
  /** Informational (the router itself answers 404 for another browser id). */
  browserId?: string
}

const FIELDS = ['type', 'category', 'source', 'data', 'ts'] as const
/** Types only the daemon itself emits. */
const DAEMON_ONLY = new Set<EventType>(
  EVENT_TYPES.filter(t => categoryOf(t) === 'monitor' || categoryOf(t) === 'control'),
)
/** Source kinds only the daemon itself produces: a published event can never pass for a captured one. */
const DAEMON_SOURCE_KINDS = new Set(['kernel_api', 'cdp'])
const INGESTIBLE = EVENT_TYPES.filter(t => !DAEMON_ONLY.has(t))

export const IngestBodySchema = Type.Object(
  {
    type: Type.Union(
      INGESTIBLE.map(t => Type.Literal(t)),
      { description: 'Event type; fixes the category' },
    ),
    category: Type.Optional(Type.String({ description: 'If given, must be the category of the type' })),
    source: SourceSchema,
    data: Type.Object(
      {},
      { additionalProperties: true, description: 'The data object of the type (see TelemetryEvent)' },
    ),
    ts: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Producer time, Unix microseconds; kept as source.metadata.producer_ts (the envelope ts is stamped by the daemon)',
      }),
    ),
  },
  { additionalProperties: false, $id: 'PublishTelemetryEvent' },
)

const sourceCheck = TypeCompiler.Compile(SourceSchema)

export function registerIngestRoutes(router: ApiRouter, deps: IngestRouteDeps): void {
  router.add({
    method: 'POST',
    path: '/browsers/:id/telemetry/events',
    operationId: 'publishBrowserTelemetryEvent',
    summary: 'Publish one telemetry event from an in-VM producer',
    description:
      'Validates one event against the event model and passes it through the pipeline. 200 with the committed envelope; ' +
      '204 when the category is disabled (nothing stored). The envelope ts is stamped by the daemon (non-decreasing); a producer ts is kept ' +
      "as source.metadata.producer_ts. monitor_* and control events (api_call, capture_config_changed) cannot be published; source.kind may not be kernel_api or cdp (daemon-owned); source.metadata.published_by is set to the publishing token's name. captcha_solve_result: " +
      'error_code required on failure, rejected on success; captcha_type press_and_hold stored as other with source.metadata.captcha_type; every captcha event: website_path without query string.',
    scope: 'publish',
    skipApiCall: true,
    requestBody: { contentType: 'application/json', schema: IngestBodySchema, required: true },
    responses: {
      200: { description: 'The committed envelope', schema: EnvelopeSchema },
      204: { description: 'The category is disabled: nothing stored' },
    },
    middleware: [eventBody],
    handler: async ctx => {
      // The route checks what only a producer can get wrong; the event model is checked once, by emit().
      const input = parseIngestBody(ctx.request.body, ctx.state.tokenName)
      const emitted = deps.pipeline.emit(input)
      if (emitted.dropped === 'category_disabled') {
        // emit() gates before it validates; bad input is still a 400 when the category is off.
        const issue = validateData(input.type, input.data)[0]
        if (issue) throw invalidInput(fieldOf(issue.path), issue.message)
        ctx.status = 204
        return
      }
      if (emitted.dropped !== undefined) {
        const issue = emitted.issues?.[0]
        throw invalidInput(
          issue ? fieldOf(issue.path) : 'body',
          issue?.message ?? `rejected by the event pipeline (${emitted.dropped})`,
        )
      }
      if (!(await emitted.committed)) {
        throw new ApiError(503, 'unavailable', 'the event log could not store the event; retry later')
      }
      ctx.status = 200
      ctx.body = emitted.envelope
    },
  })
}

/**
 * Checks a publish body's producer rules (known fields, type, category, source, producer ts, no "",
 * captcha rules) and shapes it into an EventInput, or throws a 400 naming the offending field. The
 * data object's schema is checked by emit(), which reports it as `invalid` with its issues.
 */
export function parseIngestBody(body: unknown, publishedBy?: string): EventInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidInput('body', 'expected a JSON object {type, category?, source, data, ts?}')
  }
  const b = body as Record<string, unknown>
  for (const key of Object.keys(b)) {
    if (!(FIELDS as readonly string[]).includes(key))
      throw invalidInput(key, `unknown field (allowed: ${FIELDS.join(', ')})`)
  }
  const type = b.type
  if (typeof type !== 'string' || !isEventType(type))
    throw invalidInput('type', `unknown event type ${JSON.stringify(type)}`)
  if (DAEMON_ONLY.has(type)) throw invalidInput('type', `${type} is emitted only by the daemon itself`)
  const category = categoryOf(type)
  if (b.category !== undefined && b.category !== category) {
    throw invalidInput('category', `must be "${category}" for ${type} (the category is fixed by the type)`)
  }
  if (b.source === undefined) throw invalidInput('source', 'required: an object like {"kind": "local_process"}')
  if (!sourceCheck.Check(b.source)) {
    const e = [...sourceCheck.Errors(b.source)][0]!
    throw invalidInput(fieldOf('/source' + e.path), e.message)
  }
  let source = b.source as Source
  if (DAEMON_SOURCE_KINDS.has(source.kind)) {
    throw invalidInput(
      'source.kind',
      `${source.kind} is reserved for events the daemon captures itself (publish as extension or local_process)`,
    )
  }
  if (source.metadata?.published_by !== undefined)
    throw invalidInput('source.metadata.published_by', "set by the daemon (the publishing token's name)")
  // Which token published it: stored with the event, so an audit can tell producers apart.
  if (publishedBy !== undefined) source = { ...source, metadata: { ...source.metadata, published_by: publishedBy } }
  if (b.ts !== undefined) {
    if (typeof b.ts !== 'number' || !Number.isSafeInteger(b.ts) || b.ts < 0) {
      throw invalidInput('ts', 'expected Unix time in microseconds (a non-negative integer)')
    }
    source = { ...source, metadata: { ...source.metadata, producer_ts: String(b.ts) } }
  }
  if (b.data === undefined) throw invalidInput('data', 'required: the data object of the event type')
  checkData(type, b.data)
  let data = b.data as Record<string, unknown>
  // The service document lists captcha_solve_result's kinds, `other` covering anything unmatched: a
  // kind of the solver's beyond them is stored as `other`, and the solver's own name kept in the source.
  if (type === 'captcha_solve_result' && data.captcha_type === 'press_and_hold') {
    data = { ...data, captcha_type: 'other' }
    source = { ...source, metadata: { ...source.metadata, captcha_type: 'press_and_hold' } }
  }
  return { type, data, source } as EventInput
}

function checkData(type: EventType, data: unknown): void {
  if (data !== null && typeof data === 'object' && !Array.isArray(data)) {
    for (const [k, v] of Object.entries(data)) {
      if (v === '') throw invalidInput(`data.${k}`, 'must not be empty (omit the field instead)')
    }
    if (categoryOf(type) === 'captcha') checkCaptchaPath(data as { website_path?: unknown })
    if (type === 'captcha_solve_result') checkCaptcha(data as Partial<EventData<'captcha_solve_result'>>)
  }
}

function checkCaptchaPath(d: { website_path?: unknown }): void {
  if (typeof d.website_path === 'string' && /[?#]/.test(d.website_path)) {
    throw invalidInput(
      'data.website_path',
      'must be a path without a query string or fragment (drop everything from "?" or "#")',
    )
  }
}

function checkCaptcha(d: Partial<EventData<'captcha_solve_result'>>): void {
  if (d.status === 'success' && d.error_code !== undefined) {
    throw invalidInput('data.error_code', 'not allowed when status is "success"')
  }
  if (d.status === 'failure' && d.error_code === undefined) {
    throw invalidInput('data.error_code', 'required when status is "failure" (the solver\'s error code)')
  }
}

/** JSON pointer (/data/website_path) -> the field name a producer reads (data.website_path). */
function fieldOf(pointer: string): string {
  const f = pointer.replace(/^\//, '').split('/').filter(Boolean).join('.')
  return f === '' ? 'body' : f
}

// Bigger than the envelope cap would be pointless: the pipeline truncates to it anyway.
const eventBody = jsonBody({
  limit: '2mb',
  requireJsonType: 'send the event as JSON with Content-Type: application/json',
})
