// What a recorded command may keep of its parameters: the masks for what a person typed or a
// credential (whatever the redaction policy says), the cut to the capture cap, and the facts of an
// Input.* command (event type, character count, named key or shortcut key) without the text itself.

/**
 * Parameters that carry what a person typed or a credential: masked whatever the redaction policy
 * says, because their names (text, value, key) do not look secret.
 */
export const ALWAYS_MASKED: Record<string, (params: Record<string, unknown>) => Record<string, unknown>> = {
  'Input.insertText': p => maskKeys(p, ['text']),
  'Input.imeSetComposition': p => maskKeys(p, ['text']),
  'Input.dispatchKeyEvent': p =>
    maskKeys(p, [
      'text',
      'unmodifiedText',
      'key',
      'code',
      'keyIdentifier',
      'windowsVirtualKeyCode',
      'nativeVirtualKeyCode',
    ]),
  'Network.setCookie': p => maskKeys(p, ['value']),
  'Network.setCookies': p => maskCookies(p),
  'Storage.setCookies': p => maskCookies(p),
  'Network.setExtraHTTPHeaders': p => {
    const headers = p.headers
    if (!headers || typeof headers !== 'object') return p
    return { ...p, headers: maskKeys(headers as Record<string, unknown>, Object.keys(headers)) }
  },
}

/** The mask for a value whose content must not be stored: its length class only. */
export function maskText(value: unknown): string {
  const s = typeof value === 'string' ? value : (JSON.stringify(value) ?? '')
  let n = 8
  while (n < s.length) n *= 2
  return `[redacted:${n}]`
}

function maskKeys(obj: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const k of keys) if (obj[k] !== undefined) (out ??= { ...obj })[k] = maskText(obj[k])
  return out ?? obj
}

function maskCookies(p: Record<string, unknown>): Record<string, unknown> {
  if (!Array.isArray(p.cookies)) return p
  return {
    ...p,
    cookies: p.cookies.map(c => (c && typeof c === 'object' ? maskKeys(c as Record<string, unknown>, ['value']) : c)),
  }
}

/** `text` cut to at most `max` UTF-8 bytes on a character boundary. */
export function cutText(text: string, max: number): { text: string; truncated: boolean } {
  if (Buffer.byteLength(text) <= max) return { text, truncated: false }
  const buf = Buffer.from(text)
  let end = max
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--
  return { text: buf.toString('utf8', 0, end), truncated: true }
}

/** What an Input.* command did, without what was typed. */
export interface InputFacts {
  input_type?: string
  input_chars?: number
  input_key?: string
}

/** Named keys (Enter, Tab, ArrowDown, F5) may be stored; a key that is a character never is... */
const NAMED_KEY = /^[A-Z][A-Za-z0-9]{1,31}$/
/** ...unless it is pressed with Alt (1), Control (2) or Meta (4) held and types nothing: a shortcut. */
const COMMAND_MODIFIERS = 1 | 2 | 4

export function inputFacts(method: string, params: unknown): InputFacts | undefined {
  if (params === null || typeof params !== 'object') return undefined
  const p = params as { type?: unknown; text?: unknown; key?: unknown; modifiers?: unknown }
  const out: InputFacts = {}
  if (typeof p.type === 'string' && p.type.length <= 32) out.input_type = p.type
  const typesText = typeof p.text === 'string' && p.text !== ''
  if (
    typesText &&
    (method === 'Input.insertText' || method === 'Input.dispatchKeyEvent' || method === 'Input.imeSetComposition')
  )
    out.input_chars = [...(p.text as string)].length
  if (method === 'Input.dispatchKeyEvent' && typeof p.key === 'string') {
    if (NAMED_KEY.test(p.key)) out.input_key = p.key
    else if (!typesText && typeof p.modifiers === 'number' && (p.modifiers & COMMAND_MODIFIERS) !== 0) {
      const shortcut = shortcutKey(p.key)
      if (shortcut !== undefined) out.input_key = shortcut
    }
  }
  return out
}

/**
 * The key of a shortcut (Control+A, Control+Space) as a title shows it: one character, a letter
 * upper-cased, the space as `Space`. A key of more than one character that is not a named key is
 * not kept.
 */
function shortcutKey(key: string): string | undefined {
  if (key === ' ') return 'Space'
  const points = [...key]
  if (points.length !== 1 || /\p{C}/u.test(key)) return undefined
  const upper = key.toUpperCase()
  return [...upper].length === 1 ? upper : key
}
