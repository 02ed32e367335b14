// One idea: secret masking. One Redactor, applied by the pipeline to every event before it is stored
// (so the log, SSE, HAR export and shipping only ever see masked data) and by the logger to logs.
//
// What is masked (built-in lists are always on; configuration only adds names):
// - header values by name (authorization, cookie, set-cookie, proxy-authorization, x-api-key, ...);
// - in URLs: the userinfo (user:pass@), query and fragment parameters whose names look secret;
// - form-encoded, JSON and YAML bodies (post_data, response bodies): fields whose names look secret;
// - in free text (console messages, a performance trace's strings): every URL, by the URL rule.
// `code` is masked only as a URL parameter or form field (an OAuth or one-time code), not in JSON.
// A masked value becomes `[redacted:<n>]`, n its length class (the next power of two >= its length,
// at least 8), so a reader still sees that a field was there and roughly how big it was. The field
// itself always stays.
import type { TelemetryEvent } from './index.js'
import { headerValue } from '../util/headers.js'
import { maskYaml } from './redact-yaml.js'
import { maskedConsoleText, maskTextUrls } from './redact-text.js'

export const DEFAULT_REDACTED_HEADERS = [
  'authorization',
  'cookie',
  'set-cookie',
  'proxy-authorization',
  'x-api-key',
  'x-auth-token',
  'x-csrf-token',
] as const
/** Parameter / field names that look secret. Terms under 5 characters match whole words only (key, sig, code, ...). */
export const DEFAULT_REDACTED_PARAMS = [
  'token',
  'key',
  'secret',
  'password',
  'sig',
  'signature',
  'access_token',
  'refresh_token',
  'session',
  'passwd',
  'pwd',
  'apikey',
  'auth',
  'credential',
] as const
/**
 * Words masked only as URL query / fragment parameters and form-encoded fields: an OAuth
 * authorization code or a one-time code travels there (`/callback?code=...`, a form post), while a
 * JSON or YAML `code` is a status or an error code (`{"code": 404}`).
 */
export const DEFAULT_REDACTED_URL_FORM_PARAMS = ['code'] as const
/** Header values that are URLs: their query and userinfo are masked like any URL. */
const URL_HEADERS = new Set(['referer', 'location', 'content-location', 'origin'])

/** classify() bits: secret as a JSON / YAML / attribute field, secret as a URL or form parameter. */
const SECRET_FIELD = 1
const SECRET_PARAM = 2

const HEADER_PLAIN = 0
const HEADER_SECRET = 1
const HEADER_URL = 2
type HeaderKind = typeof HEADER_PLAIN | typeof HEADER_SECRET | typeof HEADER_URL

/** `[redacted:<n>]`: n is the length class (power of two >= length, min 8). */
export function maskValue(value: string): string {
  let n = 8
  while (n < value.length) n *= 2
  return `[redacted:${n}]`
}
export const REDACTED_PATTERN = /^\[redacted:\d+\]$/

export interface RedactionOptions {
  /** Extra header names to mask (case-insensitive), added to DEFAULT_REDACTED_HEADERS. */
  headers?: Iterable<string>
  /** Extra parameter/field names that look secret, added to DEFAULT_REDACTED_PARAMS. */
  params?: Iterable<string>
}

/** What a Redactor masks, in words a reader of an export can check against. */
export interface RedactionPolicy {
  /** The replacement: n is the next power of two >= the value's length (at least 8). */
  mask: string
  /** Header names whose values are masked (case-insensitive). */
  headers: string[]
  /** Terms of query, fragment, form, JSON and YAML field names that are masked (under 5 characters: whole words only). */
  params: string[]
  /** Words masked only in query and fragment parameters and form fields, never as JSON or YAML fields. */
  url_form_params: string[]
  /** Headers holding URLs, masked like any URL. */
  url_headers: string[]
}

export class Redactor {
  private readonly headerNames: Set<string>
  private readonly wordTerms: Set<string>
  private readonly substringTerms: string[]
  private readonly urlFormWords = new Set<string>(DEFAULT_REDACTED_URL_FORM_PARAMS)
  /** Per name: SECRET_FIELD and SECRET_PARAM bits. */
  private readonly nameCache = new Map<string, number>()
  private readonly headerKinds = new Map<string, HeaderKind>()

  constructor(opts: RedactionOptions = {}) {
    this.headerNames = new Set(
      [...DEFAULT_REDACTED_HEADERS, ...(opts.headers ?? [])].map(h => h.trim().toLowerCase()).filter(Boolean),
    )
    const terms = [...DEFAULT_REDACTED_PARAMS, ...(opts.params ?? [])].map(p => p.trim().toLowerCase()).filter(Boolean)
    this.wordTerms = new Set(terms.filter(p => p.length < 5))
    this.substringTerms = terms.filter(p => p.length >= 5)
  }

  /** The policy in force, as a debug bundle's manifest states it: every header and name term masked. */
  policy(): RedactionPolicy {
    return {
      mask: '[redacted:<n>]',
      headers: [...this.headerNames].sort(),
      params: [...this.wordTerms, ...this.substringTerms].sort(),
      url_form_params: [...this.urlFormWords].filter(w => !this.wordTerms.has(w)).sort(),
      url_headers: [...URL_HEADERS].sort(),
    }
  }

  /** True when a JSON, YAML or attribute field name looks like it holds a secret. */
  isSecretName(name: string): boolean {
    return (this.classify(name) & SECRET_FIELD) !== 0
  }

  /** True when a URL query / fragment parameter or form field name looks like it holds a secret. */
  isSecretParam(name: string): boolean {
    return (this.classify(name) & SECRET_PARAM) !== 0
  }

  private classify(name: string): number {
    let kind = this.nameCache.get(name)
    if (kind !== undefined) return kind
    const lower = name.toLowerCase()
    kind = this.substringTerms.some(t => lower.includes(t)) ? SECRET_FIELD | SECRET_PARAM : 0
    if (kind === 0) {
      // Words: split on non-alphanumerics and camelCase boundaries (apiKey, X-Amz-Signature, client_code).
      const words = name
        .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
        .toLowerCase()
        .split(/[^a-z0-9]+/)
      if (words.some(w => this.wordTerms.has(w))) kind = SECRET_FIELD | SECRET_PARAM
      else if (words.some(w => this.urlFormWords.has(w))) kind = SECRET_PARAM
    }
    if (this.nameCache.size < 4096) this.nameCache.set(name, kind) // bounded: names come from pages
    return kind
  }

  isSecretHeader(name: string): boolean {
    return this.headerNames.has(name.toLowerCase())
  }

  /** Masks secret header values (and secrets inside URL-valued headers); returns the same object when nothing changed. */
  headers(headers: Record<string, string>): Record<string, string> {
    let copy: Record<string, string> | undefined
    for (const name of Object.keys(headers)) {
      const kind = this.headerKind(name)
      if (kind === HEADER_PLAIN) continue
      const value = headers[name]!
      let masked: string | undefined
      if (kind === HEADER_SECRET) masked = maskValue(value)
      else {
        const u = this.url(value)
        if (u !== value) masked = u
      }
      if (masked !== undefined) {
        copy ??= { ...headers }
        copy[name] = masked
      }
    }
    return copy ?? headers
  }

  /** What a header name is, remembered per name as sent (no lower-casing per header per event). */
  private headerKind(name: string): HeaderKind {
    let kind = this.headerKinds.get(name)
    if (kind !== undefined) return kind
    const lower = name.toLowerCase()
    kind = this.headerNames.has(lower) ? HEADER_SECRET : URL_HEADERS.has(lower) ? HEADER_URL : HEADER_PLAIN
    if (this.headerKinds.size < 4096) this.headerKinds.set(name, kind) // bounded: names come from pages
    return kind
  }

  /** Masks userinfo and secret-looking query/fragment parameters; other text is left byte for byte. */
  url(url: string): string {
    // Fast path: nothing that can hold a secret.
    if (url.indexOf('?') < 0 && url.indexOf('#') < 0 && url.indexOf('@') < 0) return url
    let out = url
    const userinfo = url.indexOf('@') < 0 ? null : /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)([^/?#@]*)@/.exec(out)
    if (userinfo && userinfo[2] !== '')
      out = userinfo[1] + maskValue(userinfo[2]!) + '@' + out.slice(userinfo[0].length)
    const hash = out.indexOf('#')
    const q = out.indexOf('?')
    if (q >= 0 && (hash < 0 || q < hash)) {
      const end = hash < 0 ? out.length : hash
      const query = out.slice(q + 1, end)
      const masked = this.params(query)
      if (masked !== query) out = out.slice(0, q + 1) + masked + out.slice(end) // rebuilt only when something was masked
    }
    const h = out.indexOf('#')
    // OAuth implicit flow and friends: #access_token=...&token_type=...
    if (h >= 0 && out.indexOf('=', h) > 0) {
      const fragment = out.slice(h + 1)
      const masked = this.params(fragment)
      if (masked !== fragment) out = out.slice(0, h + 1) + masked
    }
    return out
  }

  /** Free text (console messages, a trace's strings) with every URL inside it masked by the URL rule. */
  textUrls(text: string): string {
    return maskTextUrls(text, url => this.url(url))
  }

  /** `a=1&token=x` -> `a=1&token=[redacted:8]` (names compared decoded; text otherwise unchanged). */
  params(query: string): string {
    if (query.indexOf('=') < 0) return query
    // One scan over the pairs; the output is only built once a secret shows up (most queries have none).
    let out: string | undefined
    let copied = 0
    for (let start = 0; start <= query.length;) {
      let end = query.indexOf('&', start)
      if (end < 0) end = query.length
      const eq = query.indexOf('=', start)
      if (eq > start && eq < end) {
        const rawName = query.slice(start, eq)
        let name = rawName
        if (rawName.indexOf('%') >= 0 || rawName.indexOf('+') >= 0) {
          try {
            name = decodeURIComponent(rawName.replace(/\+/g, ' '))
          } catch {
            /* keep raw */
          }
        }
        // A value masked already (a stored URL read again) stays as it is.
        if (this.isSecretParam(name) && !REDACTED_PATTERN.test(query.slice(eq + 1, end))) {
          out = (out ?? '') + query.slice(copied, eq + 1) + maskValue(query.slice(eq + 1, end))
          copied = end
        }
      }
      start = end + 1
    }
    return out === undefined ? query : out + query.slice(copied)
  }

  /** A request or response body: JSON, form-encoded and YAML fields with secret-looking names are masked. */
  body(text: string, contentType?: string): string {
    const ct = (contentType ?? '').toLowerCase()
    const trimmed = text.trimStart()
    if (ct.includes('json') || trimmed.startsWith('{') || trimmed.startsWith('[')) {
      const masked = this.json(text)
      if (masked !== undefined) return masked
    }
    if (ct.includes('x-www-form-urlencoded') || (ct === '' && /^[^\s=&]+=[^\s]*$/.test(text))) return this.params(text)
    if (ct.includes('yaml')) return maskYaml(text, name => this.isSecretName(name), maskValue)
    return text
  }

  /** JSON text with secret-looking fields masked, or undefined when it is not JSON (e.g. cut by truncation). */
  private json(text: string): string | undefined {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return this.jsonText(text)
    }
    const masked = this.maskFields(value, 0)
    return masked === value ? text : JSON.stringify(masked)
  }

  /**
   * `node` with its secret-looking string and number fields masked, down to depth 64. Copy on
   * write: what holds nothing to mask is returned as is, so a clean body (most are) costs one walk
   * and no allocation.
   */
  private maskFields(node: unknown, depth: number): unknown {
    if (depth > 64 || node === null || typeof node !== 'object') return node
    if (Array.isArray(node)) {
      let out: unknown[] | undefined
      for (let i = 0; i < node.length; i++) {
        const m = this.maskFields(node[i], depth + 1)
        if (m !== node[i]) (out ??= node.slice())[i] = m
      }
      return out ?? node
    }
    const obj = node as Record<string, unknown>
    let out: Record<string, unknown> | undefined
    for (const k of Object.keys(obj)) {
      const v = obj[k]
      const m =
        this.isSecretName(k) && (typeof v === 'string' || typeof v === 'number')
          ? maskValue(String(v))
          : this.maskFields(v, depth + 1)
      // The spread copies a "__proto__" key as an own property, so assigning it sets that property.
      if (m !== v) (out ??= { ...obj })[k] = m
    }
    return out ?? node
  }

  /** CDP parameters or results: secret-named fields masked, URLs (a `url` field or any http(s) string) redacted. */
  private commandJson(text: string): string {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return this.jsonText(text) ?? text
    }
    const masked = this.maskUrls(this.maskFields(value, 0), 0)
    return masked === value ? text : JSON.stringify(masked)
  }

  private maskUrls(node: unknown, depth: number): unknown {
    if (typeof node === 'string') return /^(https?|wss?):\/\//i.test(node) ? this.url(node) : node
    if (depth > 64 || node === null || typeof node !== 'object') return node
    if (Array.isArray(node)) {
      let out: unknown[] | undefined
      for (let i = 0; i < node.length; i++) {
        const m = this.maskUrls(node[i], depth + 1)
        if (m !== node[i]) (out ??= node.slice())[i] = m
      }
      return out ?? node
    }
    const obj = node as Record<string, unknown>
    let out: Record<string, unknown> | undefined
    for (const k of Object.keys(obj)) {
      const m = this.maskUrls(obj[k], depth + 1)
      if (m !== obj[k]) (out ??= { ...obj })[k] = m
    }
    return out ?? node
  }

  /** JSON that does not parse (cut by a body cap): mask `"name": "value"` / `"name": 123` pairs textually. */
  private jsonText(text: string): string | undefined {
    if (!text.includes('"')) return undefined
    let changed = false
    const out = text.replace(
      /"((?:[^"\\\n]|\\.){1,256})"(\s*:\s*)(?:"((?:[^"\\]|\\.)*)("?)|(-?\d[\d.eE+-]*))/g,
      (whole, name: string, colon: string, str: string | undefined, close: string, num: string | undefined) => {
        if (!this.isSecretName(name)) return whole
        changed = true
        return str !== undefined
          ? `"${name}"${colon}"${maskValue(str)}${close}`
          : `"${name}"${colon}"${maskValue(num ?? '')}"`
      },
    )
    return changed ? out : undefined
  }

  /** Masks an event's data in place (copy-on-write per field: producers' objects are never mutated). */
  event(event: TelemetryEvent): void {
    const data = event.data as Record<string, unknown>
    let out: Record<string, unknown> | undefined
    for (const k of URL_FIELDS) {
      const v = data[k]
      if (typeof v === 'string') {
        const m = this.url(v)
        if (m !== v) (out ??= { ...data })[k] = m
      }
    }
    const headers = data.headers as Record<string, string> | undefined
    if (headers && typeof headers === 'object') {
      const masked = this.headers(headers)
      if (masked !== headers) (out ??= { ...data }).headers = masked
    }
    const postData = data.post_data
    const body = data.body
    if (typeof postData === 'string' || typeof body === 'string') {
      // Only bodies need the content type: most events have none, so the header scan is skipped.
      const contentType = headers ? headerValue(headers, 'content-type') : undefined
      if (typeof postData === 'string') {
        const m = this.body(postData, contentType)
        if (m !== postData) (out ??= { ...data }).post_data = m
      }
      if (typeof body === 'string') {
        const m = this.body(body, (data.mime_type as string | undefined) ?? contentType)
        if (m !== body) (out ??= { ...data }).body = m
      }
    }
    // Console text quotes URLs (an error's stack as a string, a logged link): masked like the frames'.
    const text = event.category === 'console' ? maskedConsoleText(data, t => this.textUrls(t)) : undefined
    if (text) out = { ...(out ?? data), ...text }
    const lcp = data.lcp_details as { url?: string } | undefined
    if (lcp && typeof lcp.url === 'string') {
      const m = this.url(lcp.url)
      if (m !== lcp.url) (out ??= { ...data }).lcp_details = { ...lcp, url: m }
    }
    if (data.stack_trace && typeof data.stack_trace === 'object') {
      const st = this.stackTrace(data.stack_trace as StackLike)
      if (st !== data.stack_trace) (out ??= { ...data }).stack_trace = st
    }
    // WebSocket handshakes carry two header sets; frames and EventSource messages are bodies.
    for (const k of SOCKET_HEADER_FIELDS) {
      const v = data[k] as Record<string, string> | undefined
      if (v && typeof v === 'object') {
        const m = this.headers(v)
        if (m !== v) (out ??= { ...data })[k] = m
      }
    }
    const payload = event.type === 'network_eventsource_message' ? data.data : data.payload
    if (
      typeof payload === 'string' &&
      (event.type === 'network_websocket_frame' || event.type === 'network_eventsource_message')
    ) {
      const m = this.body(payload)
      if (m !== payload) (out ??= { ...data })[event.type === 'network_websocket_frame' ? 'payload' : 'data'] = m
    }
    // CDP command parameters and results (JSON text): secret-named fields and every URL.
    for (const k of COMMAND_JSON_FIELDS) {
      const v = data[k]
      if (typeof v === 'string') {
        const m = this.commandJson(v)
        if (m !== v) (out ??= { ...data })[k] = m
      }
    }
    // An agent's step attributes: secret-named keys masked, URLs masked like every URL.
    const attributes = data.attributes as Record<string, unknown> | undefined
    if (attributes && typeof attributes === 'object') {
      const m = this.attributes(attributes)
      if (m !== attributes) (out ??= { ...data }).attributes = m
    }
    if (out) (event as { data: unknown }).data = out
  }

  private attributes(attrs: Record<string, unknown>): Record<string, unknown> {
    let copy: Record<string, unknown> | undefined
    for (const [k, v] of Object.entries(attrs)) {
      let m = v
      if (this.isSecretName(k) && (typeof v === 'string' || typeof v === 'number')) m = maskValue(String(v))
      else if (typeof v === 'string' && v.includes('://')) m = this.url(v)
      if (m !== v) (copy ??= { ...attrs })[k] = m
    }
    return copy ?? attrs
  }

  private stackTrace(st: StackLike, depth = 0): StackLike {
    if (depth > 32) return st
    let frames = st.callFrames
    if (Array.isArray(frames) && frames.some(f => this.frame(f) !== f)) frames = frames.map(f => this.frame(f))
    const parent = st.parent ? this.stackTrace(st.parent, depth + 1) : undefined
    if (frames === st.callFrames && parent === st.parent) return st
    return { ...st, callFrames: frames, ...(parent ? { parent } : {}) }
  }

  /** A call frame with its URL (and its mapped source, when that is a URL) redacted. */
  private frame(f: FrameLike): FrameLike {
    const url = typeof f.url === 'string' ? this.url(f.url) : f.url
    const source = f.original?.source
    const masked = typeof source === 'string' && source.includes('://') ? this.url(source) : source
    if (url === f.url && masked === source) return f
    return { ...f, url, ...(f.original ? { original: { ...f.original, source: masked } } : {}) }
  }

  /**
   * For log objects (pino formatter): header maps, URL-ish fields and token-ish keys masked, at any
   * depth (bounded). Returns the same object when nothing changed.
   */
  logObject(obj: Record<string, unknown>): Record<string, unknown> {
    const visit = (node: unknown, key: string, depth: number): unknown => {
      if (typeof node === 'string') {
        if (key === 'headers') return node
        if (this.headerNames.has(key.toLowerCase()) || (LOG_SECRET_KEY.test(key) && !/(name|id|path|file)$/i.test(key)))
          return maskValue(node)
        if (key === 'url' || key.endsWith('_url') || key.endsWith('Url') || key === 'href' || key === 'referer')
          return this.url(node)
        return node
      }
      if (depth > 8 || node === null || typeof node !== 'object' || node instanceof Error || Array.isArray(node))
        return node
      let copy: Record<string, unknown> | undefined
      for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
        const m = visit(v, k, depth + 1)
        if (m !== v) {
          copy ??= { ...(node as Record<string, unknown>) }
          copy[k] = m
        }
      }
      return copy ?? node
    }
    return visit(obj, '', 0) as Record<string, unknown>
  }
}

/** Log keys whose string values are secrets. Narrower than isSecretName: logs carry `code`, `sessionId`, `key`. */
const LOG_SECRET_KEY = /token|secret|passw|authorization|cookie|api_?key|credential/i

type FrameLike = { url?: string; original?: { source?: string } }
type StackLike = { callFrames?: FrameLike[]; parent?: StackLike }

/** network_websocket_handshake's header sets. */
const SOCKET_HEADER_FIELDS = ['request_headers', 'response_headers'] as const
/** cdp_command fields holding CDP JSON text. */
const COMMAND_JSON_FIELDS = ['params', 'result'] as const

/** Top-level data fields that hold URLs (context url, request document/redirect, console source, tab url, source maps). */
const URL_FIELDS = ['url', 'document_url', 'redirect_url', 'source_url', 'script_url', 'map_url'] as const
