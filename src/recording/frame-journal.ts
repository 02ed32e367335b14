// The frame store's files: one JPEG per frame under frames/, named by its id, and the journal of
// their metadata (index.jsonl: one JSON line per stored frame, headed by the next id after a
// compaction). Reading it back skips torn and corrupt lines; what they named is then swept.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

export const JOURNAL = 'index.jsonl'

/** One stored frame's metadata: the item of GET /browsers/{id}/recording/frames. */
export interface FrameMeta {
  frame_id: number
  /** Unix µs on the events' clock; non-decreasing in frame_id order. */
  ts: number
  target_id: string
  /** seq of the last event committed before the frame arrived; non-decreasing in frame_id order. */
  after_seq: number
  /** JPEG pixels. */
  width: number
  height: number
  bytes: number
  /** The page viewport in CSS pixels (interaction x/y are in these). */
  viewport_width?: number
  viewport_height?: number
}

/** A journal line: the frame's metadata and its hash. */
export interface Entry extends FrameMeta {
  /** sha1 of the JPEG, first 16 hex digits (journal only: checks the file after a crash). */
  hash: string
}

export function frameFile(dir: string, id: number): string {
  return join(dir, `${String(id).padStart(12, '0')}.jpg`)
}

export function hashOf(data: Uint8Array): string {
  return createHash('sha1').update(data).digest('hex').slice(0, 16)
}

export function metaOf(e: Entry): FrameMeta {
  const m: FrameMeta = {
    frame_id: e.frame_id,
    ts: e.ts,
    target_id: e.target_id,
    after_seq: e.after_seq,
    width: e.width,
    height: e.height,
    bytes: e.bytes,
  }
  if (e.viewport_width !== undefined) m.viewport_width = e.viewport_width
  if (e.viewport_height !== undefined) m.viewport_height = e.viewport_height
  return m
}

/** First index >= from where `before` is false (before must be true then false along the array). */
export function lowerBound(a: readonly Entry[], from: number, before: (e: Entry) => boolean): number {
  let lo = from
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (before(a[mid]!)) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The journal's entries (a torn or corrupt line is skipped) and the next id its header recorded. */
export async function readJournal(path: string): Promise<{ entries: Entry[]; next: number }> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return { entries: [], next: 0 }
  }
  const entries: Entry[] = []
  let next = 0
  for (const line of text.split('\n')) {
    if (line === '') continue
    let v: unknown
    try {
      v = JSON.parse(line)
    } catch {
      continue // torn last line of an interrupted append
    }
    if (!v || typeof v !== 'object') continue
    const o = v as Record<string, unknown>
    if (typeof o.next === 'number') {
      next = Math.max(next, o.next)
      continue
    }
    if (isEntry(o)) entries.push(o)
  }
  return { entries, next }
}

function isEntry(o: Record<string, unknown>): o is Entry & Record<string, unknown> {
  const int = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
  return (
    int(o.frame_id) &&
    (o.frame_id as number) > 0 &&
    typeof o.ts === 'number' &&
    typeof o.target_id === 'string' &&
    int(o.after_seq) &&
    int(o.width) &&
    int(o.height) &&
    int(o.bytes) &&
    typeof o.hash === 'string'
  )
}
