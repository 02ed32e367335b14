// Agent: the commands automation clients sent through the CDP proxy.
import type { Envelope } from './data.js'

/** A command answered after this long is marked slow. */
export const SLOW_COMMAND_MS = 1000

export interface CommandSummary {
  method: string
  outcome: string
  durationMs: number
  failed: boolean
  slow: boolean
  error?: string
}

export function commandSummary(e: Envelope): CommandSummary | undefined {
  if (e.event.type !== 'cdp_command') return undefined
  const d = e.event.data
  return {
    method: d.method,
    outcome: d.outcome,
    durationMs: d.duration_ms,
    failed: d.outcome !== 'ok',
    slow: d.duration_ms >= SLOW_COMMAND_MS,
    ...(d.error_message !== undefined ? { error: `${d.error_code ?? ''} ${d.error_message}`.trim() } : {}),
  }
}
