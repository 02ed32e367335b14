// Secret masking in YAML bodies (application/yaml and friends), line by line without a parser, so a
// body cut by the cap is masked too: a mapping entry whose key looks secret gets its value masked;
// a block scalar (`key: |`, `key: >-`) is masked with the lines under it. The mask is written quoted,
// so the text stays YAML and the entry a string.

/** One mapping entry: indentation and sequence dashes, the key (plain or quoted), the value after `: `. */
const ENTRY =
  /^(?<lead>[ \t]*(?:-[ \t]+)*)(?<key>"(?:[^"\\]|\\.){1,256}"|'(?:[^']|''){1,256}'|[^\s#"'][^#]{0,255}?)[ \t]*:(?:[ \t]+(?<value>.*))?$/

function unquote(s: string): string {
  if (s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.at(-1) === s[0]) return s.slice(1, -1)
  return s
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length
}

/** `text` with the values of secret-looking keys masked; the same string when nothing was. */
export function maskYaml(text: string, isSecret: (key: string) => boolean, mask: (value: string) => string): string {
  if (text.indexOf(':') < 0) return text
  const lines = text.split('\n')
  let changed = false
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!
    const cr = raw.endsWith('\r') ? '\r' : ''
    const line = cr ? raw.slice(0, -1) : raw
    const m = ENTRY.exec(line)
    if (!m?.groups || !isSecret(unquote(m.groups.key!.trimEnd()))) continue
    const value = (m.groups.value ?? '').trim()
    if (value === '') continue // a nested mapping or a null: the keys below are checked on their own
    const head = line.slice(0, line.length - m.groups.value!.length)
    if (value[0] === '|' || value[0] === '>') {
      // The block is every following line indented deeper than the key (blank lines inside it too).
      const keyIndent = indentOf(line) + (m.groups.lead!.length - indentOf(m.groups.lead!))
      let end = i
      for (let j = i + 1; j < lines.length; j++) {
        if (lines[j]!.trim() === '') continue
        if (indentOf(lines[j]!) <= keyIndent) break
        end = j
      }
      const block = lines.slice(i + 1, end + 1).map(l => l.trim())
      lines.splice(i, end - i + 1, `${head}"${mask(block.join('\n'))}"${cr}`)
    } else lines[i] = `${head}"${mask(unquote(value))}"${cr}`
    changed = true
  }
  return changed ? lines.join('\n') : text
}
