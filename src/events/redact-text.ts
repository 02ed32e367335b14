// Secret masking in free text (console messages, a performance trace's strings): every URL inside
// the text is masked by the URL rule; the rest of the text is not read for secrets.

/** A URL inside text: a scheme, `://`, then up to a character that cannot be part of one. */
const EMBEDDED_URL = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>`\\]+/g
/** A stack line's `:line:column` and closing punctuation after a URL are not the URL's. */
const URL_TAIL = /^(.*?)((?::\d+){0,2}[)\].,;!?]*)$/s

/** `text` with each URL in it passed through `maskUrl`; the same string when nothing changed. */
export function maskTextUrls(text: string, maskUrl: (url: string) => string): string {
  if (text.indexOf('://') < 0) return text
  return text.replace(EMBEDDED_URL, found => {
    const [, url, tail] = URL_TAIL.exec(found)!
    return maskUrl(url!) + tail!
  })
}

/** A console event's text fields (`text`, `message`, string `args`) that masking changed, or undefined. */
export function maskedConsoleText(
  data: Record<string, unknown>,
  mask: (text: string) => string,
): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined
  for (const k of ['text', 'message']) {
    const v = data[k]
    const m = typeof v === 'string' ? mask(v) : v
    if (m !== v) (out ??= {})[k] = m
  }
  const args = data.args
  if (Array.isArray(args) && args.some(a => typeof a === 'string' && mask(a) !== a))
    (out ??= {}).args = args.map(a => (typeof a === 'string' ? mask(a) : a))
  return out
}
