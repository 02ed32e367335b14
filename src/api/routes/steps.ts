// The agent's steps over HTTP: start one (optionally in the agent's trace, nested, or bound to one
// CDP proxy connection), end it. The registry (src/agent/) holds the rules; these routes only read
// the body and answer. Like publishing events, this is telemetry plumbing: no api_call per step.
// The answer does not wait for the group commit (up to its delay, 25 ms by default): an agent marks
// steps on its own critical path, and the seq it gets is the one the event is stored under.
import { Type } from '@sinclair/typebox'
import type { StepRegistry } from '../../agent/step-registry.js'
import { TRACEPARENT_PATTERN } from '../../events/index.js'
import { invalidInput } from '../errors.js'
import { jsonBody } from '../json-body.js'
import type { ApiRouter } from '../route-table.js'

export interface StepRouteDeps {
  steps: StepRegistry
}

const AttributesSchema = Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
  maxProperties: 64,
  description: 'Flat attributes (at most 64 keys, 4 KiB as JSON; 413 above), redacted like every event',
})

export const StartStepBodySchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 256, description: 'What the agent is doing ("log in")' }),
    attributes: Type.Optional(AttributesSchema),
    parent_step_id: Type.Optional(Type.String({ description: 'An open step this one is nested in' })),
    connection_id: Type.Optional(
      Type.String({
        description:
          "An open CDP proxy connection (cdp_connect's connection_id): the step covers only its commands; without it, every connection's",
      }),
    ),
    traceparent: Type.Optional(
      Type.String({
        pattern: TRACEPARENT_PATTERN,
        description: "W3C traceparent: the step becomes a child of the agent's span",
      }),
    ),
  },
  { additionalProperties: false, $id: 'StartAgentStep' },
)

export const EndStepBodySchema = Type.Object(
  {
    outcome: Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('error')], { default: 'ok' })),
    error_message: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false, $id: 'EndAgentStep' },
)

const StartedSchema = Type.Object(
  {
    step_id: Type.String(),
    seq: Type.Optional(
      Type.Integer({ description: 'seq of the stored agent_step_started (absent when the control category is off)' }),
    ),
  },
  { $id: 'AgentStepStarted' },
)
const EndedSchema = Type.Object(
  { seq: Type.Optional(Type.Integer({ description: 'seq of the stored agent_step_finished' })) },
  { $id: 'AgentStepFinished' },
)

const START_FIELDS = ['name', 'attributes', 'parent_step_id', 'connection_id', 'traceparent']
const END_FIELDS = ['outcome', 'error_message']

export function registerStepRoutes(router: ApiRouter, deps: StepRouteDeps): void {
  router.add({
    method: 'POST',
    path: '/browsers/:id/telemetry/steps',
    operationId: 'startBrowserAgentStep',
    summary: "Start one of the agent's steps",
    description:
      'Stores agent_step_started and answers 201 {step_id, seq}. Until it ends, cdp_command events of the connection it names ' +
      '(every connection when it names none) carry its step_id (the innermost open step). A step left open is finished as ' +
      'abandoned when its connection closes, after 30 minutes, or at shutdown. 404 for an unknown parent or connection, ' +
      '409 for a finished parent, 429 with 1000 steps open.',
    scope: 'publish',
    skipApiCall: true,
    requestBody: { contentType: 'application/json', schema: StartStepBodySchema, required: true },
    responses: { 201: { description: 'The step started', schema: StartedSchema } },
    middleware: [stepBody],
    handler: ctx => {
      const b = objectBody(ctx.request.body, START_FIELDS)
      const started = deps.steps.start('http', {
        name: b.name,
        attributes: b.attributes,
        parentStepId: b.parent_step_id,
        connectionId: b.connection_id,
        traceparent: b.traceparent,
      })
      ctx.status = 201
      ctx.body = { step_id: started.stepId, ...(started.seq !== undefined ? { seq: started.seq } : {}) }
    },
  })

  router.add({
    method: 'POST',
    path: '/browsers/:id/telemetry/steps/:step_id/end',
    operationId: 'endBrowserAgentStep',
    summary: "End one of the agent's steps",
    description:
      'Stores agent_step_finished with its outcome and duration_ms (open nested steps are finished first, as abandoned). ' +
      '404 for an unknown step, 409 for one already finished.',
    scope: 'publish',
    skipApiCall: true,
    requestBody: { contentType: 'application/json', schema: EndStepBodySchema, required: false },
    responses: { 200: { description: 'The step finished', schema: EndedSchema } },
    middleware: [optionalStepBody],
    handler: ctx => {
      const b = ctx.request.body === undefined ? {} : objectBody(ctx.request.body, END_FIELDS)
      const ended = deps.steps.end(ctx.params.step_id, { outcome: b.outcome, errorMessage: b.error_message })
      ctx.status = 200
      ctx.body = ended.seq !== undefined ? { seq: ended.seq } : {}
    },
  })
}

function objectBody(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidInput('body', 'expected a JSON object')
  for (const k of Object.keys(body))
    if (!fields.includes(k)) throw invalidInput(k, `unknown field (allowed: ${fields.join(', ')})`)
  return body as Record<string, unknown>
}

const stepBody = jsonBody({
  limit: '64kb',
  requireJsonType: 'send the step as JSON with Content-Type: application/json',
})
/** Ending a step may carry no body at all (outcome ok). */
const optionalStepBody = jsonBody({
  limit: '64kb',
  requireJsonType: 'send the step as JSON with Content-Type: application/json',
  optional: true,
})
