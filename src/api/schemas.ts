// TypeBox schemas of the API's own bodies (error object, capture config, health). Event schemas
// come from src/events; both feed the router's validation and the OpenAPI document.
import { Type, type Static } from '@sinclair/typebox'
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
  },
  { additionalProperties: false, $id: 'BrowserTelemetryConfig' },
)
export type TelemetryConfig = {
  browser?: Partial<Record<(typeof CONFIGURABLE_CATEGORIES)[number], { enabled?: boolean }>>
  recording?: { enabled?: boolean }
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
