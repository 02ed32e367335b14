// TypeBox schemas of the API's own bodies (error object, capture config, health). Event schemas
// come from src/events; both feed the router's validation and the OpenAPI document.
import { Type, type Static } from '@sinclair/typebox'
import { ACTION_KINDS } from '../actions/index.js'
import { CONFIGURABLE_CATEGORIES } from '../events/index.js'

export const ErrorDetailSchema = Type.Object({ code: Type.String(), message: Type.String() }, { $id: 'ErrorDetail' })
export const ErrorBodySchema = Type.Object(
  {
    code: Type.String({
      description: 'Machine-readable error code (bad_request, unauthorized, forbidden, not_found, internal, ...)',
    }),
    message: Type.String({ description: 'Human-readable description' }),
    details: Type.Optional(Type.Array(ErrorDetailSchema)),
    inner_error: Type.Optional(ErrorDetailSchema),
  },
  { $id: 'Error' },
)

export const CategoryConfigSchema = Type.Object(
  { enabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, $id: 'BrowserTelemetryCategoryConfig' },
)
/** `{browser: {<category>: {enabled}}}`: every configurable category; `monitor` is not one (it follows the capture rule). */
export const TelemetryConfigSchema = Type.Object(
  {
    browser: Type.Optional(
      Type.Object(Object.fromEntries(CONFIGURABLE_CATEGORIES.map(c => [c, Type.Optional(CategoryConfigSchema)])), {
        additionalProperties: false,
        $id: 'BrowserTelemetryCategoriesConfig',
      }),
    ),
    recording: Type.Optional(
      Type.Object(
        { enabled: Type.Optional(Type.Boolean()) },
        {
          additionalProperties: false,
          $id: 'BrowserRecordingConfig',
          description:
            'Screen recording of the visible pages (frames in their own store, read with /browsers/{id}/recording/frames); off unless --recording',
        },
      ),
    ),
    mask_typed_keys: Type.Optional(
      Type.Object(
        { enabled: Type.Optional(Type.Boolean()) },
        {
          additionalProperties: false,
          $id: 'BrowserMaskTypedKeysConfig',
          description:
            'Printable keys stored in interaction_key without their value ([redacted:8]); named keys, modifiers and shortcuts stay; off unless --mask-typed-keys',
        },
      ),
    ),
  },
  { additionalProperties: false, $id: 'BrowserTelemetryConfig' },
)
export type TelemetryConfig = {
  browser?: Partial<Record<(typeof CONFIGURABLE_CATEGORIES)[number], { enabled?: boolean }>>
  recording?: { enabled?: boolean }
  mask_typed_keys?: { enabled?: boolean }
}

export const HealthSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
    reason: Type.Optional(
      Type.String({ description: 'Why the daemon is degraded (e.g. the data disk is full: read-only)' }),
    ),
    browser_id: Type.String(),
    version: Type.String(),
    uptime_s: Type.Number(),
    warnings: Type.Array(Type.String(), {
      description:
        "What weakens the isolation of this deployment (Chromium without its sandbox or as the daemon's user, the API beyond loopback without TLS in front); empty when nothing does; never affects status",
    }),
    store: Type.Object({
      writable: Type.Boolean(),
      writeFailures: Type.Integer(),
      lastWriteError: Type.Optional(Type.String()),
      droppedEvents: Type.Integer(),
      pendingEvents: Type.Integer(),
      firstSeq: Type.Integer(),
      lastSeq: Type.Integer(),
      syncedWrites: Type.Integer({ description: 'Writes made with fsync (seq reservations, periodic sync)' }),
    }),
    monitor: Type.Unknown({
      description: 'State of the CDP monitor (collecting, disconnected, failed, disabled, ...)',
    }),
    streams: Type.Object({ open: Type.Integer(), slowDisconnects: Type.Integer() }),
    sinks: Type.Record(
      Type.String(),
      Type.Object(
        {
          state: Type.String({ description: 'off, connected, reconnecting or behind' }),
          acked_seq: Type.Optional(Type.Integer()),
          lag_events: Type.Optional(Type.Integer()),
          lag_seconds: Type.Optional(Type.Number()),
          in_flight: Type.Optional(Type.Integer()),
          last_error: Type.Optional(Type.String()),
          last_error_at: Type.Optional(Type.String()),
          retention_dropped_events: Type.Optional(Type.Integer()),
        },
        { additionalProperties: true },
      ),
      {
        description:
          'Every destination of committed events by name (nats, otlp_logs, otlp_traces, otlp_metrics), each with its own fields (stream, endpoint, server, ...); empty when none is configured; never affects status',
      },
    ),
  },
  { $id: 'Health' },
)
export type Health = Static<typeof HealthSchema>

/** GET /healthz of `fleet serve`: its NATS connection and open streams (it has no log of its own). */
export const FleetHealthSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
    reason: Type.Optional(Type.String({ description: 'Why reads cannot be answered now' })),
    version: Type.String(),
    uptime_s: Type.Number(),
    nats: Type.Object({
      state: Type.Union([Type.Literal('connected'), Type.Literal('connecting'), Type.Literal('reconnecting')]),
      server: Type.Optional(Type.String({ description: 'The NATS server the connection is on now' })),
      stream: Type.String(),
      subject_prefix: Type.String(),
      last_error: Type.Optional(Type.String()),
    }),
    streams: Type.Object({ open: Type.Integer(), slowDisconnects: Type.Integer(), refused: Type.Integer() }),
  },
  { $id: 'FleetHealth' },
)
export type FleetHealth = Static<typeof FleetHealthSchema>

const Count = (description: string) => Type.Integer({ minimum: 0, description })
/** One agent action (src/actions: `Action`); test/api-actions.test.ts holds the two to each other. */
export const ActionSchema = Type.Object(
  {
    action_id: Type.String({ description: '`a` and the seq of its first command' }),
    kind: Type.Union(ACTION_KINDS.map(k => Type.Literal(k))),
    title: Type.String({ description: 'Short, never what was typed: "click #buy", "type 12 characters into #email"' }),
    step_id: Type.Optional(Type.String({ description: 'The agent step its commands carry' })),
    connection_id: Type.String({ description: 'The CDP proxy connection of the client' }),
    target_id: Type.Optional(Type.String({ description: 'Absent for commands sent to the browser itself' })),
    start_ts: Type.Integer({ description: 'Unix µs: its first command was sent' }),
    end_ts: Type.Integer({ description: 'Unix µs: its last answer (a navigate: or its navigation, if later)' }),
    outcome: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
    command_seqs: Type.Array(Type.Integer({ minimum: 1 }), { description: 'Seqs of its cdp_command events' }),
    effects: Type.Object(
      {
        navigations: Count('Main-frame navigations'),
        requests: Count('Requests'),
        failed_requests: Count('Failed requests and responses >= 400'),
        console_errors: Count('Console errors'),
        dialogs: Count('Dialogs opened'),
        downloads: Count('Downloads started'),
        crashed: Type.Boolean({ description: 'The page crashed' }),
      },
      {
        additionalProperties: false,
        description:
          "Events of its target from its start until the next action on that target (a navigate's: or its page_navigation_settled)",
      },
    ),
    effects_end_ts: Type.Optional(
      Type.Integer({ description: 'Unix µs, exclusive: where the effects window ended (absent: the window end)' }),
    ),
  },
  { additionalProperties: false, $id: 'TelemetryAction' },
)
