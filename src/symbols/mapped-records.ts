// Records as readers serve them: which stored console records a map could cover (parsed only
// when their JSON says they might), and the records with those mapped, re-serialised. Pure: the
// service (source-maps.ts) supplies the maps.
import type { Envelope, StackTrace } from '../events/index.js'
import type { StoredRecord } from '../store/event-log.js'
import { isMappable, stackUrls } from './frames.js'

/**
 * A stored console record that may be mappable (isMappable decides after parsing): a console_error,
 * or a level a stack is mapped for. Quotes inside strings are escaped in JSON, so these only match keys.
 */
const MAPPABLE_JSON = /"type":"console_error"|"level":"(?:error|warning|warn|trace|assert)"/

/** A record a map could cover: its index in the page and its envelope, parsed. */
export interface FoundEnvelope {
  i: number
  env: Envelope
}

/** The records whose stacks a map could cover, parsed, and their scripts; undefined: none (or no map known). */
export function mappableRecords(
  records: readonly StoredRecord[],
  anyMapKnown: boolean,
): { envs: FoundEnvelope[]; urls: Set<string> } | undefined {
  if (!anyMapKnown) return undefined
  const envs: FoundEnvelope[] = []
  const urls = new Set<string>()
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    // Only what could be mappable is parsed: console.log lines (most console records) are not.
    if (r.category !== 'console' || !r.json.includes('"callFrames"') || !MAPPABLE_JSON.test(r.json)) continue
    const env = JSON.parse(r.json) as Envelope
    const data = env.event.data as { level?: unknown; stack_trace?: StackTrace }
    if (!isMappable(env.event.type, data)) continue
    stackUrls(data.stack_trace!, urls)
    envs.push({ i, env })
  }
  return envs.length === 0 ? undefined : { envs, urls }
}

/**
 * The records with those envelopes mapped; one that grows past the envelope cap mapped is served
 * as stored. The same array when nothing changed.
 */
export function appliedRecords(
  records: readonly StoredRecord[],
  envs: readonly FoundEnvelope[],
  mapEnvelope: (env: Envelope) => Envelope,
  maxEnvelopeBytes: number,
): StoredRecord[] {
  let out: StoredRecord[] | undefined
  for (const { i, env } of envs) {
    const mapped = mapEnvelope(env)
    if (mapped === env) continue
    const r = records[i]!
    const json = JSON.stringify(mapped)
    if (json.length > maxEnvelopeBytes) continue
    out ??= records.slice()
    out[i] = { seq: r.seq, ts: r.ts, category: r.category, json }
  }
  return out ?? (records as StoredRecord[])
}
