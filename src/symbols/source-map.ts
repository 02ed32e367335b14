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
  /** Mapping segments at most: each costs about SEGMENT_BYTES of heap once decoded. */
  maxSegments: number
}

/**
 * Heap of one decoded segment (an array of 4-5 small integers in trace-mapping's line arrays),
 * measured on Node 20 with a 213,000-segment esbuild map: 101 bytes.
 */
export const SEGMENT_BYTES = 100

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
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new MapError('bad_json', `not JSON: ${(err as Error).message}`)
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new MapError('not_v3', 'not a JSON object')
  const m = raw as Record<string, unknown>
  if (m.version !== 3) throw new MapError('not_v3', `version is ${JSON.stringify(m.version)}, not 3`)
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
  const { lines, segments } = await decodeMappings(m.mappings, limits.maxSegments, pause)
  const trace = new TraceMap({
    version: 3,
    file: typeof m.file === 'string' ? m.file : undefined,
    sourceRoot: typeof m.sourceRoot === 'string' ? m.sourceRoot : undefined,
    sources,
    names: names as string[],
    mappings: lines,
  })
  let strings = 0
  for (const s of sources) strings += s?.length ?? 0
  for (const n of names as string[]) strings += n.length
  const debugId = normalizeDebugId(m.debugId ?? m.debug_id)
  return { trace, segments, bytes: segments * SEGMENT_BYTES + strings * 4 + 1024, ...(debugId ? { debugId } : {}) }
}

type Segment = number[]

/**
 * Checks every VLQ of `mappings` (base64 digits only, each value within 32 bits, segments of 1, 4
 * or 5 fields) and decodes it with trace-mapping, slice by slice. A slice is decoded as a map of its
 * own (its fields start from 0), then moved by where the slices before it ended: every field but the
 * column is a running sum across lines.
 */
async function decodeMappings(
  mappings: string,
  maxSegments: number,
  pause: () => Promise<void>,
): Promise<{ lines: Segment[][]; segments: number }> {
  const lines: Segment[][] = []
  let segments = 0
  // Running sums where the slices so far ended: source index, source line, source column, name index.
  const base = [0, 0, 0, 0]
  let from = 0
  while (from <= mappings.length) {
    let to = from + SLICE_CHARS >= mappings.length ? mappings.length : mappings.indexOf(';', from + SLICE_CHARS)
    if (to < 0) to = mappings.length
    const slice = mappings.slice(from, to)
    const sums = [0, 0, 0, 0]
    segments += checkSlice(slice, from, maxSegments - segments, sums)
    const [b0, b1, b2, b3] = base as [number, number, number, number]
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
  return { lines, segments }
}

/**
 * Checks a slice's VLQs and segment shapes and adds its fields' deltas to `sums` (source index,
 * source line, source column, name index); returns its segment count. `at`: its offset, for messages.
 */
function checkSlice(slice: string, at: number, room: number, sums: number[]): number {
  let segments = 0
  let fields = 0
  let digits = 0
  let value = 0
  let shift = 0
  for (let i = 0; i <= slice.length; i++) {
    const c = i < slice.length ? slice.charCodeAt(i) : 59
    if (c === 44 || c === 59) {
      if (digits > 0) throw new MapError('bad_mappings', `a VLQ value ends unfinished at ${at + i}`)
      if (fields === 0) {
        if (c === 44) throw new MapError('bad_mappings', `an empty segment at ${at + i}`)
        continue
      }
      if (fields !== 1 && fields !== 4 && fields !== 5)
        throw new MapError('bad_mappings', `a segment of ${fields} fields at ${at + i} (1, 4 or 5)`)
      if (++segments > room) throw new MapError('too_many_segments', 'more segments than the bound')
      fields = 0
      continue
    }
    const d = c < 128 ? DIGIT[c]! : -1
    if (d < 0) throw new MapError('bad_mappings', `${JSON.stringify(slice[i])} at ${at + i} is not a VLQ digit`)
    if (++digits > 7) throw new MapError('bad_mappings', `a VLQ value over 32 bits at ${at + i}`)
    value += (d & 31) * 2 ** shift
    shift += 5
    if ((d & 32) === 0) {
      if (value > 0xffffffff) throw new MapError('bad_mappings', `a VLQ value over 32 bits at ${at + i}`)
      // As trace-mapping's codec reads it (a lone sign bit is -2^31).
      if (fields >= 1) sums[fields - 1]! += value % 2 === 0 ? value / 2 : value === 1 ? -2147483648 : -(value - 1) / 2
      fields++
      digits = 0
      value = 0
      shift = 0
    }
  }
  return segments
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
