// Mapping the call frames of a stored stack trace through source maps. Pure and browser-safe: the
// daemon (capture and read paths), the OTLP export and the viewer (a bundle's maps) all map with it,
// so every reader shows the same `original` positions.
import type { StackTrace } from '../events/index.js'
import { nameAt, originalAt, type OriginalPosition, type ParsedMap } from './source-map.js'

/** The parsed map that covers a script URL now (undefined: none known, or not in memory). */
export type MapOf = (scriptUrl: string) => ParsedMap | undefined

/** Console levels whose messages carry a stack worth mapping (DevTools shows theirs expanded). */
const STACK_LEVELS = new Set(['error', 'warning', 'warn', 'trace', 'assert'])

/** Parent entries followed at most (the schema allows any depth; async chains and causes are short). */
const MAX_DEPTH = 32

/**
 * Whether an event's stack trace is mapped: uncaught errors and unhandled rejections and
 * console.error (console_error), console.warn / trace / assert (console_log at those levels).
 * console.log and the like keep their frames as they are: mapping them would fetch maps for pages
 * that never fail.
 */
export function isMappable(type: string, data: { level?: unknown; stack_trace?: unknown }): boolean {
  if (!data.stack_trace) return false
  if (type === 'console_error') return true
  return type === 'console_log' && typeof data.level === 'string' && STACK_LEVELS.has(data.level)
}

/** The distinct script URLs of a stack's frames (parents included), in order of appearance. */
export function stackUrls(stack: StackTrace, into: Set<string> = new Set()): Set<string> {
  let s: StackTrace | undefined = stack
  for (let depth = 0; s && depth < MAX_DEPTH; depth++, s = s.parent)
    for (const f of s.callFrames) if (f.url) into.add(f.url)
  return into
}

/**
 * The stack with `original` on every frame a known map covers (frames that have one keep it), or
 * undefined when nothing was added. The input is not changed.
 *
 * `name` is the original name of the frame's function. A frame's own position names the token
 * there (the callee of a call, or nothing), not the function it is in; as symbolicators do, the
 * name comes from the call site one frame down, whose mapped token is the call of this function.
 * The outermost frame of each chain has no call site below it and so no name.
 */
export function mapStack(
  stack: StackTrace,
  mapOf: MapOf,
  maskSource?: (source: string) => string,
): StackTrace | undefined {
  // One lookup per script for the whole stack: frames of one script are the common case.
  const seen = new Map<string, ParsedMap | undefined>()
  const once: MapOf = url => {
    if (seen.has(url)) return seen.get(url)
    const map = mapOf(url)
    seen.set(url, map)
    return map
  }
  return mapChain(stack, once, maskSource, 0)
}

function mapChain(
  st: StackTrace,
  mapOf: MapOf,
  mask: ((source: string) => string) | undefined,
  depth: number,
): StackTrace | undefined {
  const parent = st.parent && depth < MAX_DEPTH ? mapChain(st.parent, mapOf, mask, depth + 1) : undefined
  const frames = st.callFrames
  let out: StackTrace['callFrames'] | undefined
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i]!
    if (f.original || !f.url) continue
    const map = mapOf(f.url)
    if (!map) continue
    const pos = originalAt(map, f.lineNumber, f.columnNumber)
    if (!pos) continue
    // Sources are the map's (often `webpack://` URLs): masked like every other URL of an event.
    const source = mask && pos.source.includes('://') ? mask(pos.source) : pos.source
    const original: OriginalPosition = { source, line: pos.line, column: pos.column }
    const name = callerName(frames[i + 1], mapOf)
    if (name !== undefined) original.name = name
    out ??= frames.slice()
    out[i] = { ...f, original }
  }
  if (!out && !parent) return undefined
  const next: StackTrace = { ...st, callFrames: out ?? frames }
  if (parent) next.parent = parent
  return next
}

/** The mapped name of the token at a call site (the frame below the one being named). */
function callerName(caller: StackTrace['callFrames'][number] | undefined, mapOf: MapOf): string | undefined {
  if (!caller?.url) return undefined
  const map = mapOf(caller.url)
  return map ? nameAt(map, caller.lineNumber, caller.columnNumber) : undefined
}

/** An envelope's data with its stack mapped, or undefined when it is not mappable or nothing changed. */
export function mapEventData<D extends { level?: unknown; stack_trace?: StackTrace }>(
  type: string,
  data: D,
  mapOf: MapOf,
  maskSource?: (source: string) => string,
): D | undefined {
  if (!isMappable(type, data)) return undefined
  const mapped = mapStack(data.stack_trace!, mapOf, maskSource)
  return mapped ? { ...data, stack_trace: mapped } : undefined
}
