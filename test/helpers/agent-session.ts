// Hand-built envelopes of an agent's session: commands through the CDP proxy, steps, and what the
// page reported, each validated against its schema. Times are milliseconds after T0 (an envelope's
// ts is T0 + at); a command's duration ends at its envelope's ts, as the proxy stores it.
import { validateEvent, type Envelope, type EventData, type TelemetryEvent } from '../../src/events/index.js'

export const T0 = 1_700_000_000_000_000
/** Unix µs of a moment `ms` after T0. */
export const at = (ms: number) => T0 + Math.round(ms * 1000)

export type CommandOpts = Partial<EventData<'cdp_command'>> & { dur?: number }

const CATEGORY: Record<string, string> = {
  cdp_command: 'control',
  agent_step_started: 'control',
  agent_step_finished: 'control',
}
function categoryOf(type: string): string {
  return CATEGORY[type] ?? type.split('_')[0]!
}

/** Builds envelopes with increasing seqs (from 1, or from `first`). */
export class SessionBuilder {
  readonly envelopes: Envelope[] = []
  constructor(
    private seq = 0,
    readonly defaults: { connection_id: string; target_id?: string } = { connection_id: 'C1', target_id: 'T1' },
  ) {}

  /** The seq the next envelope takes. */
  get next(): number {
    return this.seq + 1
  }

  event(type: string, ms: number, data: Record<string, unknown>): number {
    const event = {
      ts: at(ms),
      type,
      category: categoryOf(type),
      source: { kind: type.startsWith('cdp_') || type.startsWith('agent_') ? 'local_process' : 'cdp' },
      data,
    } as unknown as TelemetryEvent
    const issues = validateEvent(event)
    if (issues.length) throw new Error(`test event ${type} invalid: ${JSON.stringify(issues)}`)
    this.envelopes.push({ seq: ++this.seq, event })
    return this.seq
  }

  /** A cdp_command answered at `ms` after `dur` ms (default 1); target T1 unless `target_id: undefined`. */
  cmd(ms: number, method: string, o: CommandOpts = {}): number {
    const { dur = 1, ...rest } = o
    const data: Record<string, unknown> = {
      ...this.defaults,
      id: this.seq + 1,
      method,
      duration_ms: dur,
      outcome: 'ok',
      request_bytes: 50,
      ...rest,
    }
    for (const k of Object.keys(data)) if (data[k] === undefined) delete data[k]
    return this.event('cdp_command', ms, data)
  }

  /** A page-side event of target T1 (or data.target_id) with the page context. */
  page(type: string, ms: number, data: Record<string, unknown> = {}): number {
    return this.event(type, ms, { target_id: 'T1', target_type: 'page', session_id: 'S1', ...data })
  }
}
