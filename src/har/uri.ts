// HAR's URLs as URIs: what a HAR reader's validator accepts, without losing what the URL said.

/**
 * A URL as a URI (RFC 3986), which HAR's `url` must be: Chromium reports a `data:` URL as the page
 * wrote it (spaces, quotes, non-ASCII), so every character no URI may hold is percent-encoded as
 * UTF-8, as is a `%` that starts no escape and any `#` after the first. Escapes already there stay,
 * so an encoded URL is returned as it is.
 */
export function harUri(url: string): string {
  if (!NOT_IN_URI.test(url)) return url
  const hash = url.indexOf('#')
  let out = ''
  for (let i = 0; i < url.length; i++) {
    const c = url[i]!
    if (c === '%' && /^[0-9a-fA-F]{2}$/.test(url.slice(i + 1, i + 3))) out += c
    else if (c === '#' && i !== hash) out += '%23'
    else if (IN_URI.test(c)) out += c
    else {
      // A surrogate pair is one character, encoded together; a lone surrogate becomes U+FFFD.
      const cp = url.codePointAt(i)!
      if (cp > 0xffff) i++
      out += cp >= 0xd800 && cp <= 0xdfff ? '%EF%BF%BD' : encodeURIComponent(String.fromCodePoint(cp))
    }
  }
  return out
}
/** Characters a URI may hold as they are: unreserved, reserved (gen-delims and sub-delims). */
const IN_URI = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]$/
/** Anything else, or a `%` that starts no escape, or a second `#`. */
const NOT_IN_URI = /[^A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]|%(?![0-9a-fA-F]{2})|#.*#/
