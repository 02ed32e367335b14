// Pure rendering of CDP Runtime values the way a DevTools console prints them, so console events
// carry readable strings (`{a: 1, b: "x"}`, `[1, 2]`) instead of `[object Object]`.
import type { Protocol } from 'devtools-protocol'
import type { StackTrace } from '../src/collector-kit.js'

type RemoteObject = Protocol.Runtime.RemoteObject
type ObjectPreview = Protocol.Runtime.ObjectPreview
type PropertyPreview = Protocol.Runtime.PropertyPreview

/** One console argument as the console shows it at top level (strings unquoted). */
export function renderRemoteObject(obj: RemoteObject): string {
  switch (obj.type) {
    case 'string':
      return String(obj.value ?? '')
    case 'number':
      return obj.unserializableValue ?? String(obj.value)
    case 'bigint':
      return obj.unserializableValue ?? `${String(obj.value)}n`
    case 'boolean':
      return String(obj.value)
    case 'undefined':
      return 'undefined'
    case 'symbol':
    case 'function':
      return obj.description ?? obj.type
    case 'object':
      break
    default:
      return obj.description ?? String(obj.value)
  }
  if (obj.subtype === 'null') return 'null'
  // Errors, DOM nodes, dates, regexps: their description is exactly what the console prints.
  if (obj.subtype && DESCRIBED_SUBTYPES.has(obj.subtype)) return obj.description ?? obj.className ?? 'Object'
  if (obj.preview) return renderPreview(obj.preview)
  if (obj.value !== undefined) return safeJson(obj.value)
  return obj.description ?? obj.className ?? 'Object'
}

/**
 * Console arguments rendered: each cut to `maxBytes` UTF-16 units, at most maxBytes / 3 of them,
 * and, when they add up to more than maxBytes, all cut to one common length (`cut` says whether
 * anything was). With maxBytes the envelope cap, an 8 MB argument, a million arguments or 5,000
 * arguments of 300 characters are never rendered, copied, measured and serialised in full on the
 * way (work bounded per call). The common length is the longest that leaves room for the event
 * around the arguments (FRAME_SHARE of the cap, and 3 bytes per argument for its quotes and comma;
 * the first argument counts twice, as the collector stores it as the event's text too),
 * so a call of plain text is stored as it leaves here with one serialisation; the envelope fit
 * still has the last word (escapes, non-ASCII text, a large stack trace). When that length would
 * be very short (many arguments), the cut is only as deep as the fit's would surely go anyway.
 */
export function renderArgs(objs: readonly RemoteObject[], maxBytes: number): { args: string[]; cut: boolean } {
  const n = Math.min(objs.length, Math.floor(maxBytes / 3))
  const args = new Array<string>(n)
  let cut = n < objs.length
  let total = 0
  for (let i = 0; i < n; i++) {
    const s = renderRemoteObject(objs[i]!)
    if (s.length > maxBytes) cut = true
    total += (args[i] = cutChars(s, maxBytes)).length
  }
  // The first argument is stored twice: also as the event's text.
  if (n > 0) total += args[0]!.length
  if (total > maxBytes) {
    const lengths = new Uint32Array(n + 1)
    for (let i = 0; i < n; i++) lengths[i] = args[i]!.length
    lengths[n] = args[0]!.length
    let level = commonLength(lengths, maxBytes - Math.ceil(maxBytes * FRAME_SHARE) - 3 * (n + 1))
    // The arguments still add up to more than the cap when cut to this: the envelope fit cuts every
    // one of them below it anyway (its water level is in encoded bytes, never fewer than units), so
    // the stored envelope is the same as without this cut.
    if (level < MIN_COMMON_LENGTH) level = Math.max(commonLength(lengths, maxBytes) + 1, MIN_COMMON_LENGTH)
    for (let i = 0; i < n; i++)
      if (args[i]!.length > level) {
        args[i] = args[i]!.slice(0, level)
        cut = true
      }
  }
  return { args, cut }
}

/** Share of the cap left for the rest of a console event (context, level, text, stack trace). */
const FRAME_SHARE = 1 / 64
/**
 * No common length below this: the envelope fit never cuts a string below 64 bytes before it drops
 * whole entries, and a cut it would not make must not be made here.
 */
const MIN_COMMON_LENGTH = 64

/** The largest L >= 0 with sum(min(length, L)) <= budget (a binary search: no sort, no callbacks). */
function commonLength(lengths: Uint32Array, budget: number): number {
  if (budget < 0) return 0
  let lo = 0
  let hi = 0
  for (const l of lengths) if (l > hi) hi = l
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    let sum = 0
    for (const l of lengths) sum += l < mid ? l : mid
    if (sum <= budget) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** The first `max` UTF-16 units of s (the event is short-lived: the slice's parent goes with it). */
export function cutChars(s: string, max: number): string {
  return s.length <= max ? s : s.slice(0, max)
}

const DESCRIBED_SUBTYPES = new Set(['error', 'node', 'date', 'regexp', 'promise', 'proxy', 'wasmvalue', 'trustedtype'])

/** An object preview: arrays as `[1, 2]`, maps as `Map(1) {"a" => 1}`, objects as `{a: 1}` (`Foo {a: 1}` for classes). */
export function renderPreview(p: ObjectPreview): string {
  const more = p.overflow ? '…' : ''
  if (p.subtype === 'array' || p.subtype === 'typedarray') {
    const items = p.properties.map(prop =>
      /^\d+$/.test(prop.name) ? renderProperty(prop) : `${prop.name}: ${renderProperty(prop)}`,
    )
    if (more) items.push(more)
    const prefix = p.subtype === 'typedarray' && p.description ? `${p.description} ` : ''
    return `${prefix}[${items.join(', ')}]`
  }
  if ((p.subtype === 'map' || p.subtype === 'set') && p.entries) {
    const items = p.entries.map(e =>
      e.key ? `${renderPreview(e.key)} => ${renderPreview(e.value)}` : renderPreview(e.value),
    )
    if (more) items.push(more)
    return `${p.description ?? p.subtype} {${items.join(', ')}}`
  }
  if (p.type !== 'object' || (p.subtype && DESCRIBED_SUBTYPES.has(p.subtype))) {
    // Entries of maps/sets are previews of primitives too.
    return p.type === 'string' ? JSON.stringify(p.description ?? '') : (p.description ?? p.type)
  }
  const items = p.properties.map(prop => `${prop.name}: ${renderProperty(prop)}`)
  if (more) items.push(more)
  const prefix = p.description && p.description !== 'Object' ? `${p.description} ` : ''
  return `${prefix}{${items.join(', ')}}`
}

function renderProperty(prop: PropertyPreview): string {
  if (prop.valuePreview) return renderPreview(prop.valuePreview)
  switch (prop.type) {
    case 'string':
      return JSON.stringify(prop.value ?? '')
    case 'undefined':
      return 'undefined'
    case 'function':
      return 'ƒ'
    case 'object':
      if (prop.subtype === 'null') return 'null'
      // Nested plain objects have no preview of their own; the console prints them collapsed.
      if (!prop.subtype && prop.value === 'Object') return '{…}'
      return prop.value ?? 'Object'
    default:
      return prop.value ?? prop.type
  }
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v)
  } catch {
    return String(v)
  }
}

/** An error's description without its "    at ..." stack lines (the stack travels in stack_trace). */
export function errorMessage(description: string): string {
  const lines = description.split('\n')
  const stackStart = lines.findIndex(l => /^\s+at\s/.test(l))
  return (stackStart === -1 ? lines : lines.slice(0, stackStart)).join('\n').trimEnd()
}

/**
 * The text of an uncaught exception as the console shows it: exceptionDetails.text is only the
 * prefix ("Uncaught", "Uncaught (in promise)"); the message comes from the thrown value. Some
 * errors (syntax errors) already carry the full message in text, so it is not repeated.
 */
export function exceptionText(d: Protocol.Runtime.ExceptionDetails): string {
  const head = d.text
  const ex = d.exception
  if (!ex) return head
  const msg =
    ex.type === 'object' && ex.subtype === 'error' && ex.description !== undefined
      ? errorMessage(ex.description)
      : renderRemoteObject(ex)
  if (!msg || head.includes(msg)) return head
  return head ? `${head} ${msg}` : msg
}

/** CDP's stack trace in its own camelCase shape, minus fields our schema does not carry (parentId). */
export function stackTraceOf(st: Protocol.Runtime.StackTrace | undefined): StackTrace | undefined {
  if (!st) return undefined
  const out: StackTrace = {
    callFrames: st.callFrames.map(f => ({
      functionName: f.functionName,
      scriptId: f.scriptId,
      url: f.url,
      lineNumber: f.lineNumber,
      columnNumber: f.columnNumber,
    })),
  }
  if (st.description !== undefined) out.description = st.description
  const parent = stackTraceOf(st.parent)
  if (parent) out.parent = parent
  return out
}
