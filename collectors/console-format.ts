// Pure rendering of CDP Runtime values the way a DevTools console prints them, so console events
// carry readable strings (`{a: 1, b: "x"}`, `[1, 2]`) instead of `[object Object]`.
import type { Protocol } from 'devtools-protocol'
import type { StackTrace } from '../src/events/index.js'

type RemoteObject = Protocol.Runtime.RemoteObject
type ObjectPreview = Protocol.Runtime.ObjectPreview
type PropertyPreview = Protocol.Runtime.PropertyPreview

/** One console argument as the console shows it at top level (strings unquoted). */
export function renderRemoteObject(obj: RemoteObject): string {
  switch (obj.type) {
    case 'string': return String(obj.value ?? '')
    case 'number': return obj.unserializableValue ?? String(obj.value)
    case 'bigint': return obj.unserializableValue ?? `${String(obj.value)}n`
    case 'boolean': return String(obj.value)
    case 'undefined': return 'undefined'
    case 'symbol':
    case 'function': return obj.description ?? obj.type
    case 'object': break
    default: return obj.description ?? String(obj.value)
  }
  if (obj.subtype === 'null') return 'null'
  // Errors, DOM nodes, dates, regexps: their description is exactly what the console prints.
  if (obj.subtype && DESCRIBED_SUBTYPES.has(obj.subtype)) return obj.description ?? obj.className ?? 'Object'
  if (obj.preview) return renderPreview(obj.preview)
  if (obj.value !== undefined) return safeJson(obj.value)
  return obj.description ?? obj.className ?? 'Object'
}

/**
 * Console arguments rendered, each cut to `maxBytes` UTF-16 units and at most maxBytes / 3 of them
 * (`cut` says whether anything was). With maxBytes the envelope cap this loses nothing the pipeline
 * would keep: a string of maxBytes units encodes to more than the cap, and an array entry costs at
 * least 3 bytes, so the envelope fit cuts further anyway; but an 8 MB argument or a million
 * arguments are never rendered, copied and serialised in full on the way (work bounded per call).
 */
export function renderArgs(objs: readonly RemoteObject[], maxBytes: number): { args: string[]; cut: boolean } {
  const n = Math.min(objs.length, Math.floor(maxBytes / 3))
  const args = new Array<string>(n)
  let cut = n < objs.length
  for (let i = 0; i < n; i++) {
    const s = renderRemoteObject(objs[i]!)
    if (s.length > maxBytes) cut = true
    args[i] = cutChars(s, maxBytes)
  }
  return { args, cut }
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
    const items = p.properties.map((prop) => (/^\d+$/.test(prop.name) ? renderProperty(prop) : `${prop.name}: ${renderProperty(prop)}`))
    if (more) items.push(more)
    const prefix = p.subtype === 'typedarray' && p.description ? `${p.description} ` : ''
    return `${prefix}[${items.join(', ')}]`
  }
  if ((p.subtype === 'map' || p.subtype === 'set') && p.entries) {
    const items = p.entries.map((e) => (e.key ? `${renderPreview(e.key)} => ${renderPreview(e.value)}` : renderPreview(e.value)))
    if (more) items.push(more)
    return `${p.description ?? p.subtype} {${items.join(', ')}}`
  }
  if (p.type !== 'object' || (p.subtype && DESCRIBED_SUBTYPES.has(p.subtype))) {
    // Entries of maps/sets are previews of primitives too.
    return p.type === 'string' ? JSON.stringify(p.description ?? '') : p.description ?? p.type
  }
  const items = p.properties.map((prop) => `${prop.name}: ${renderProperty(prop)}`)
  if (more) items.push(more)
  const prefix = p.description && p.description !== 'Object' ? `${p.description} ` : ''
  return `${prefix}{${items.join(', ')}}`
}

function renderProperty(prop: PropertyPreview): string {
  if (prop.valuePreview) return renderPreview(prop.valuePreview)
  switch (prop.type) {
    case 'string': return JSON.stringify(prop.value ?? '')
    case 'undefined': return 'undefined'
    case 'function': return 'ƒ'
    case 'object':
      if (prop.subtype === 'null') return 'null'
      // Nested plain objects have no preview of their own; the console prints them collapsed.
      if (!prop.subtype && prop.value === 'Object') return '{…}'
      return prop.value ?? 'Object'
    default: return prop.value ?? prop.type
  }
}

function safeJson(v: unknown): string {
  try { return JSON.stringify(v) ?? String(v) } catch { return String(v) }
}

/** An error's description without its "    at ..." stack lines (the stack travels in stack_trace). */
export function errorMessage(description: string): string {
  const lines = description.split('\n')
  const stackStart = lines.findIndex((l) => /^\s+at\s/.test(l))
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
  const msg = ex.type === 'object' && ex.subtype === 'error' && ex.description !== undefined
    ? errorMessage(ex.description)
    : renderRemoteObject(ex)
  if (!msg || head.includes(msg)) return head
  return head ? `${head} ${msg}` : msg
}

/** CDP's stack trace in its own camelCase shape, minus fields our schema does not carry (parentId). */
export function stackTraceOf(st: Protocol.Runtime.StackTrace | undefined): StackTrace | undefined {
  if (!st) return undefined
  const out: StackTrace = {
    callFrames: st.callFrames.map((f) => ({
      functionName: f.functionName, scriptId: f.scriptId, url: f.url, lineNumber: f.lineNumber, columnNumber: f.columnNumber,
    })),
  }
  if (st.description !== undefined) out.description = st.description
  const parent = stackTraceOf(st.parent)
  if (parent) out.parent = parent
  return out
}
