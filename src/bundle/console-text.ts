// console.txt of a bundle: one readable line per console message, with its time and page. Pure.
import { exceptionLocation, type Envelope } from '../events/index.js'

/** Longest message text kept on one line (the full text is in events.ndjson). */
export const CONSOLE_LINE_MAX_CHARS = 8192

/**
 * `2024-05-01T10:00:00.123456Z error   https://shop.example/cart  checkout failed: boom`
 * Time in UTC to the microsecond, the level (exception for uncaught errors), the page URL (else the
 * target id), then the text with line breaks and tabs escaped so each message stays on one line.
 */
export function consoleLine(e: Envelope): string | undefined {
  const ev = e.event
  if (ev.type !== 'console_log' && ev.type !== 'console_error') return undefined
  const d = ev.data as {
    level?: string
    text?: string
    args?: string[]
    url?: string
    target_id?: string
    source_url?: string
    line?: number
    column?: number
    stack_trace?: { callFrames?: { original?: { source: string; line: number; column: number } }[] }
  }
  const level =
    ev.type === 'console_error' && (ev.source.event === 'Runtime.exceptionThrown' || d.args === undefined)
      ? 'exception'
      : (d.level ?? 'log')
  const page = d.url ?? (d.target_id !== undefined ? `target ${d.target_id}` : '-')
  let text = (d.text ?? '').replace(/\\/g, '\\\\').replace(/\r/g, '\\r').replace(/\n/g, '\\n').replace(/\t/g, '\\t')
  if (text.length > CONSOLE_LINE_MAX_CHARS)
    text = `${text.slice(0, CONSOLE_LINE_MAX_CHARS)}… (cut; see events.ndjson seq ${e.seq})`
  // The top frame's original position when a source map gave one, else where Chromium says.
  const top = d.stack_trace?.callFrames?.[0]?.original
  const where = top
    ? ` (${top.source}:${top.line}:${top.column})`
    : d.source_url !== undefined
      ? ` (${exceptionLocation(d)})`
      : ''
  return `${isoMicros(ev.ts)} ${level.padEnd(9)} ${page}  ${text}${where}`
}

/** Unix microseconds -> RFC 3339 UTC with six fractional digits. */
export function isoMicros(us: number): string {
  const ms = Math.floor(us / 1000)
  const iso = new Date(ms).toISOString() // ...SS.mmmZ
  return `${iso.slice(0, -1)}${String(Math.floor(us) % 1000).padStart(3, '0')}Z`
}
