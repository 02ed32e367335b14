// A URL as a title (a navigation's heading, a HAR page): bounded, since a URL can be megabytes (a
// data: URL carries its whole document). A data: URL keeps its media type and the start of its data.

/** Characters of a data: URL's data kept in its title. */
const DATA_CHARS = 40

/** `url` in at most `max` characters (cut with `…`); a data: URL in its header and 40 characters of data. */
export function urlTitle(url: string, max = 120): string {
  const comma = /^data:/i.test(url) ? url.indexOf(',') : -1
  const keep = comma < 0 ? max : Math.min(max, comma + 1 + DATA_CHARS)
  if (url.length <= keep) return url
  let end = keep - 1
  // Never between the two halves of a surrogate pair.
  if ((url.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--
  return `${url.slice(0, end)}…`
}
