// Envelope size cap: cuts an event so its stored envelope `{"seq":N,"event":...}` is at most
// maxBytes UTF-8 bytes, in work linear in the event's size (a constant number of passes, no retry
// loop of full serialisations).
//
// Order of cuts, each step only when the previous was not enough:
//   1. strings: the largest are cut first, down to one common level ("water filling"), never below
//      STRING_FLOOR encoded bytes;
//   2. collections (arrays, header and metadata maps): the largest loses its tail entries first;
//   3. skeleton: optional nested objects and arrays are dropped, required ones emptied, then the
//      strings are water-filled again with no floor.
// Every cut keeps the event valid against its schema (no array has minItems, header and metadata
// maps are open records, strings are cut as prefixes so maxLength/pattern rules still hold).
import type { TelemetryEvent } from '../events/index.js'

/** `{"seq":` + 16 digits (any safe integer) + `,"event":` + `}`. */
export const ENVELOPE_OVERHEAD = 7 + 16 + 9 + 1
const TRUNCATED_FLAG = ',"truncated":true'.length
/** Strings are not cut below this many encoded bytes before collections lose entries. */
const STRING_FLOOR = 64
/** The smallest cap the daemon accepts: a skeleton of any event type always fits. */
export const MIN_ENVELOPE_BYTES = 4096

export interface FitResult {
  /** The event JSON (without the envelope), at most maxBytes - ENVELOPE_OVERHEAD bytes. */
  json: string
  /** True when something was cut (event.data replaced by a cut copy and event.truncated set). */
  cut: boolean
}

type Obj = Record<string, unknown>

interface StrLeaf {
  holder: Obj | unknown[]
  key: string | number
  value: string
  enc: number
}
interface Collection {
  node: unknown[] | Obj
  keys: (string | number)[]
  sizes: number[]
  size: number
}

/** Keys of maps (open records) whose entries may be dropped: HTTP headers (a WebSocket handshake has two sets) and source metadata. */
const RECORD_KEYS = new Set(['headers', 'request_headers', 'response_headers', 'metadata'])

/**
 * Fits `event` to the cap. On a cut, `event.data` (and `event.source`) are replaced by cut copies
 * (the producer's objects are never modified) and `event.truncated` is set.
 */
export function fitEvent(event: TelemetryEvent, maxBytes: number): FitResult {
  const limit = maxBytes - ENVELOPE_OVERHEAD
  const json = JSON.stringify(event)
  // Cheap pre-check: a UTF-16 unit is at most 3 UTF-8 bytes.
  if (json.length * 3 <= limit || Buffer.byteLength(json) <= limit) return { json, cut: false }

  const e = event as { data: unknown; source: unknown; truncated?: boolean }
  let size = Buffer.byteLength(json) + (e.truncated ? 0 : TRUNCATED_FLAG)
  // Containers are copied, strings shared (immutable): a cut never copies what it keeps in full.
  e.data = copyContainers(e.data)
  e.source = copyContainers(e.source)
  e.truncated = true
  const root = { data: e.data, source: e.source }
  // 1. strings above the floor
  size -= waterFill(measure(root).leaves, size - limit, STRING_FLOOR)
  // 2. collection tails
  if (size > limit) size -= dropTails(measure(root).collections, size - limit)
  let out = JSON.stringify(event)
  // 3. skeleton (also the guard should an estimate above have been short)
  if (Buffer.byteLength(out) > limit) {
    e.data = skeleton(e.data)
    e.source = skeleton(e.source)
    out = JSON.stringify(event)
    const over = Buffer.byteLength(out) - limit
    if (over > 0) {
      waterFill(measure({ data: e.data, source: e.source }).leaves, over, 0)
      out = JSON.stringify(event)
    }
  }
  return { json: out, cut: true }
}

/** A copy of every array and object of a JSON-like tree; leaves (strings, numbers) are shared. */
function copyContainers(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(copyContainers)
  if (node === null || typeof node !== 'object') return node
  const out: Obj = {}
  for (const k of Object.keys(node)) out[k] = copyContainers((node as Obj)[k])
  return out
}

/** Walks the tree once: every string leaf with its encoded size, every collection with entry sizes. */
function measure(root: Obj): { leaves: StrLeaf[]; collections: Collection[] } {
  const leaves: StrLeaf[] = []
  const collections: Collection[] = []
  const visit = (
    node: unknown,
    holder: Obj | unknown[] | undefined,
    key: string | number,
    isRecord: boolean,
  ): number => {
    if (typeof node === 'string') {
      const enc = encodedBytes(node)
      if (holder) leaves.push({ holder, key, value: node, enc })
      return enc
    }
    if (node === null || node === undefined) return 4
    if (typeof node !== 'object') return String(node).length
    if (Array.isArray(node)) {
      const sizes = new Array<number>(node.length)
      let total = 2 + Math.max(0, node.length - 1)
      for (let i = 0; i < node.length; i++) total += sizes[i] = visit(node[i], node, i, false)
      if (node.length > 0) collections.push({ node, keys: node.map((_, i) => i), sizes, size: total })
      return total
    }
    const obj = node as Obj
    const keys: string[] = []
    const sizes: number[] = []
    let total = 2
    for (const k of Object.keys(obj)) {
      const v = obj[k]
      if (v === undefined) continue
      const s = encodedBytes(k) + 1 + visit(v, obj, k, RECORD_KEYS.has(k))
      total += s + (keys.length > 0 ? 1 : 0)
      keys.push(k)
      sizes.push(s)
    }
    if (isRecord && keys.length > 0) collections.push({ node: obj, keys, sizes, size: total })
    return total
  }
  for (const k of Object.keys(root)) visit(root[k], undefined, k, false)
  return { leaves, collections }
}

/**
 * Cuts the largest strings down to one common encoded size L >= floor so that at least `need`
 * bytes go. Returns the bytes actually removed. O(n log n) in the number of strings, O(bytes) in cuts.
 */
function waterFill(leaves: StrLeaf[], need: number, floor: number): number {
  const big = leaves.filter(l => l.enc > floor).sort((a, b) => b.enc - a.enc)
  if (big.length === 0) return 0
  // Find the level: cutting the k largest to L removes sum(e_i) - k*L.
  let sum = 0
  let level = floor
  for (let k = 1; k <= big.length; k++) {
    sum += big[k - 1]!.enc
    const next = k < big.length ? Math.max(big[k]!.enc, floor) : floor
    // Level at which the k largest would give exactly `need`.
    const l = Math.floor((sum - need) / k)
    if (l >= next) {
      level = l
      break
    }
    level = next
  }
  let removed = 0
  for (const leaf of big) {
    if (leaf.enc <= level) break
    // Plain ASCII (measured as one byte per unit, no escapes): a slice of level - 2 units is exact.
    const plain = leaf.enc === leaf.value.length + 2
    const cut = plain ? leaf.value.slice(0, Math.max(0, level - 2)) : cutToEncoded(leaf.value, level)
    ;(leaf.holder as Obj)[leaf.key as string] = cut
    removed += leaf.enc - (plain ? cut.length + 2 : encodedBytes(cut))
  }
  return removed
}

/** Drops tail entries of the largest collections until `need` bytes are gone. Returns bytes removed. */
function dropTails(collections: Collection[], need: number): number {
  collections.sort((a, b) => b.size - a.size)
  let removed = 0
  for (const c of collections) {
    if (removed >= need) break
    let n = c.keys.length
    while (n > 0 && removed < need) {
      n--
      removed += c.sizes[n]! + (n > 0 ? 1 : 0)
    }
    if (Array.isArray(c.node)) c.node.length = n
    else for (let i = n; i < c.keys.length; i++) delete c.node[c.keys[i] as string]
  }
  return removed
}

/** Keeps scalars; nested objects keep their scalars too, arrays and records become empty. */
function skeleton(node: unknown): unknown {
  if (Array.isArray(node)) return []
  if (!node || typeof node !== 'object') return node
  const out: Obj = {}
  for (const [k, v] of Object.entries(node as Obj)) {
    if (v === undefined) continue
    if (Array.isArray(v) || RECORD_KEYS.has(k)) out[k] = Array.isArray(v) ? [] : {}
    else if (v && typeof v === 'object') {
      // Optional nested objects (stack traces, parents) go; required ones (layout/lcp details) are all scalars.
      if (k === 'stack_trace' || k === 'parent') continue
      out[k] = skeleton(v)
    } else out[k] = v
  }
  return out
}

/** UTF-8 bytes of JSON.stringify(s), quotes included (native: several hundred MB/s). */
export function encodedBytes(s: string): number {
  // Plain ASCII needs no escapes: no temporary copy of a large string just to measure it.
  if (PLAIN_ASCII.test(s)) return s.length + 2
  return Buffer.byteLength(JSON.stringify(s))
}

/** Encoded bytes of the UTF-16 unit at i; undefined for a valid surrogate pair starting at i (4 bytes, 2 units). */
function charCost(s: string, i: number): number | undefined {
  const c = s.charCodeAt(i)
  if (c < 0x80) {
    if (c >= 0x20) return c === 0x22 || c === 0x5c ? 2 : 1
    return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6
  }
  if (c < 0x800) return 2
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = s.charCodeAt(i + 1)
    if (d >= 0xdc00 && d <= 0xdfff) return undefined
    return 6 // lone surrogate: JSON.stringify writes \udXXX
  }
  if (c >= 0xdc00 && c <= 0xdfff) return 6
  return 3
}

const PLAIN_ASCII = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/

/** The longest prefix of s whose JSON encoding (quotes included) is at most `bytes` bytes; never splits a pair. */
export function cutToEncoded(s: string, bytes: number): string {
  let n = 2
  if (n >= bytes) return ''
  // Plain ASCII (no escapes): bytes = units, a slice is exact.
  if (s.length + 2 <= bytes) {
    if (encodedBytes(s) <= bytes) return s
  } else if (PLAIN_ASCII.test(s.slice(0, bytes - 2))) return s.slice(0, bytes - 2)
  let i = 0
  while (i < s.length) {
    const cost = charCost(s, i)
    const step = cost === undefined ? 2 : 1
    if (n + (cost ?? 4) > bytes) break
    n += cost ?? 4
    i += step
  }
  return s.slice(0, i)
}
