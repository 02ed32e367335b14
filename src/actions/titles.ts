// Kinds and titles of actions, once the page's reports are joined: short and free of anything
// typed ("click #buy", "type 12 characters into #email", "go to /checkout?step=2").
import { Redactor } from '../events/redact.js'
import { isTyping, type Draft } from './group.js'
import type { Joined } from './join.js'
import { MODIFIER_KEYS } from './methods.js'
import type { ActionKind } from './types.js'

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`

/** A navigation title's URL part at most (path and query), in characters; longer ones end in "…". */
export const URL_TITLE_MAX = 120
/** The URL rule the pipeline applies, applied again: a window may come from a bundle or an older daemon. */
const urlRedactor = new Redactor()

/**
 * The title of a URL: its path and query (http, https, file), secrets in the query masked by the
 * URL redaction rule, cut to URL_TITLE_MAX; the URL itself for about:, else its scheme. Without the
 * query, one page of a single-page app opened with different parameters would read the same.
 */
export function pathOf(url: string): string {
  if (url.startsWith('about:')) return url
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return '(unknown page)'
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'file:') return `${u.protocol}…`
  // The query as written (not re-encoded by URL), without the fragment.
  const q = url.indexOf('?')
  const hash = url.indexOf('#')
  const query = q >= 0 && (hash < 0 || q < hash) ? url.slice(q, hash < 0 ? url.length : hash) : ''
  return cut(u.pathname + (query.length > 1 ? `?${urlRedactor.params(query.slice(1))}` : ''), URL_TITLE_MAX)
}

/** `s` cut to at most `max` code points, the last one "…" when cut. */
function cut(s: string, max: number): string {
  if (s.length <= max) return s
  const points = [...s]
  return points.length <= max ? s : points.slice(0, max - 1).join('') + '…'
}

export function kindAndTitle(d: Draft, j: Joined): [ActionKind, string] {
  switch (d.kind) {
    case 'setup':
      return ['setup', `set up (${plural(d.cmds.length, 'command')})`]
    case 'navigate': {
      const verb = d.main.method === 'Page.reload' ? 'reload' : 'go to'
      return [
        'navigate',
        j.navUrl !== undefined ? `${verb} ${pathOf(j.navUrl)}` : verb === 'reload' ? 'reload' : 'navigate',
      ]
    }
    case 'screenshot':
      return ['screenshot', 'take a screenshot']
    case 'evaluate':
      return ['evaluate', 'evaluate']
    case 'attempt':
      return [d.attempt!.kind, d.attempt!.title]
    case 'scroll':
      return ['scroll', j.scrollSelector !== undefined ? `scroll ${j.scrollSelector}` : 'scroll']
    case 'mouse': {
      const at = j.clickSelector !== undefined ? ` ${j.clickSelector}` : ''
      if (d.wheel) return ['scroll', j.scrollSelector !== undefined ? `scroll ${j.scrollSelector}` : 'scroll']
      if (d.presses >= 2) return ['click', `double-click${at}`]
      if (d.presses === 1) return ['click', `click${at}`]
      if (d.untyped > 0) {
        if (j.clickSelector !== undefined || d.untyped >= 2) return ['click', `click${at}`]
        if (j.scrollSelector !== undefined) return ['scroll', `scroll ${j.scrollSelector}`]
      }
      return ['other', 'move the mouse']
    }
    case 'keys': {
      const into = j.keySelector !== undefined ? ` into ${j.keySelector}` : ''
      if (
        d.untyped > 0 &&
        d.untyped === d.cmds.filter(c => c.role === 'key').length &&
        !d.cmds.some(c => c.role === 'text')
      ) {
        // Recorded without input fields: what the page saw decides (named keys, or how many characters).
        if (j.keyNames.length > 0 && j.keyChars === 0) return ['press', `press ${dedupe(j.keyNames).join('+')}`]
        if (j.keyChars > 0) return ['type', `type ${plural(j.keyChars, 'character')}${into}`]
        return ['press', 'press a key']
      }
      if (isTyping(d)) return ['type', `type ${plural(d.chars, 'character')}${into}`]
      if (d.named.length > 0) {
        // Older recordings named no shortcut key: Control and a character it did not name.
        const extra = d.charsKnown && d.named.every(k => MODIFIER_KEYS.has(k)) ? '+character' : ''
        return ['press', `press ${d.named.join('+')}${extra}`]
      }
      if (d.charsKnown) return ['type', `type ${plural(d.chars, 'character')}${into}`]
      return ['type', `type text${into}`]
    }
    default: {
      const n = d.cmds.length
      return ['other', n > 1 ? `${d.main.method} ×${n}` : d.main.method]
    }
  }
}

const dedupe = (xs: string[]) => [...new Set(xs)]
