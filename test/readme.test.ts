// The README is part of the product: its configuration table and commands must match the code.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { FLEET_SERVE_OPTIONS, SERVE_OPTIONS, envName } from '../src/config/config.js'
import { EVENT_DEFS, EVENT_TYPES } from '../src/events/index.js'

const root = join(import.meta.dirname, '..')

t.test('README documents every serve flag with its env twin and default', async t => {
  const readme = await readFile(join(root, 'README.md'), 'utf8')
  for (const [flag, spec] of Object.entries(SERVE_OPTIONS)) {
    const row = readme.split('\n').find(l => l.startsWith(`| \`--${flag}\``))
    t.ok(row, `row for --${flag}`)
    t.match(row, `\`${envName(flag)}\``, `env twin of --${flag}`)
    if (spec.default !== undefined) t.match(row, `\`${spec.default}\``, `default of --${flag}`)
  }
})

t.test('README documents every fleet serve flag with its env twin and default in its own table', async t => {
  const readme = await readFile(join(root, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf("### Reading any VM's telemetry: `fleet serve`"))
  const lines = section.slice(0, section.indexOf('\n## ')).split('\n')
  for (const [flag, spec] of Object.entries(FLEET_SERVE_OPTIONS)) {
    const row = lines.find(l => l.startsWith(`| \`--${flag}\``))
    t.ok(row, `row for --${flag}`)
    t.match(row, `\`${envName(flag)}\``, `env twin of --${flag}`)
    if (spec.default !== undefined) t.match(row, `\`${spec.default}\``, `default of --${flag}`)
  }
})

t.test('the two commands exist and CI runs the README test command', async t => {
  const readme = await readFile(join(root, 'README.md'), 'utf8')
  t.match(readme, 'bash scripts/start.sh')
  t.match(readme, 'bash scripts/test.sh')
  const ci = await readFile(join(root, '.ci/run'), 'utf8')
  t.match(ci, /^bash scripts\/test\.sh\b/m)
  const test = await readFile(join(root, 'scripts/test.sh'), 'utf8')
  t.match(test, /^bash scripts\/setup\.sh$/m)
  t.match(test, /^npm test$/m)
})

t.test('the README event table lists every event type with its category and every data field', async t => {
  const readme = await readFile(join(root, 'README.md'), 'utf8')
  const context = ['target_id', 'target_type', 'session_id', 'frame_id', 'loader_id', 'url', 'nav_seq']
  for (const type of EVENT_TYPES) {
    const def = EVENT_DEFS[type]
    const row = readme.split('\n').find(l => l.startsWith(`| \`${type}\` |`))
    t.ok(row, `row for ${type}`)
    t.match(row, `| ${def.category} |`, `category of ${type}`)
    const fields = Object.keys((def.data as { properties?: object }).properties ?? {})
    const withContext = context.every(c => fields.includes(c))
    for (const f of fields) if (!(withContext && context.includes(f))) t.match(row, `\`${f}\``, `${type}.${f} listed`)
  }
})
