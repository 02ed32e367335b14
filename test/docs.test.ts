// The docs are part of the product: docs/configuration.md's flag tables and docs/events.md's event
// table must match the code, the README must name the two commands CI and users run, stay a front
// door (at most 300 lines), and no relative link in the README or docs/ may point at nothing.
import t, { type Test } from 'tap'
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import { FLEET_SERVE_OPTIONS, SERVE_OPTIONS, envName } from '../src/config/config.js'
import { COMPONENTS, CONNECTION_OPTIONS, FLEET_READ_OPTIONS } from '../src/config/options.js'
import { EVENT_DEFS, EVENT_TYPES } from '../src/events/index.js'
import type { OptionSpec } from '../src/util/options.js'

const root = join(import.meta.dirname, '..')
const read = (path: string) => readFile(join(root, path), 'utf8')

/** The lines of the section under `heading` (a whole heading line), up to the next heading of its level or above. */
function section(doc: string, heading: string): string[] {
  const lines = doc.split('\n')
  const start = lines.indexOf(heading)
  if (start < 0) return []
  const level = /^#+/.exec(heading)![0].length
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && /^#+/.exec(l)![0].length <= level)
  return lines.slice(start + 1, end < 0 ? undefined : end)
}

/** The cells of a Markdown table row, trimmed (`\|` inside a cell is not a separator). */
const cells = (row: string): string[] =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map(c => c.trim())

/**
 * Checks a flag table: one row per option (but --help), its env twin, its default; no row for a flag
 * the command does not take.
 */
function checkFlagTable(t: Test, lines: string[], options: Record<string, OptionSpec>): void {
  const rows = lines.filter(l => l.startsWith('| `--'))
  t.ok(rows.length > 0, 'the table is there')
  const flags = Object.keys(options).filter(f => f !== 'help')
  for (const flag of flags) {
    const spec = options[flag]!
    const row = rows.find(l => cells(l)[0]!.startsWith(`\`--${flag}\``))
    t.ok(row, `row for --${flag}`)
    if (!row) continue
    const [, env, dflt] = cells(row)
    t.equal(env, `\`${spec.env ?? envName(flag)}\``, `env twin of --${flag}`)
    if (spec.default !== undefined) t.equal(dflt, `\`${spec.default}\``, `default of --${flag}`)
    else t.notMatch(dflt, /^`/, `--${flag} has no default`)
  }
  for (const row of rows) {
    const flag = /^`--([a-z0-9-]+)`/.exec(cells(row)[0]!)?.[1]
    t.ok(flag !== undefined && flags.includes(flag), `${cells(row)[0]} is a flag of the command`)
  }
}

t.test('docs/configuration.md documents every serve flag with its env twin and default', async t => {
  const doc = await read('docs/configuration.md')
  checkFlagTable(t, section(doc, '## `serve` flags'), SERVE_OPTIONS)
})

t.test('docs/configuration.md lists the serve flags under their components, in the order of COMPONENTS', async t => {
  const lines = section(await read('docs/configuration.md'), '## `serve` flags')
  const headings = lines.filter(l => l.startsWith('### '))
  t.same(
    headings,
    Object.values(COMPONENTS).map(title => `### ${title}`),
    'one heading per component',
  )
  for (const [component, title] of Object.entries(COMPONENTS)) {
    const rows = section(lines.join('\n'), `### ${title}`).filter(l => l.startsWith('| `--'))
    const flags = rows.map(l => /^`--([a-z0-9-]+)`/.exec(cells(l)[0]!)?.[1])
    const expected = Object.entries(SERVE_OPTIONS)
      .filter(([, o]) => o.component === component)
      .map(([f]) => f)
    t.same(flags, expected, `${title}: the ${component} flags, in table order`)
  }
  t.same(
    Object.keys(SERVE_OPTIONS).filter(
      f =>
        !(Object.keys(COMPONENTS) as string[]).includes(SERVE_OPTIONS[f as keyof typeof SERVE_OPTIONS].component ?? ''),
    ),
    [],
    'every serve flag has a component',
  )
})

t.test(
  'docs/configuration.md documents every fleet serve flag with its env twin and default in its own table',
  async t => {
    const doc = await read('docs/configuration.md')
    checkFlagTable(t, section(doc, '## `fleet serve` flags'), FLEET_SERVE_OPTIONS)
  },
)

t.test(
  "docs/configuration.md documents the client commands' connection flags with their env twins and defaults",
  async t => {
    const doc = await read('docs/configuration.md')
    checkFlagTable(t, section(doc, '## Client commands'), CONNECTION_OPTIONS)
  },
)

t.test(
  'docs/configuration.md documents the fleet tail and fleet read flags with their env twins and defaults',
  async t => {
    const doc = await read('docs/configuration.md')
    checkFlagTable(t, section(doc, '## `fleet tail` and `fleet read` flags'), FLEET_READ_OPTIONS)
  },
)

t.test('the two commands exist and CI runs the README test command', async t => {
  const readme = await read('README.md')
  t.match(readme, 'bash scripts/start.sh')
  t.match(readme, 'bash scripts/test.sh')
  const ci = await read('.ci/run')
  t.match(ci, /^bash scripts\/test\.sh\b/m)
  const test = await read('scripts/test.sh')
  t.match(test, /^bash scripts\/setup\.sh$/m)
  t.match(test, /^npm test$/m)
})

t.test('the README is a front door: at most 300 lines', async t => {
  const lines = (await read('README.md')).replace(/\n$/, '').split('\n').length
  t.ok(lines <= 300, `README.md has ${lines} lines`)
})

t.test('docs/events.md lists every event type with its category and every data field', async t => {
  const lines = section(await read('docs/events.md'), '## Event types')
  const context = ['target_id', 'target_type', 'session_id', 'frame_id', 'loader_id', 'url', 'nav_seq']
  for (const type of EVENT_TYPES) {
    const def = EVENT_DEFS[type]
    const row = lines.find(l => l.startsWith('|') && cells(l)[0] === `\`${type}\``)
    t.ok(row, `row for ${type}`)
    if (!row) continue
    const [, category, data] = cells(row)
    t.equal(category, def.category, `category of ${type}`)
    const fields = Object.keys((def.data as { properties?: object }).properties ?? {})
    const withContext = context.every(c => fields.includes(c))
    if (withContext) t.match(data, /^context \+/, `${type} carries the context`)
    for (const f of fields) if (!(withContext && context.includes(f))) t.match(data, `\`${f}\``, `${type}.${f} listed`)
  }
  for (const row of lines.filter(l => l.startsWith('| `'))) {
    const type = cells(row)[0]!.replace(/`/g, '')
    t.ok((EVENT_TYPES as readonly string[]).includes(type), `${type} is an event type of the code`)
  }
})

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2, ... */
function anchorsOf(doc: string): Set<string> {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of withoutFences(doc).split('\n')) {
    const m = /^#{1,6} +(.*?) *#*$/.exec(line)
    if (!m) continue
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

const withoutFences = (doc: string) => doc.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '')
/** The text without fenced code blocks and inline code spans (links there are not links). */
const withoutCode = (doc: string) => withoutFences(doc).replace(/`[^`\n]*`/g, '``')

t.test(
  'every relative link in the README, docs/ and bench/README.md points at a file (and heading) that exists',
  async t => {
    const files = [
      'README.md',
      'bench/README.md',
      ...(await readdir(join(root, 'docs'))).filter(f => f.endsWith('.md')).map(f => `docs/${f}`),
    ]
    for (const file of files) {
      const doc = await read(file)
      const links = [...withoutCode(doc).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?: "[^"]*")?\)/g)].map(m => m[1]!)
      for (const link of links) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue // http:, https:, mailto:
        const [path, anchor] = link.split('#') as [string, string | undefined]
        const target = path === '' ? join(root, file) : resolve(dirname(join(root, file)), decodeURIComponent(path))
        const name = relative(root, target)
        t.ok(target.startsWith(root) && existsSync(target), `${file}: ${link} -> ${name} exists`)
        if (anchor !== undefined && target.endsWith('.md') && existsSync(target)) {
          const anchors = anchorsOf(await readFile(target, 'utf8'))
          t.ok(anchors.has(anchor), `${file}: ${link} -> #${anchor} is a heading of ${name}`)
        }
      }
    }
  },
)

t.test('the CLI docs say what view refuses and how open --launch keeps the token off argv', async t => {
  const row = (doc: string, start: string) => doc.split('\n').find(l => l.startsWith(start)) ?? ''
  const cli = await read('docs/cli.md')
  const readme = await read('src/cli/README.md')
  // The code view answers (src/cli/view.ts) is the one the docs name.
  t.match(await read('src/cli/view.ts'), "code: 'host_refused'")
  t.match(row(cli, '| `view <bundle.zip>'), /any other gets `421 host_refused`/)
  t.match(row(readme, '| `view <bundle.zip>`'), /a Host that is not loopback gets 421 `host_refused`/)
  t.match(await read('docs/viewer.md'), /gets `421` with `\{"code": "host_refused"\}`/)
  t.match(row(cli, '| `open`'), /single-use redirect on 127\.0\.0\.1/)
  t.match(row(cli, '| `wait-ready'), /the systemd unit's `ExecStartPost=`/)
})
