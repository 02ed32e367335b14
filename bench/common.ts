// Shared benchmark helpers: medians, temp dirs, a realistic ~500-byte event.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EventLog, type StoredRecord } from '../src/store/event-log.js'
import { Pipeline, type EmitResult, type EventInput } from '../src/pipeline/pipeline.js'

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'bt-bench-'))
  try {
    return await fn(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** A network_request of about 500 bytes once wrapped in an envelope (the "realistic ~500-byte envelope"). */
export function realisticEvent(i: number): EventInput {
  return {
    type: 'network_request',
    source: { kind: 'cdp', event: 'Network.requestWillBeSent' },
    data: {
      url: `https://shop.example.com/api/v2/products/${i}?include=prices`,
      frame_id: '8F1D0E8C3B5A4F2E9D7C6B5A4F3E2D1C',
      session_id: 'B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6',
      target_id: '8F1D0E8C3B5A4F2E9D7C6B5A4F3E2D1C',
      target_type: 'page',
      nav_seq: 3,
      request_id: `1234.${i}`,
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0' },
      resource_type: 'Fetch',
      initiator_type: 'script',
    },
  }
}

export function fmt(n: number, digits = 2): string {
  return n.toFixed(digits)
}

/** The commit promise of an accepted event; a dropped one fails loudly (nothing in a bench should be dropped). */
export function committedOf(r: EmitResult): Promise<boolean> {
  if (r.dropped !== undefined) throw new Error(`event dropped: ${r.dropped}`)
  return r.committed
}

/** A log in `dir` holding n realistic events (1,000 distinct inputs in turn, shedding off), and its records. */
export async function filledLog(dir: string, n: number): Promise<{ log: EventLog; records: StoredRecord[] }> {
  const inputs = Array.from({ length: Math.min(n, 1000) }, (_, i) => realisticEvent(i))
  const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0 })
  const pipeline = new Pipeline({ log, shedding: false })
  let last: Promise<boolean> = Promise.resolve(true)
  for (let i = 0; i < n; i++) {
    last = committedOf(pipeline.emit(inputs[i % inputs.length]!))
    if (i % 1000 === 999) await new Promise(r => setImmediate(r))
  }
  await last
  const records: StoredRecord[] = []
  for (let cursor = 0; ;) {
    const page = await log.read({ order: 'asc', cursor, limit: 5000 })
    records.push(...page.records)
    if (!page.hasMore) break
    cursor = page.nextCursor
  }
  return { log, records }
}
