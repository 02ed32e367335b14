// Parsing one source map (v3) under bounds, and looking positions up in it. Browser-safe (the viewer
// maps a bundle's frames with it too): no Node APIs. Decoding and lookups are trace-mapping's; what
// is ours is the checking before any of it runs (shape, source count, every VLQ of `mappings`, the
// segment count) and the slicing of the decode, so a large map never holds the event loop for long.
import { TraceMap, decodedMappings, originalPositionFor, traceSegment } from '@jridgewell/trace-mapping'

/** Why a map was refused; also the `reason` of sourcemap_failed. */
export type MapRefusal = 'bad_json' | 'not_v3' | 'bad_mappings' | 'too_many_segments' | 'too_many_sources'

export class MapError extends Error {
  constructor(
    readonly reason: MapRefusal,
    message: string,
  ) {
    super(message)
    this.name = 'MapError'
  }
}

export interface MapLimits {
  /** Entries of `sources` at most (trace-mapping resolves each one when the map is built). */
  maxSources: number
  /**
   * Estimated heap of the parsed map at most (the cache's size in the daemon): its lines, segments,
   * names and sources at the costs below. Checked before anything is decoded.
   */
  maxBytes: number
}

// Heap costs on Node 20, measured with maps made of one kind of entry only: a segment (an array of
// 4-5 small integers in trace-mapping's line arrays) 88 bytes, 101 in a 213,000-segment esbuild
// map; a line 44 bytes empty, 59 holding segments; a name 8 bytes of slot plus its string; a source
// twice that (trace-mapping keeps it resolved beside it). Characters count 4 bytes each, for
// two-byte strings and the resolved copy.
export const SEGMENT_BYTES = 100
export const LINE_BYTES = 64
const NAME_BYTES = 24
const SOURCE_BYTES = 48
const CHAR_BYTES = 4
const MAP_BYTES = 1024

/**
 * JSON.parse builds a tree far larger than its text for some texts (`{},` is 3 characters and 56
 * bytes of heap, `0.5,` 4 and 24): the text is scanned first, and refused past these, so one
 * parse holds at most about 32 MiB beside the text. A source map is one object of a few arrays of
 * strings, 3 levels deep.
 */
export const MAX_JSON_VALUES = 1_000_000
const MAX_JSON_CONTAINERS = 10_000
const MAX_JSON_DEPTH = 32

/** A map ready for lookups, with what the cache and the stores need to know of it. */
export interface ParsedMap {
  readonly trace: TraceMap
  /** The map's Debug ID (`debugId`, or `debug_id` as some tools write it), lower case. */
  readonly debugId?: string
  readonly segments: number
  /** Estimated heap held by the parsed map. */
  readonly bytes: number
}

export interface OriginalPosition {
  source: string
  /** 1-based, as DevTools prints it. */
  line: number
  /** 1-based. */
  column: number
  name?: string
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** `mappings` is checked and decoded in slices of about this many characters, yielding between them. */
const SLICE_CHARS = 128 * 1024

/** Base64 VLQ digit values (-1: not a digit). */
const DIGIT = new Int8Array(128).fill(-1)
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries())
  DIGIT[c.charCodeAt(0)] = i

/** A Debug ID as stored (lower case), or undefined when the value is not a UUID. */
export function normalizeDebugId(v: unknown): string | undefined {
  return typeof v === 'string' && UUID.test(v.trim()) ? v.trim().toLowerCase() : undefined
}

/**
 * Parses and checks a map, decodes its mappings in slices (`pause` runs between slices: the caller
 * yields to its event loop there) and builds the lookup structure. sourcesContent is dropped: frames
 * need positions, not the sources. Throws MapError.
 */
export async function parseSourceMap(
  text: string,
  limits: MapLimits,
  pause: () => Promise<void> = () => Promise.resolve(),
): Promise<ParsedMap> {
  await scanMapText(text, limits.maxBytes, pause)
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    // V8's message quotes the text: a failure must not carry what the answer said.
    throw new MapError('bad_json', jsonErrorMessage(err))
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new MapError('not_v3', 'not a JSON object')
  const m = raw as Record<string, unknown>
  if (m.version !== 3) throw new MapError('not_v3', `version is ${describe(m.version)}, not 3`)
  if (m.sections !== undefined)
    throw new MapError('not_v3', 'an index map (sections) is not supported; upload the map of each section')
  if (typeof m.mappings !== 'string') throw new MapError('not_v3', 'mappings is not a string')
  if (!Array.isArray(m.sources) || !m.sources.every(s => s === null || typeof s === 'string'))
    throw new MapError('not_v3', 'sources is not a list of strings')
  if (m.sources.length > limits.maxSources)
    throw new MapError('too_many_sources', `${m.sources.length} sources (at most ${limits.maxSources})`)
  const names = m.names ?? []
  if (!Array.isArray(names) || !names.every(n => typeof n === 'string'))
    throw new MapError('not_v3', 'names is not a list of strings')
  if (m.sourceRoot !== undefined && m.sourceRoot !== null && typeof m.sourceRoot !== 'string')
    throw new MapError('not_v3', 'sourceRoot is not a string')
  const sources = m.sources as (string | null)[]
  let strings = 0
  for (const s of sources) strings += s?.length ?? 0
  for (const n of names as string[]) strings += n.length
  const fixed = MAP_BYTES + sources.length * SOURCE_BYTES + names.length * NAME_BYTES + strings * CHAR_BYTES
  if (fixed > limits.maxBytes)
    throw new MapError(
      'too_many_segments',
      `${names.length} names and ${sources.length} sources alone decode to ${fixed} bytes, over the bound of ${limits.maxBytes}`,
    )
  const { lines, segments } = await decodeMappings(m.mappings, limits.maxBytes - fixed, limits.maxBytes, pause)
  let trace: TraceMap
  try {
    trace = new TraceMap({
      version: 3,
      file: typeof m.file === 'string' ? m.file : undefined,
      sourceRoot: typeof m.sourceRoot === 'string' ? m.sourceRoot : undefined,
      sources,
      names: names as string[],
      mappings: lines,
    })
  } catch (err) {
    // Checked above as far as the format goes: anything left is still the map's fault, not ours.
    throw new MapError('not_v3', `the map could not be built (${(err as Error)?.name ?? 'error'})`)
  }
  const debugId = normalizeDebugId(m.debugId ?? m.debug_id)
  return {
    trace,
    segments,
    bytes: fixed + segments * SEGMENT_BYTES + lines.length * LINE_BYTES,
    ...(debugId ? { debugId } : {}),
  }
}

type Segment = number[]

/** One slice of `mappings` as the check pass found it: where it ends and its fields' running deltas. */
interface Slice {
  to: number
  sums: [number, number, number, number]
}

/**
 * Checks every VLQ of `mappings` (base64 digits only, each value within 32 bits, segments of 1, 4
 * or 5 fields) and what its lines and segments would cost against `room` bytes, all of it before
 * any of it is decoded; then decodes it with trace-mapping, slice by slice. A slice is decoded as a
 * map of its own (its fields start from 0), then moved by where the slices before it ended: every
 * field but the column is a running sum across lines.
 */
async function decodeMappings(
  mappings: string,
  room: number,
  maxBytes: number,
  pause: () => Promise<void>,
): Promise<{ lines: Segment[][]; segments: number }> {
  const slices: Slice[] = []
  const cost = { bytes: 0, lines: 0, segments: 0 }
  for (let from = 0; from <= mappings.length;) {
    let to = from + SLICE_CHARS >= mappings.length ? mappings.length : mappings.indexOf(';', from + SLICE_CHARS)
    if (to < 0) to = mappings.length
    const sums: Slice['sums'] = [0, 0, 0, 0]
    checkSlice(mappings, from, to, room, maxBytes, cost, sums)
    slices.push({ to, sums })
    from = to + 1
    if (from <= mappings.length) await pause()
  }
  const lines: Segment[][] = []
  // Running sums where the slices so far ended: source index, source line, source column, name index.
  const base = [0, 0, 0, 0]
  let from = 0
  for (const { to, sums } of slices) {
    const [b0, b1, b2, b3] = base as [number, number, number, number]
    const slice = mappings.slice(from, to)
    for (const line of decodedMappings(new TraceMap({ version: 3, sources: [], names: [], mappings: slice }))) {
      const out: Segment[] = new Array(line.length)
      for (let i = 0; i < line.length; i++) {
        const s = line[i]!
        out[i] =
          s.length === 1
            ? [s[0]]
            : s.length === 4
              ? [s[0], s[1] + b0, s[2] + b1, s[3] + b2]
              : [s[0], s[1] + b0, s[2] + b1, s[3] + b2, s[4] + b3]
      }
      lines.push(out)
    }
    for (let i = 0; i < 4; i++) base[i]! += sums[i]!
    from = to + 1
    if (from <= mappings.length) await pause()
  }
  return { lines, segments: cost.segments }
}

/**
 * Checks the VLQs and segment shapes of mappings[from, to) and adds its fields' deltas to `sums`
 * (source index, source line, source column, name index), its lines and segments to `cost`.
 */
function checkSlice(
  text: string,
  from: number,
  to: number,
  room: number,
  maxBytes: number,
  cost: { bytes: number; lines: number; segments: number },
  sums: number[],
): void {
  let fields = 0
  let digits = 0
  let value = 0
  let shift = 0
  for (let i = from; i <= to; i++) {
    const c = i < to ? text.charCodeAt(i) : 59
    if (c === 44 || c === 59) {
      if (digits > 0) throw new MapError('bad_mappings', `a VLQ value ends unfinished at ${i}`)
      if (fields === 0 && c === 44) throw new MapError('bad_mappings', `an empty segment at ${i}`)
      if (fields !== 0) {
        if (fields !== 1 && fields !== 4 && fields !== 5)
          throw new MapError('bad_mappings', `a segment of ${fields} fields at ${i} (1, 4 or 5)`)
        cost.segments++
        cost.bytes += SEGMENT_BYTES
        fields = 0
      }
      // An empty line is a line array all the same: a map of millions of ';' holds no segment.
      if (c === 59) {
        cost.lines++
        cost.bytes += LINE_BYTES
      }
      if (cost.bytes > room)
        throw new MapError(
          'too_many_segments',
          `the map decodes to more than ${maxBytes} bytes (${cost.lines} lines and ${cost.segments} segments ` +
            `by offset ${i}, about ${LINE_BYTES} and ${SEGMENT_BYTES} bytes each)`,
        )
      continue
    }
    const d = c < 128 ? DIGIT[c]! : -1
    if (d < 0) throw new MapError('bad_mappings', `${JSON.stringify(text[i])} at ${i} is not a VLQ digit`)
    if (++digits > 7) throw new MapError('bad_mappings', `a VLQ value over 32 bits at ${i}`)
    value += (d & 31) * 2 ** shift
    shift += 5
    if ((d & 32) === 0) {
      if (value > 0xffffffff) throw new MapError('bad_mappings', `a VLQ value over 32 bits at ${i}`)
      // As trace-mapping's codec reads it (a lone sign bit is -2^31).
      if (fields >= 1) sums[fields - 1]! += value % 2 === 0 ? value / 2 : value === 1 ? -2147483648 : -(value - 1) / 2
      fields++
      digits = 0
      value = 0
      shift = 0
    }
  }
}

/**
 * Reads a map's JSON text as it arrives, for what JSON.parse and the decode would build without
 * building either: values (a comma or a container each, close enough), containers and nesting
 * outside strings, and the lines and segments of the top-level `mappings` string. Refuses (throws
 * MapError) past the JSON bounds above, or once those lines and segments alone pass the map's heap
 * bound, so a fetch can stop there. Segments are counted by their commas, a lower bound: what
 * this refuses, the full check after the parse would refuse too. Invalid JSON is left to JSON.parse.
 */
export class MapTextScanner {
  private values = 0
  private containers = 0
  private depth = 0
  private inString = false
  private escaped = false
  /** At depth 1, after `{` or `,`: the next string is a key. */
  private expectKey = false
  private inKey = false
  private key = ''
  /** The key whose value comes next at depth 1. */
  private valueOf = ''
  private inMappings = false
  private lines = 0
  private commas = 0
  private offset = 0

  constructor(private readonly maxBytes: number) {}

  push(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (c === 92) this.escaped = true
        else if (c === 34) {
          this.inString = false
          if (this.inKey) {
            this.inKey = false
            this.valueOf = this.key
          }
          this.inMappings = false
        } else if (this.inKey) {
          if (this.key.length < 16) this.key += text[i]
        } else if (this.inMappings && (c === 59 || c === 44)) {
          if (c === 59) this.lines++
          else this.commas++
          if ((this.lines + 1) * LINE_BYTES + this.commas * SEGMENT_BYTES > this.maxBytes - MAP_BYTES)
            throw new MapError(
              'too_many_segments',
              `the map decodes to more than ${this.maxBytes} bytes (over ${this.lines} lines and ${this.commas} ` +
                `segments in its mappings, about ${LINE_BYTES} and ${SEGMENT_BYTES} bytes each)`,
            )
        }
        continue
      }
      if (c === 34) {
        this.inString = true
        if (this.depth === 1 && this.expectKey) {
          this.inKey = true
          this.key = ''
        } else this.inMappings = this.depth === 1 && this.valueOf === 'mappings'
      } else if (c === 123 || c === 91) {
        if (++this.depth > MAX_JSON_DEPTH)
          throw new MapError('not_v3', `nested over ${MAX_JSON_DEPTH} levels deep at ${this.offset + i}`)
        if (++this.containers > MAX_JSON_CONTAINERS)
          throw new MapError('not_v3', `over ${MAX_JSON_CONTAINERS} objects and arrays (a map has a few)`)
        this.values++
        this.expectKey = c === 123 && this.depth === 1
      } else if (c === 125 || c === 93) this.depth--
      else if (c === 58) {
        if (this.depth === 1) this.expectKey = false
      } else if (c === 44) {
        this.values++
        if (this.depth === 1) {
          this.expectKey = true
          this.valueOf = ''
        }
      }
      if (this.values > MAX_JSON_VALUES)
        throw new MapError('too_many_segments', `over ${MAX_JSON_VALUES} JSON values (names, sources, numbers)`)
    }
    this.offset += text.length
  }
}

/** The whole text through the scanner, in slices with `pause` between them. */
async function scanMapText(text: string, maxBytes: number, pause: () => Promise<void>): Promise<void> {
  const scanner = new MapTextScanner(maxBytes)
  const step = SLICE_CHARS * 8
  for (let from = 0; from < text.length; from += step) {
    if (from > 0) await pause()
    scanner.push(text.slice(from, from + step))
  }
}

/** JSON.parse's failure without the text it quotes: where it stopped, or that the text ended early. */
function jsonErrorMessage(err: unknown): string {
  const message = String((err as Error)?.message)
  const at = /position (\d+)/.exec(message)?.[1]
  if (at !== undefined) return `not JSON at offset ${at}`
  return /end of JSON input/.test(message) ? 'not JSON: it ends early' : 'not JSON'
}

/** A value named in a message by its kind, never by its content. */
function describe(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v)
  if (typeof v === 'string') return `a string of ${v.length} characters`
  return Array.isArray(v) ? 'an array' : 'an object'
}

/** The original position of a generated one (0-based line and column, as CDP gives them). */
export function originalAt(map: ParsedMap, line: number, column: number): OriginalPosition | undefined {
  if (line < 0 || column < 0) return undefined
  const o = originalPositionFor(map.trace, { line: line + 1, column })
  // A map can be well-formed VLQ and still point nowhere (a source index past `sources`, a negative
  // line): such a position is no position, and must not make the event invalid.
  if (typeof o.source !== 'string' || o.line === null || o.column === null || o.line < 1 || o.column < 0)
    return undefined
  const out: OriginalPosition = { source: o.source, line: o.line, column: o.column + 1 }
  if (o.name) out.name = o.name
  return out
}

/**
 * The name the map gives the token that starts at a generated position (0-based), if any. Only a
 * segment at that very column names it: the nearest one before it names some earlier token.
 */
export function nameAt(map: ParsedMap, line: number, column: number): string | undefined {
  if (line < 0 || column < 0) return undefined
  const seg = traceSegment(map.trace, line, column)
  if (!seg || seg.length !== 5 || seg[0] !== column) return undefined
  const name = map.trace.names[seg[4]]
  return typeof name === 'string' ? name : undefined
}
