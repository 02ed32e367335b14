// What a script says about its map, read while its text streams in (the fetch rule is
// fetch-rule.ts). The scanner keeps only the line of the last `//# sourceMappingURL=` (an inline map is all
// of it), so a 50 MB script without a map costs one chunk of memory, not 50 MB.
import { normalizeDebugId } from './source-map.js'

export interface ScriptRefs {
  /** The last sourceMappingURL comment's value, as written (relative, absolute or a data: URL). */
  mapRef?: string
  /** The script's `//# debugId=<uuid>`, lower case. */
  debugId?: string
}

/** Comment markers looked for, at the start of a line. */
const MAP_MARKERS = ['//# sourceMappingURL=', '//@ sourceMappingURL=']
const DEBUG_ID_MARKER = '//# debugId='
/** Characters kept from one chunk to the next so a marker split between chunks is still seen. */
const OVERLAP = 64

export class ScriptScanner {
  /** The last complete marker line seen, and one still being read (an inline map spans chunks). */
  private line: string | undefined
  private pending: string | undefined
  /** The last characters of the text so far, so a marker split between chunks is still seen. */
  private carry = ''
  private debugId: string | undefined
  /** A marker's line outgrew maxLineChars (an inline map too large), and none came after it. */
  tooLarge = false

  /** `maxLineChars`: the longest comment line kept (an inline map's data URL). */
  constructor(private readonly maxLineChars: number) {}

  /** Characters held between chunks (the bound of what a script costs, whatever its size). */
  get retained(): number {
    return this.carry.length + (this.pending?.length ?? 0) + (this.line?.length ?? 0)
  }

  push(chunk: string): void {
    if (this.pending !== undefined) {
      const nl = chunk.search(/[\r\n]/)
      if (nl < 0) {
        this.pending += chunk
        if (this.pending.length > this.maxLineChars) {
          this.pending = undefined
          this.tooLarge = true
        }
        this.carry = (this.carry + chunk).slice(-OVERLAP)
        return
      }
      this.line = this.pending + chunk.slice(0, nl)
      this.pending = undefined
    }
    const text = this.carry + chunk
    const at = lastMarker(text)
    if (at >= 0) {
      this.tooLarge = false
      const rest = text.slice(at)
      const nl = rest.search(/[\r\n]/)
      if (nl < 0) this.pending = rest
      else this.line = rest.slice(0, nl)
      if (this.pending !== undefined && this.pending.length > this.maxLineChars) {
        this.pending = undefined
        this.tooLarge = true
      }
    }
    const id = lastDebugId(text)
    if (id) this.debugId = id
    this.carry = text.slice(-OVERLAP)
  }

  finish(): ScriptRefs {
    const out: ScriptRefs = {}
    if (this.debugId) out.debugId = this.debugId
    const line = this.pending ?? this.line
    if (line === undefined) return out
    const ref = line.slice(line.indexOf('=') + 1).trim()
    if (ref !== '') out.mapRef = ref
    return out
  }
}

/** Offset of the last map marker at a line start in `text`, or -1. */
function lastMarker(text: string): number {
  let best = -1
  for (const m of MAP_MARKERS) {
    let i = text.lastIndexOf(m)
    while (i >= 0 && !atLineStart(text, i)) i = i > 0 ? text.lastIndexOf(m, i - 1) : -1
    if (i > best) best = i
  }
  return best
}

function lastDebugId(text: string): string | undefined {
  let i = text.lastIndexOf(DEBUG_ID_MARKER)
  while (i >= 0 && !atLineStart(text, i)) i = i > 0 ? text.lastIndexOf(DEBUG_ID_MARKER, i - 1) : -1
  if (i < 0) return undefined
  return normalizeDebugId(text.slice(i + DEBUG_ID_MARKER.length, i + DEBUG_ID_MARKER.length + 40).split(/\s/)[0])
}

/** Only whitespace between the line's start and `i`. */
function atLineStart(text: string, i: number): boolean {
  for (let j = i - 1; j >= 0; j--) {
    const c = text.charCodeAt(j)
    if (c === 10 || c === 13) return true
    if (c !== 32 && c !== 9) return false
  }
  return true
}

/** The `SourceMap` (or older `X-SourceMap`) response header, as written. */
export function mapHeaderOf(headers: Readonly<Record<string, string>> | undefined): string | undefined {
  if (!headers) return undefined
  let old: string | undefined
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase()
    if (name === 'sourcemap' && v.trim()) return v.trim()
    if (name === 'x-sourcemap' && v.trim()) old = v.trim()
  }
  return old
}

/** A data: URL's text (base64 or percent-encoded), or undefined when it is not one we can read. */
export function decodeDataUrl(url: string): string | undefined {
  const comma = url.indexOf(',')
  if (!/^data:/i.test(url) || comma < 0) return undefined
  const meta = url.slice(5, comma).toLowerCase()
  const body = url.slice(comma + 1)
  try {
    if (meta.split(';').includes('base64')) return new TextDecoder('utf-8', { fatal: true }).decode(base64(body))
    return decodeURIComponent(body)
  } catch {
    return undefined
  }
}

function base64(s: string): Uint8Array {
  const bin = atob(s.replace(/\s+/g, ''))
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}

/** A URL for messages and events: data: URLs shortened to their media type. */
export function shownUrl(url: string): string {
  if (!/^data:/i.test(url)) return url.length > 2048 ? `${url.slice(0, 2048)}…` : url
  const comma = url.indexOf(',')
  return `${url.slice(0, Math.min(comma < 0 ? 64 : comma, 64))},… (${url.length} characters)`
}
