// A stack trace as the detail pane lists it: original frames (where a source map placed them)
// first, the raw frames Chromium reported one click away; each parent entry (an async boundary or
// an Error.cause) as a separator line.
import type { StackTrace } from '../../events/index.js'

export type StackLine =
  | { kind: 'frame'; key: string; name: string; location: string; href?: string; mapped: boolean }
  | { kind: 'separator'; key: string; text: string }

/** Parent entries shown at most. */
const MAX_DEPTH = 20

/** Whether any frame (parents included) has an original position. */
export function hasOriginalFrames(stack: StackTrace | undefined): boolean {
  for (let s = stack, d = 0; s && d < MAX_DEPTH; s = s.parent, d++) if (s.callFrames.some(f => f.original)) return true
  return false
}

/**
 * The lines of a stack: with `raw` false a mapped frame shows its original name and source:line:column,
 * otherwise (and for frames no map covers) the function name and URL with 1-based line and column.
 */
export function stackLines(stack: StackTrace, raw: boolean): StackLine[] {
  const out: StackLine[] = []
  for (let s: StackTrace | undefined = stack, depth = 0; s && depth < MAX_DEPTH; s = s.parent, depth++) {
    if (s.description && depth > 0) out.push({ kind: 'separator', key: `d${depth}`, text: s.description })
    for (const [i, f] of s.callFrames.entries()) {
      const o = raw ? undefined : f.original
      const key = `${depth}-${i}`
      if (o) {
        out.push({
          kind: 'frame',
          key,
          name: o.name ?? (f.functionName || '(anonymous)'),
          location: `${o.source}:${o.line}:${o.column}`,
          mapped: true,
        })
        continue
      }
      const location = `${f.url}:${f.lineNumber + 1}:${f.columnNumber + 1}`
      out.push({
        kind: 'frame',
        key,
        name: f.functionName || '(anonymous)',
        location,
        ...(/^https?:\/\//.test(f.url) ? { href: f.url } : {}),
        mapped: false,
      })
    }
  }
  return out
}
