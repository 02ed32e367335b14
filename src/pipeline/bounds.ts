// Byte bounds on what a page can make the daemon hold per target (URLs, header sets, request
// tables) and the counters of what was cut or evicted to stay within them. One `Bounds` per daemon
// (src/daemon/stages.ts builds it from the config) is handed to the connection and the collectors
// through their options and read by /metrics; tests build their own.
import { DEFAULT_SETTINGS } from '../defaults.js'
import { withDefaults } from '../util/defaults.js'

export interface StateBounds {
  /** URLs kept in events and per-target state, UTF-8 bytes. */
  maxUrlBytes: number
  /** One header set (names + values), UTF-8 bytes; further headers are dropped, long values cut. */
  maxHeaderBytes: number
  /** Per-target table of in-flight requests, estimated bytes; oldest evicted first. */
  maxRequestTableBytes: number
  /**
   * The envelope cap (--max-envelope-bytes): producers cut any single string to it and any list to
   * a third of it before building an event. Lossless (the pipeline's fit would cut them further
   * anyway), but an 8 MB console argument is not copied around in full on its way there.
   */
  maxEnvelopeBytes: number
}

export const DEFAULT_BOUNDS: Readonly<StateBounds> = Object.freeze({
  maxUrlBytes: DEFAULT_SETTINGS.maxUrlBytes,
  maxHeaderBytes: DEFAULT_SETTINGS.maxHeaderBytes,
  maxRequestTableBytes: DEFAULT_SETTINGS.requestTableBytes,
  maxEnvelopeBytes: DEFAULT_SETTINGS.maxEnvelopeBytes,
})

/** The bounds in force and the evictions and cuts made to keep them. */
export class Bounds {
  readonly limits: Readonly<StateBounds>
  /** Counted evictions and cuts by table/field, for browser_telemetry_state_evictions_total. */
  readonly evictions = new Map<string, number>()

  constructor(limits: Partial<StateBounds> = {}) {
    this.limits = withDefaults<StateBounds>(DEFAULT_BOUNDS, limits)
  }

  get maxEnvelopeBytes(): number {
    return this.limits.maxEnvelopeBytes
  }

  countEviction(table: string, n = 1): void {
    this.evictions.set(table, (this.evictions.get(table) ?? 0) + n)
  }

  /** A URL within maxUrlBytes; `onCut` hears about a cut (the event is then flagged truncated). */
  capUrl(url: string, onCut?: () => void): string {
    const max = this.limits.maxUrlBytes
    if (url.length <= max / 3) return url
    const cut = cutUtf8(url, max)
    if (cut !== url) {
      this.countEviction('url_cut')
      onCut?.()
    }
    return cut
  }

  /**
   * A header map within maxHeaderBytes: values cut, then further headers dropped. A map of strings
   * that fits even at 3 bytes per UTF-16 unit (nearly every one) is returned as it is, not copied:
   * callers own the CDP payload it comes from, and the redactor copies on write.
   */
  capHeaders(h: Record<string, unknown> | undefined, onCut?: () => void): Record<string, string> {
    if (!h) return {}
    const max = this.limits.maxHeaderBytes
    let units = 0
    let strings = true
    for (const k of Object.keys(h)) {
      const v = h[k]
      if (typeof v !== 'string') {
        strings = false
        break
      }
      units += k.length + v.length
    }
    if (strings && units * 3 <= max) return h as Record<string, string>
    const out: Record<string, string> = {}
    let left = max
    let cut = false
    for (const [k, raw] of Object.entries(h)) {
      const v = typeof raw === 'string' ? raw : String(raw)
      const need = Buffer.byteLength(k) + Buffer.byteLength(v)
      if (need <= left) {
        out[k] = v
        left -= need
        continue
      }
      cut = true
      const keyBytes = Buffer.byteLength(k)
      if (keyBytes < left) {
        out[k] = cutUtf8(v, left - keyBytes)
        left = 0
      }
      break
    }
    if (cut) {
      this.countEviction('headers_cut')
      onCut?.()
    }
    return out
  }
}

/** s cut to at most `bytes` UTF-8 bytes on a character boundary (undefined stays undefined). */
export function cutUtf8(s: string, bytes: number): string {
  if (s.length <= bytes / 3) return s
  const buf = Buffer.from(s, 'utf8')
  if (buf.length <= bytes) return s
  let end = bytes
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end-- // never split a multi-byte character
  return buf.toString('utf8', 0, end)
}
