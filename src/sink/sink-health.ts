// What a sink reports: its state for /healthz and /metrics, its health record and counters.

/** The state /healthz and /metrics report. */
export type ShipState = 'off' | 'connected' | 'reconnecting' | 'behind'
export const SHIP_STATES: readonly ShipState[] = ['off', 'connected', 'reconnecting', 'behind']

/** Every sink's /healthz record: the core's fields plus the destination's own (stream, endpoint...). */
export interface SinkHealth {
  state: ShipState
  acked_seq: number
  lag_events: number
  lag_seconds: number
  in_flight: number
  last_error?: string
  last_error_at?: string
  retention_dropped_events: number
  /** Records the destination refused for good (e.g. OTLP 400): counted and passed, never re-sent. */
  skipped_events?: number
  [destination: string]: unknown
}

/** The NATS shipper's record (`sinks.nats` in /healthz). */
export interface ShipHealth extends SinkHealth {
  stream: string
  subject_prefix: string
  /** The server the connection is on now (a cluster's clients move between nodes). */
  server?: string
}

export interface SinkStats {
  shippedEvents: number
  shippedBytes: number
  errors: Record<string, number>
  retentionDroppedEvents: number
  skippedEvents: number
}

export type ShipStats = SinkStats
