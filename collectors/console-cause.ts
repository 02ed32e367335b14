// Error.cause chains for console stacks: an error thrown or logged with a `cause` (new Error(msg,
// {cause})) gets each cause as a `stack_trace.parent` entry (description `cause: <message>`), its
// frames read from the cause's own V8 stack text. Only errors whose preview shows a `cause` cost a
// CDP call (Runtime.callFunctionOn on the error, by value); the text is parsed here.
import type { Protocol } from 'devtools-protocol'
import { withTimeout, type StackTrace, type TargetSession } from '../src/collector-kit.js'
import { errorMessage } from './console-format.js'

/** Causes followed at most, frames kept per cause, characters read of each cause's text. */
export const MAX_CAUSES = 8
const MAX_FRAMES = 64
const MAX_CAUSE_CHARS = 16 * 1024
/** How long an event may wait for its causes (the page's own code could hang the call). */
export const CAUSE_TIMEOUT_MS = 1000

/**
 * Runs in the page on the error: its own `stack` when asked for (an error-like object's), and the
 * chain of `cause` own data properties, each as its stack text, or JSON / String for a value that
 * is not an Error. Own properties only, and no getter but V8's own, so page code does not run.
 */
const READ_ERROR = `function (maxDepth, maxChars, own) {
  let stack
  if (own) {
    const d = Object.getOwnPropertyDescriptor(this, 'stack')
    let v = d && d.value
    // Error.captureStackTrace installs V8's own accessor; a getter of the page's is never called.
    if (d && typeof d.get === 'function' && /\\{\\s*\\[native code\\]\\s*\\}$/.test(Function.prototype.toString.call(d.get)))
      try { v = d.get.call(this) } catch (_) {}
    if (typeof v === 'string') stack = v.slice(0, maxChars)
  }
  const out = []
  const seen = new Set([this])
  let e = this
  for (let i = 0; i < maxDepth; i++) {
    if (e === null || (typeof e !== 'object' && typeof e !== 'function')) break
    const d = Object.getOwnPropertyDescriptor(e, 'cause')
    if (!d || !('value' in d) || seen.has(d.value)) break
    e = d.value
    seen.add(e)
    let text
    try {
      text = e instanceof Error ? String(e.stack || e) : typeof e === 'object' && e !== null ? JSON.stringify(e) : String(e)
    } catch (_) {
      text = Object.prototype.toString.call(e)
    }
    out.push(String(text).slice(0, maxChars))
  }
  return { stack, causes: out }
}`

/** Whether a thrown or logged value is an error whose preview shows (or may hide) a `cause`. */
export function mayHaveCause(obj: Protocol.Runtime.RemoteObject | undefined): obj is Protocol.Runtime.RemoteObject {
  if (!obj || obj.subtype !== 'error' || !obj.objectId) return false
  const p = obj.preview
  return !p || p.overflow || p.properties.some(prop => prop.name === 'cause')
}

/**
 * An object that is not an Error but carries the stack of one: an error class of a library's own
 * (js-yaml's YAMLException copies `new Error().stack`). Its frames need one call to read.
 */
export function isErrorLike(obj: Protocol.Runtime.RemoteObject | undefined): obj is Protocol.Runtime.RemoteObject {
  if (!obj || obj.type !== 'object' || obj.subtype !== undefined || !obj.objectId) return false
  return obj.preview?.properties.some(p => p.name === 'stack' && p.type === 'string') === true
}

/** `name: message` of an error-like object as its preview shows them (undefined: it shows neither). */
export function errorLikeTitle(obj: Protocol.Runtime.RemoteObject): string | undefined {
  const prop = (n: string) => obj.preview?.properties.find(p => p.name === n && p.type === 'string')?.value
  const name = prop('name')
  const message = prop('message')
  return name && message ? `${name}: ${message}` : (name ?? message)
}

/**
 * One call on the logged or thrown value: its own stack text (with `own`, for an error-like
 * object) and its causes as a chain of stack entries. Empty when the page did not answer in time.
 */
export async function readError(
  session: TargetSession,
  obj: Protocol.Runtime.RemoteObject,
  own: boolean,
  scripts?: ScriptIds,
): Promise<{ stack?: string; causes?: StackTrace }> {
  const r = await withTimeout(
    session.sendMayFail('Runtime.callFunctionOn', {
      objectId: obj.objectId!,
      functionDeclaration: READ_ERROR,
      arguments: [{ value: MAX_CAUSES }, { value: MAX_CAUSE_CHARS }, { value: own }],
      returnByValue: true,
      silent: true,
    }),
    CAUSE_TIMEOUT_MS,
  ).catch(() => undefined)
  const v = r?.result.value as { stack?: unknown; causes?: unknown } | undefined
  const out: { stack?: string; causes?: StackTrace } = {}
  if (typeof v?.stack === 'string') out.stack = v.stack
  if (Array.isArray(v?.causes) && v.causes.length > 0) {
    const causes = causeChain(
      v.causes.filter((t): t is string => typeof t === 'string'),
      scripts,
    )
    if (causes) out.causes = causes
  }
  return out
}

/** Stack entries for cause texts, outermost cause first: `cause: <message>` and its parsed frames. */
export function causeChain(texts: readonly string[], scripts?: ScriptIds): StackTrace | undefined {
  let chain: StackTrace | undefined
  for (let i = Math.min(texts.length, MAX_CAUSES) - 1; i >= 0; i--) {
    const text = texts[i]!
    const entry: StackTrace = {
      description: `cause: ${errorMessage(text) || text.split('\n')[0]}`,
      callFrames: parseV8Stack(text, scripts),
    }
    if (chain) entry.parent = chain
    chain = entry
  }
  return chain
}

const FRAME_LINE = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?\s*$/

/** URLs remembered per session at most (the oldest is forgotten first). */
const MAX_SCRIPT_URLS = 1000

/**
 * Script ids by URL, learnt from the frames Chromium sent in one session (console call sites,
 * exception stacks): a frame read from stack text names its script by URL only, and the client's
 * call frame requires a `scriptId`. A URL seen with several scripts (a reload, a document's inline
 * scripts) gives the last one seen.
 */
export class ScriptIds {
  private readonly ids = new Map<string, string>()

  learn(stack: StackTrace | undefined): void {
    for (let s = stack, depth = 0; s && depth < 32; s = s.parent, depth++) {
      for (const f of s.callFrames) {
        if (!f.url || !f.scriptId || this.ids.get(f.url) === f.scriptId) continue
        this.ids.delete(f.url)
        this.ids.set(f.url, f.scriptId)
        if (this.ids.size > MAX_SCRIPT_URLS) this.ids.delete(this.ids.keys().next().value!)
      }
    }
  }

  /** The id of the script at this URL, or "" when no frame of the session named one. */
  of(url: string): string {
    return this.ids.get(url) ?? ''
  }
}

/**
 * The frames of a V8 stack text (`    at name (url:line:col)`), with CDP's 0-based positions, the
 * bare function name CDP would give (`async` / `new` / receiver type dropped) and the script's id
 * when the session knows the URL's script (else ""). Lines without a
 * position (native code) and eval frames are left out.
 */
export function parseV8Stack(text: string, scripts?: ScriptIds): StackTrace['callFrames'] {
  const frames: StackTrace['callFrames'] = []
  for (const line of text.split('\n')) {
    if (frames.length >= MAX_FRAMES) break
    const m = FRAME_LINE.exec(line)
    if (!m) continue
    const url = m[2]!
    if (url.includes('(') || url.startsWith('eval at') || url === '<anonymous>') continue
    let name = (m[1] ?? '')
      .replace(/^async /, '')
      .replace(/^new /, '')
      .replace(/ \[as [^\]]+\]$/, '')
    if (name.includes('<anonymous>')) name = ''
    else if (name.includes('.')) name = name.slice(name.lastIndexOf('.') + 1)
    frames.push({
      functionName: name,
      scriptId: scripts?.of(url) ?? '',
      url,
      lineNumber: Number(m[3]) - 1,
      columnNumber: Number(m[4]) - 1,
    })
  }
  return frames
}

/**
 * The stack with the causes inserted after its first `at` entries (default: after its last parent
 * entry); a new object, the input is kept.
 */
export function withCauses(
  stack: StackTrace | undefined,
  causes: StackTrace | undefined,
  at = Infinity,
): StackTrace | undefined {
  if (!causes) return stack
  if (!stack) return { callFrames: [], parent: causes }
  const copy: StackTrace = { ...stack }
  let s = copy
  for (let depth = 1; s.parent && depth < Math.min(at, 32); depth++) s = s.parent = { ...s.parent }
  const rest = s.parent
  s.parent = causes
  if (rest) {
    let tail = (s.parent = { ...causes })
    for (let depth = 0; tail.parent && depth < 32; depth++) tail = tail.parent = { ...tail.parent }
    tail.parent = rest
  }
  return copy
}
