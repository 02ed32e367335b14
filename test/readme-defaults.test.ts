// Every figure a README or doc gives as the default of a named setting equals the default the code
// uses: `--flag` rows and mentions against the option table, camelCase settings against
// DEFAULT_SETTINGS. A statement is a backticked name followed, within its clause, by "default N unit".
import t from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { OPTIONS } from '../src/config/options.js'
import { DEFAULT_SETTINGS } from '../src/defaults.js'
import { DEFAULT_READ_MAX_BYTES } from '../src/store/page.js'
import { parseDuration } from '../src/util/duration.js'
import { parseSize } from '../src/util/size.js'

const ROOT = join(import.meta.dirname, '..')

/** README.md, src/ **\/README.md, collectors/README.md and docs/*.md. */
async function documents(): Promise<string[]> {
  const found = [join(ROOT, 'README.md'), join(ROOT, 'collectors', 'README.md')]
  for (const e of await readdir(join(ROOT, 'src'), { recursive: true, withFileTypes: true }))
    if (e.isFile() && e.name === 'README.md') found.push(join(e.parentPath, e.name))
  for (const name of await readdir(join(ROOT, 'docs'))) if (name.endsWith('.md')) found.push(join(ROOT, 'docs', name))
  return found
}

export interface Statement {
  name: string
  figure: string
  line: number
}

// A backticked name, then (no other backticked name, no sentence end in between) "default[:] N[ unit]".
const STATEMENT =
  /`(--[a-z][a-z0-9-]*|[a-z][A-Za-z0-9]*)`(?:[^`.;|]|\.\d)*?\bdefaults?(?: is| of)?:?\s+(\d[\d,_]*(?:\.\d+)?\s?(?:KiB|MiB|GiB|KB|MB|GB|B|bytes|ms|s|min|m|h|d|days?)?)\b/g

export function statements(text: string): Statement[] {
  const out: Statement[] = []
  const lines = text.split('\n')
  lines.forEach((line, i) => {
    for (const m of line.matchAll(STATEMENT)) out.push({ name: m[1]!, figure: m[2]!.trim(), line: i + 1 })
  })
  return out
}

/** A figure in base units: bytes for sizes, ms for durations, the number for counts. */
export function value(figure: string): number | undefined {
  const f = figure.replace(/[,_]/g, '').replace(/\s+/g, '')
  const m = /^(\d+(?:\.\d+)?)(.*)$/.exec(f)
  if (!m) return undefined
  const [, n, unit] = m
  if (unit === '') return Number(n)
  if (/^(KiB|MiB|GiB|KB|MB|GB|B|bytes)$/.test(unit!)) return parseSize(`${n}${unit === 'bytes' ? '' : unit}`)
  if (/^(days?)$/.test(unit!)) return Number(n) * 86_400_000
  if (unit === 'min') return Number(n) * 60_000
  return parseDuration(`${n}${unit}`)
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())

/** Defaults of module options the READMEs name (not daemon settings). */
const MODULE_DEFAULTS: Record<string, number> = { maxBytes: DEFAULT_READ_MAX_BYTES }

/** The code's default of a named setting, in base units; undefined when the name is not a setting. */
export function codeDefault(name: string): number | undefined {
  if (name.startsWith('--')) {
    const opt = (OPTIONS as Record<string, { default?: string; type?: string }>)[name.slice(2)]
    if (opt?.default === undefined) return undefined
    return value(opt.default) ?? parseSize(opt.default) ?? parseDuration(opt.default)
  }
  const settings: Record<string, number> = { ...DEFAULT_SETTINGS, ...MODULE_DEFAULTS }
  return settings[name] ?? settings[camel(name)]
}

/** Statements whose figure differs from the code's default, as "file:line name: doc says X, code Y". */
export function mismatches(file: string, text: string): { wrong: string[]; checked: number } {
  const wrong: string[] = []
  let checked = 0
  for (const s of statements(text)) {
    const code = codeDefault(s.name)
    if (code === undefined) continue
    checked++
    const doc = value(s.figure)
    if (doc !== code) wrong.push(`${file}:${s.line} ${s.name}: the doc says default ${s.figure}, the code ${code}`)
  }
  return { wrong, checked }
}

t.test('the scanner finds a wrong figure and passes a right one', async t => {
  const wrong = mismatches('x.md', 'The log (`--retention-bytes`, default 256 MiB) is trimmed.\n')
  t.same(wrong, {
    wrong: ['x.md:1 --retention-bytes: the doc says default 256 MiB, the code 536870912'],
    checked: 1,
  })
  t.same(mismatches('x.md', 'Bodies are cut (`networkBodyMaxBytes`, default: 64 KiB).'), { wrong: [], checked: 1 })
  t.same(mismatches('x.md', '| `--stream-keepalive` | SSE keepalive | 15s |'), { wrong: [], checked: 0 })
  t.same(
    mismatches('x.md', 'While it times out (`--nats-timeout`, default 9s), reads answer 503'),
    { wrong: ['x.md:1 --nats-timeout: the doc says default 9s, the code 5000'], checked: 1 },
    'durations too',
  )
  t.same(statements('`foo` is bar. The default 3 ms'), [], 'a sentence end ends the statement')
})

t.test('every default named in the READMEs and docs equals the code default', async t => {
  let checked = 0
  const wrong: string[] = []
  for (const path of await documents()) {
    const r = mismatches(relative(ROOT, path), await readFile(path, 'utf8'))
    checked += r.checked
    wrong.push(...r.wrong)
  }
  t.same(wrong, [], `${checked} statements of a default checked`)
  t.ok(checked >= 4, `statements found (${checked})`)
})

t.test('every default in the option table of docs/configuration.md is the option default', async t => {
  const text = await readFile(join(ROOT, 'docs', 'configuration.md'), 'utf8')
  // The `serve` section's tables (one per component); the fleet commands' tables override some
  // defaults (their own --listen).
  const start = text.indexOf('\n## `serve` flags\n')
  const serve = text.slice(start, text.indexOf('\n## ', start + 1))
  const rows = [...serve.matchAll(/^\|\s*`(--[a-z0-9-]+)[^`]*`\s*\|.*$/gm)]
  t.ok(rows.length > 40, `${rows.length} option rows`)
  for (const [row, flag] of rows) {
    const opt = (OPTIONS as Record<string, { default?: string }>)[flag!.slice(2)]
    if (opt?.default === undefined) continue
    const cells = row.split('|').map(c => c.trim().replace(/^`|`$/g, ''))
    t.ok(cells.includes(opt.default), `${flag}: the row shows ${opt.default}`)
  }
})
