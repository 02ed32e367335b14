// One human-readable line per envelope for `tail`: time, seq, category, type and the few fields a
// person scans for. Colour is optional (see io.useColor); the NDJSON form is the envelope itself.
import { exceptionLocation, type Envelope, type StackTrace } from '../events/index.js'

const COLORS: Record<string, number> = {
  console: 33,
  network: 36,
  page: 32,
  interaction: 35,
  control: 34,
  connection: 34,
  system: 31,
  screenshot: 90,
  captcha: 35,
  monitor: 31,
}
const paint = (on: boolean, code: number, s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s)
const CONTEXT_KEYS = new Set(['url', 'frame_id', 'loader_id', 'session_id', 'target_id', 'target_type', 'nav_seq'])

export function formatEnvelope(env: Envelope, color: boolean): string {
  const e = env.event
  const time = new Date(Math.floor(e.ts / 1000)).toISOString().slice(11, 23)
  const cat = paint(color, COLORS[e.category] ?? 0, e.category.padEnd(11))
  const type = paint(color, 1, e.type)
  const summary = summarize(env, color)
  const trunc = e.truncated ? paint(color, 31, ' [truncated]') : ''
  return `${paint(color, 90, time)} ${paint(color, 90, `#${env.seq}`)} ${cat} ${type}${summary ? ` ${summary}` : ''}${trunc}`
}

function summarize(env: Envelope, color: boolean): string {
  const e = env.event
  switch (e.type) {
    case 'console_log':
      return `[${e.data.level}] ${oneLine(e.data.text)}${mappedTop(e.data.stack_trace) ?? ''}`
    case 'console_error':
      return (
        paint(color, 31, oneLine(e.data.text)) +
        (mappedTop(e.data.stack_trace) ?? (e.data.source_url ? ` (${exceptionLocation(e.data)})` : ''))
      )
    case 'network_request':
      return `${e.data.method} ${e.data.url ?? ''}${e.data.is_redirect ? ` (redirect from ${e.data.redirect_url ?? '?'})` : ''}`
    case 'network_response': {
      const s = e.data.status
      return `${paint(color, s >= 400 ? 31 : s >= 300 ? 33 : 32, String(s))} ${e.data.method ?? ''} ${e.data.url ?? ''} ${e.data.mime_type}`.replace(
        / {2,}/g,
        ' ',
      )
    }
    case 'network_loading_failed':
      return `${paint(color, 31, e.data.error_text)}${e.data.canceled ? ' (canceled)' : ''} ${e.data.url ?? `request ${e.data.request_id}`}`
    case 'page_navigation':
      return `${e.data.url ?? ''}${e.data.parent_frame_id ? ' (frame)' : ''}`
    case 'page_tab_opened':
      return `${e.data.url ?? ''} target=${e.data.target_id}`
    case 'interaction_click':
      return `${e.data.tag} ${e.data.selector} at ${e.data.x},${e.data.y}${e.data.text ? ` "${oneLine(e.data.text)}"` : ''}`
    case 'interaction_key':
      return `${JSON.stringify(e.data.key)} on ${e.data.tag} ${e.data.selector}`
    case 'interaction_input':
      return `${e.data.input_type} on ${e.data.tag} ${e.data.selector}`
    case 'interaction_scroll_settled':
      return `${e.data.target_selector} ${e.data.from_x},${e.data.from_y} -> ${e.data.to_x},${e.data.to_y}`
    case 'monitor_screenshot':
      return `png ${Math.round((e.data.png.length * 3) / 4 / 1024)} KiB`
    case 'api_call':
      return `${e.data.operation_id} ${e.data.status} ${e.data.duration_ms} ms`
    default: {
      // Everything else: the data fields minus the context, compact; context url last.
      const d = e.data as Record<string, unknown>
      const own = Object.entries(d).filter(([k]) => !CONTEXT_KEYS.has(k))
      const parts = own.map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      if (typeof d.url === 'string') parts.push(d.url)
      const s = parts.join(' ')
      return s.length > 200 ? s.slice(0, 199) + '…' : s
    }
  }
}

/** ` (at name source:line:column)` of the top frame a source map placed, if any. */
function mappedTop(stack: StackTrace | undefined): string | undefined {
  const f = stack?.callFrames[0]
  const o = f?.original
  if (!o) return undefined
  const name = o.name ?? f.functionName
  return ` (at ${name ? `${name} ` : ''}${o.source}:${o.line}:${o.column})`
}

function oneLine(s: string): string {
  const flat = s.replace(/\s*\n\s*/g, ' ⏎ ')
  return flat.length > 300 ? flat.slice(0, 299) + '…' : flat
}
