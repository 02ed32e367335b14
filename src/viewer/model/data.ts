// Reading an event's data: the envelope types the viewer works with, and loose accessors for
// fields several event types share (target_id, nav_seq, url...) without narrowing on the type.
import type { Envelope, TelemetryEvent } from '../../events/index.js'

export type { Envelope, TelemetryEvent }

type Data = Record<string, unknown>
export const dataOf = (e: Envelope): Data => e.event.data as Data
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
