// Subjects and message ids of shipped envelopes: `<prefix>.<browser token>.<category>`, msg id
// `<browser_id>:<seq>`. A browser id is one subject token; ids that are not valid tokens are encoded.
//
// Encoding rule (reversible, documented in src/ship/README.md and docs/fleet.md): every UTF-8 byte
// of the id outside [A-Za-z0-9_-] is written as `~` + two upper-case hex digits. So `vm.7` ->
// `vm~2E7`, `a b` -> `a~20b`, `~` itself -> `~7E`. An id made only of [A-Za-z0-9_-] is its own
// token.
import type { Category } from '../events/index.js'

const PLAIN = /^[A-Za-z0-9_-]+$/

export function encodeSubjectToken(id: string): string {
  if (PLAIN.test(id)) return id
  let out = ''
  for (const byte of Buffer.from(id, 'utf8')) {
    const c = String.fromCharCode(byte)
    out += byte < 0x80 && /[A-Za-z0-9_-]/.test(c) ? c : '~' + byte.toString(16).toUpperCase().padStart(2, '0')
  }
  return out
}

/** Inverse of encodeSubjectToken; undefined for a token this rule could not have produced. */
export function decodeSubjectToken(token: string): string | undefined {
  if (!/^(?:[A-Za-z0-9_-]|~[0-9A-F]{2})+$/.test(token)) return undefined
  const bytes: number[] = []
  for (let i = 0; i < token.length; i++) {
    if (token[i] === '~') {
      bytes.push(parseInt(token.slice(i + 1, i + 3), 16))
      i += 2
    } else bytes.push(token.charCodeAt(i))
  }
  const id = Buffer.from(bytes).toString('utf8')
  return encodeSubjectToken(id) === token ? id : undefined
}

/** A subject prefix is one or more dot-separated tokens without wildcards or whitespace. */
export function isValidSubjectPrefix(prefix: string): boolean {
  return prefix.split('.').every(t => t.length > 0 && !/[\s*>]/.test(t))
}

export function subjectOf(prefix: string, browserId: string, category: Category): string {
  return `${prefix}.${encodeSubjectToken(browserId)}.${category}`
}

/** All subjects of one browser (for a consumer filter). */
export function browserSubjects(prefix: string, browserId: string): string {
  return `${prefix}.${encodeSubjectToken(browserId)}.>`
}

export function msgIdOf(browserId: string, seq: number): string {
  return `${browserId}:${seq}`
}

/** Header names of a shipped message. */
export const HEADER_SEQ = 'Telemetry-Seq'
export const HEADER_BROWSER_ID = 'Telemetry-Browser-Id'
export const HEADER_MSG_ID = 'Nats-Msg-Id'
