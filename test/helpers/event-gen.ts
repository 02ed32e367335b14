// Seeded random valid events of any type, generated from the event model's own TypeBox schemas,
// with knobs to make them huge: long strings (multi-byte, escapes, surrogate pairs), many array
// elements, many header entries. Used by the envelope-cap property tests and bench/hostile.ts.
import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox'
import { EVENT_DEFS, TRACEPARENT_PATTERN, type EventType } from '../../src/events/index.js'
import type { EventInput } from '../../src/pipeline/pipeline.js'

export interface GenShape {
  /** Longest generated string, UTF-16 units. */
  maxString: number
  /** Most array elements / record entries. */
  maxItems: number
  /** Probability an optional property is present. */
  optional: number
}

/** mulberry32: small, fast, deterministic. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ASCII, JSON escapes, control chars (6-byte escapes), 2/3-byte chars, a surrogate pair.
const ALPHABET = ['a', 'b', 'Z', '0', ' ', '"', '\\', '\n', '\u0001', 'é', 'ж', '€', '中', '😀']

/** website_path's pattern: any string without '?' or '#' (genString's allowHash = false). */
const NO_QUERY_PATTERN = '^[^?#]*$'

/** A value for the model's other patterns: fixed-length lower-case hex ids and W3C traceparents. */
function genPatterned(pattern: string, r: () => number): string {
  const hex = (n: number) =>
    '1' + Array.from({ length: n - 1 }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('')
  const fixed = /^\^\[0-9a-f\]\{(\d+)\}\$$/.exec(pattern)
  if (fixed) return hex(Number(fixed[1]))
  if (pattern === TRACEPARENT_PATTERN) return `00-${hex(32)}-${hex(16)}-01`
  throw new Error(`event-gen: no generator for the pattern ${pattern}`)
}

export function genString(r: () => number, len: number, allowHash = true): string {
  // Runs of one char keep generation cheap for megabyte strings.
  let s = ''
  while (s.length < len) {
    let ch = ALPHABET[Math.floor(r() * ALPHABET.length)]!
    if (!allowHash && (ch === '?' || ch === '#')) ch = 'a'
    const run = Math.min(len - s.length, 1 + Math.floor(r() * 64))
    s += ch.repeat(Math.max(1, Math.floor(run / ch.length)))
  }
  return s
}

function gen(schema: TSchema, r: () => number, shape: GenShape, root: TSchema, depth: number): unknown {
  const kind = (schema as { [Kind]: string })[Kind]
  switch (kind) {
    case 'Object': {
      const out: Record<string, unknown> = {}
      for (const [k, s] of Object.entries((schema as TSchema & { properties: Record<string, TSchema> }).properties)) {
        const optional = (s as { [OptionalKind]?: string })[OptionalKind] === 'Optional'
        if (optional && (r() > shape.optional || ((s as { [Kind]: string })[Kind] === 'This' && depth > 3))) continue
        out[k] = gen(s, r, shape, root, depth + 1)
      }
      return out
    }
    case 'Record': {
      const valueSchema = Object.values(
        (schema as TSchema & { patternProperties: Record<string, TSchema> }).patternProperties,
      )[0]!
      const out: Record<string, unknown> = {}
      const n = Math.min(
        Math.floor(r() * shape.maxItems),
        (schema as { maxProperties?: number }).maxProperties ?? Infinity,
      )
      for (let i = 0; i < n; i++)
        out[`h${i}-${genString(r, Math.floor(r() * 16), true)}`] = gen(valueSchema, r, shape, root, depth + 1)
      return out
    }
    case 'Array': {
      const s = schema as TSchema & { items: TSchema; maxItems?: number }
      const n = Math.min(Math.floor(r() * shape.maxItems), s.maxItems ?? Infinity)
      return Array.from({ length: n }, () => gen(s.items, r, shape, root, depth + 1))
    }
    case 'String': {
      const s = schema as { maxLength?: number; minLength?: number; pattern?: string }
      const len = Math.max(s.minLength ?? 0, Math.min(Math.floor(r() * r() * shape.maxString), s.maxLength ?? Infinity))
      if (s.pattern !== undefined && s.pattern !== NO_QUERY_PATTERN) return genPatterned(s.pattern, r)
      let v = genString(r, len, s.pattern === undefined)
      if (s.maxLength !== undefined && v.length > s.maxLength) v = 'x'.repeat(s.maxLength)
      return v
    }
    case 'Integer': {
      const { minimum, maximum } = schema as { minimum?: number; maximum?: number }
      const min = minimum ?? -1000
      return min + Math.floor(r() * (maximum !== undefined ? maximum - min + 1 : 100000))
    }
    case 'Number': {
      const { minimum, maximum } = schema as { minimum?: number; maximum?: number }
      const min = minimum ?? -1000
      return min + r() * (maximum !== undefined ? maximum - min : 100000)
    }
    case 'Boolean':
      return r() < 0.5
    case 'Literal':
      return (schema as TSchema & { const: unknown }).const
    case 'Union': {
      const anyOf = (schema as TSchema & { anyOf: TSchema[] }).anyOf
      return gen(anyOf[Math.floor(r() * anyOf.length)]!, r, shape, root, depth + 1)
    }
    case 'This':
      return gen(root, r, shape, root, depth + 1)
    default:
      throw new Error(`event-gen: schema kind ${kind} not handled`)
  }
}

/** A random valid input of `type` (data from the type's schema). */
export function genEvent(type: EventType, r: () => number, shape: GenShape): EventInput {
  const dataSchema = EVENT_DEFS[type].data as TSchema
  const data = genData(dataSchema, r, shape)
  return { type, data, source: { kind: 'cdp' } } as EventInput
}

function genData(schema: TSchema, r: () => number, shape: GenShape): unknown {
  // Recursive schemas (StackTrace) carry their own root; find them as we go.
  const walk = (s: TSchema, depth: number): unknown => {
    if ((s as { $id?: string }).$id === 'StackTrace') return gen(s, r, shape, s, depth)
    const kind = (s as { [Kind]: string })[Kind]
    if (kind === 'Object') {
      const out: Record<string, unknown> = {}
      for (const [k, p] of Object.entries((s as TSchema & { properties: Record<string, TSchema> }).properties)) {
        const optional = (p as { [OptionalKind]?: string })[OptionalKind] === 'Optional'
        if (optional && r() > shape.optional) continue
        out[k] = walk(p, depth + 1)
      }
      return out
    }
    return gen(s, r, shape, s, depth)
  }
  return walk(schema, 0)
}
