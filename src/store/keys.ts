// Key and value layout of the LevelDB log. Keys sort by position, so a cursor read is one seek.
//   'e' + seq(8 BE)                  -> record: category(1) ts(8, float64 BE) envelope JSON (utf8)
//   'c' + category(1) + seq(8 BE)    -> uint16 BE offsets from that seq of the events of this
//                                       category in one committed write (a per-write block keeps the
//                                       index to one key per category per write, not one per event)
//   'm' + name                       -> metadata (next seq, clean-shutdown marker)
// Older versions kept extension metadata in a '!extensions!' sublevel here (sorts before all of
// these); EventLog.moveOutLegacySublevel moves it to its own database at startup.
import { CATEGORIES, type Category } from '../events/index.js'

export const PREFIX_EVENT = 0x65 // 'e'
export const PREFIX_CATEGORY = 0x63 // 'c'
export const PREFIX_META = 0x6d // 'm'

export const CATEGORY_CODE = new Map<Category, number>(CATEGORIES.map((c, i) => [c, i]))
export const CATEGORY_BY_CODE: readonly Category[] = CATEGORIES

export function eventKey(seq: number) {
  const b = Buffer.allocUnsafe(9)
  b[0] = PREFIX_EVENT
  b.writeBigUInt64BE(BigInt(seq), 1)
  return b
}
export function seqOfEventKey(key: Uint8Array): number {
  return Number(Buffer.from(key.buffer, key.byteOffset, key.byteLength).readBigUInt64BE(1))
}
export function categoryKey(category: Category, seq: number) {
  const b = Buffer.allocUnsafe(10)
  b[0] = PREFIX_CATEGORY
  b[1] = CATEGORY_CODE.get(category)!
  b.writeBigUInt64BE(BigInt(seq), 2)
  return b
}
export function seqOfCategoryKey(key: Uint8Array): number {
  return Number(Buffer.from(key.buffer, key.byteOffset, key.byteLength).readBigUInt64BE(2))
}
export function metaKey(name: string): Buffer {
  return Buffer.concat([Buffer.of(PREFIX_META), Buffer.from(name, 'utf8')])
}
export const EVENT_RANGE_START = Buffer.of(PREFIX_EVENT)
export const EVENT_RANGE_END = Buffer.of(PREFIX_EVENT + 1)
export function categoryRange(category: Category): { start: Buffer; end: Buffer } {
  const code = CATEGORY_CODE.get(category)!
  return { start: Buffer.of(PREFIX_CATEGORY, code), end: Buffer.of(PREFIX_CATEGORY, code + 1) }
}

export interface StoredRecord {
  seq: number
  ts: number
  category: Category
  /** The envelope exactly as stored: `{"seq":..,"event":{..}}`. Served without re-serialising. */
  json: string
}

export function encodeRecord(category: Category, ts: number, json: string): Buffer {
  const b = Buffer.allocUnsafe(9 + Buffer.byteLength(json))
  b[0] = CATEGORY_CODE.get(category)!
  b.writeDoubleBE(ts, 1)
  b.write(json, 9, 'utf8')
  return b
}

/** Most events one committed write may hold: block offsets are uint16. */
export const MAX_WRITE_EVENTS = 65535
export function decodeRecord(seq: number, value: Uint8Array): StoredRecord {
  const b = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  return { seq, category: CATEGORY_BY_CODE[b[0]!]!, ts: b.readDoubleBE(1), json: b.toString('utf8', 9) }
}
export function tsOfRecord(value: Uint8Array): number {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).readDoubleBE(1)
}
