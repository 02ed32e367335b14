// Key and value layout of the LevelDB log. Keys sort by position, so a cursor read is one seek.
//   'e' + seq(8 BE)                  -> record: category(1) ts(8, float64 BE) envelope JSON (utf8)
//   'c' + category(1) + seq(8 BE)    -> uint16 BE offsets from that seq of the events of this
//                                       category in one committed write (a per-write block keeps the
//                                       index to one key per category per write, not one per event)
//   'm' + name                       -> metadata (next seq, clean-shutdown marker)
// Older versions kept extension metadata in a '!extensions!' sublevel here (sorts before all of
// these); src/uploads/legacy-extension-meta.ts moves it to its own database at startup.
import { CATEGORIES, type Category } from '../events/index.js'

export const PREFIX_EVENT = 0x65 // 'e'
export const PREFIX_CATEGORY = 0x63 // 'c'
export const PREFIX_META = 0x6d // 'm'

export const CATEGORY_CODE = new Map<Category, number>(CATEGORIES.map((c, i) => [c, i]))
export const CATEGORY_BY_CODE: readonly Category[] = CATEGORIES

/** Writes a seq (a safe integer) as 8 bytes big-endian: two uint32 writes, no BigInt per key or seq meta. */
export function writeSeq(b: Buffer, seq: number, at: number): void {
  b.writeUInt32BE(Math.floor(seq / 0x1_0000_0000), at)
  b.writeUInt32BE(seq >>> 0, at + 4)
}
export function eventKey(seq: number) {
  return setEventKey(Buffer.allocUnsafe(9), seq)
}
/** Writes the event key of `seq` into a 9-byte buffer (reused by the writer: LevelDB copies keys). */
export function setEventKey<B extends Buffer>(into: B, seq: number): B {
  into[0] = PREFIX_EVENT
  writeSeq(into, seq, 1)
  return into
}
export function seqOfEventKey(key: Uint8Array): number {
  return Number(Buffer.from(key.buffer, key.byteOffset, key.byteLength).readBigUInt64BE(1))
}
export function categoryKey(category: Category, seq: number) {
  const b = Buffer.allocUnsafe(10)
  b[0] = PREFIX_CATEGORY
  b[1] = CATEGORY_CODE.get(category)!
  writeSeq(b, seq, 2)
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
  readonly seq: number
  readonly ts: number
  readonly category: Category
  /** The envelope exactly as stored: `{"seq":..,"event":{..}}`. Served without re-serialising. */
  readonly json: string
  /** The same envelope as UTF-8 bytes, when at hand (records of the log, written or read): SSE frames and shipping send these. */
  readonly envelopeBytes?: Uint8Array
}

/** Bytes of a stored value before the envelope: category code (1) + ts (8). Reads bound pages by value bytes. */
export const RECORD_HEADER_BYTES = 9

/** The stored envelope's prefix; the record is `prefix + eventJson + '}'` (ASCII prefix: chars = bytes). */
export function envelopePrefix(seq: number): string {
  return `{"seq":${seq},"event":`
}

/**
 * The record of envelope `{"seq":seq,"event":<eventJson>}`, written from its parts: the envelope
 * string is never flattened just to be encoded. `eventBytes`: UTF-8 length of eventJson when known.
 */
export function encodeRecord(
  category: Category,
  ts: number,
  seq: number,
  eventJson: string,
  eventBytes = Buffer.byteLength(eventJson),
): Buffer {
  const prefix = envelopePrefix(seq)
  const b = Buffer.allocUnsafe(RECORD_HEADER_BYTES + prefix.length + eventBytes + 1)
  b[0] = CATEGORY_CODE.get(category)!
  b.writeDoubleBE(ts, 1)
  b.write(prefix, RECORD_HEADER_BYTES, 'latin1')
  // As many bytes as UTF-16 units: plain ASCII, where a latin1 write is a byte copy (utf8 has to encode).
  b.write(eventJson, RECORD_HEADER_BYTES + prefix.length, eventBytes === eventJson.length ? 'latin1' : 'utf8')
  b[b.length - 1] = 0x7d // '}'
  return b
}

/**
 * A record on the write path. Its bytes are the LevelDB value, built once at append time and kept off
 * the JS heap while the record waits for its write (a flood's backlog costs the young-generation GC
 * no string copies); `json` is decoded only if a commit listener reads it (SSE replay, shipping).
 */
export class EncodedRecord implements StoredRecord {
  private decoded: string | undefined
  constructor(
    readonly seq: number,
    readonly ts: number,
    readonly category: Category,
    readonly value: Buffer,
  ) {}
  get json(): string {
    return (this.decoded ??= this.value.toString('utf8', RECORD_HEADER_BYTES))
  }
  get envelopeBytes(): Buffer {
    return this.value.subarray(RECORD_HEADER_BYTES)
  }
}

/** Most events one committed write may hold: block offsets are uint16. */
export const MAX_WRITE_EVENTS = 65535
/**
 * A stored value as a record: its JSON is decoded only when read, so a reader that forwards bytes
 * (SSE replay, shipping) never builds the string.
 */
export function decodeRecord(seq: number, value: Uint8Array): StoredRecord {
  const b = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  return new EncodedRecord(seq, b.readDoubleBE(1), CATEGORY_BY_CODE[b[0]!]!, b)
}
export function tsOfRecord(value: Uint8Array): number {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).readDoubleBE(1)
}
