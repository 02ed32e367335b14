// What the shipper reports: its state for /healthz and /metrics, its health record and counters.
import type { PublishErrorKind } from './nats-link.js'

/** The state /healthz and /metrics report. */
export type ShipState = 'off' | 'connected' | 'reconnecting' | 'behind'
export const SHIP_STATES: readonly ShipState[] = ['off', 'connected', 'reconnecting', 'behind']

export interface ShipHealth {
  state: ShipState
  stream: string
  subject_prefix: string
  acked_seq: number
  lag_events: number
  lag_seconds: number
  in_flight: number
  last_error?: string
  last_error_at?: string
  retention_dropped_events: number
}

export interface ShipStats {
  shippedEvents: number
  shippedBytes: number
  errors: Record<PublishErrorKind, number>
  retentionDroppedEvents: number
}
