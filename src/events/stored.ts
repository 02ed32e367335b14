// What a reader can tell of a stored envelope without parsing it.
import type { Envelope } from './types.js'

/** The event type of a stored envelope; the pipeline writes ts then type first, so parsing is rarely needed. */
export function storedEventType(json: string): string {
  const m = /^\{"seq":\d+,"event":\{"ts":-?\d+,"type":"([a-z0-9_]{1,64})"/.exec(json)
  if (m) return m[1]!
  try {
    return String((JSON.parse(json) as Envelope).event.type)
  } catch {
    return 'unknown'
  }
}
