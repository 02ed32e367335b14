// HTTP header maps as CDP and the events carry them: names in any case, one entry per name.

/** The value of header `name` (lowercase), whatever the case of its name in the map. */
export function headerValue<V>(headers: Readonly<Record<string, V>> | undefined, name: string): V | undefined {
  if (!headers) return undefined
  for (const k in headers) if (k.toLowerCase() === name) return headers[k]
  return undefined
}
