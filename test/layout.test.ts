// The layout is part of the architecture: every folder of src/ has a row in the import rules
// (scripts/layers.mjs) and a README that states the same row; src/ keeps few loose files;
// no source file grows past 500 lines, and one past 450 says in its opening comment that it holds
// one idea.
import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { MAY_IMPORT } from '../scripts/layers.mjs'

const root = join(import.meta.dirname, '..')
const src = join(root, 'src')
const rules = MAY_IMPORT

const folders = readdirSync(src).filter(n => statSync(join(src, n)).isDirectory())
const loose = readdirSync(src).filter(n => n.endsWith('.ts'))

/**
 * The README's `May import:` line as a list of part names (backticked), or [] for "nothing of ours".
 * Parts of src/ are written `src/<name>` (`.ts` for a loose file); the top-level collectors folder
 * (in the daemon's row) is written `collectors/`.
 */
function mayImportLine(readme: string): string[] | undefined {
  const line = readme.split('\n').find(l => l.startsWith('May import:'))
  if (!line) return undefined
  return [...line.matchAll(/`(?:src\/([a-z-]+)(?:\.ts)?|(collectors))\/?`/g)].map(m => (m[1] ?? m[2])!)
}

t.test('every folder of src/ has an import rule and a README stating it', async t => {
  for (const folder of folders) {
    t.ok(rules[folder], `src/${folder} has a row in MAY_IMPORT`)
    let readme = ''
    try {
      readme = readFileSync(join(src, folder, 'README.md'), 'utf8')
    } catch {
      t.fail(`src/${folder}/README.md exists`)
      continue
    }
    const stated = mayImportLine(readme)
    t.ok(stated, `src/${folder}/README.md has a "May import:" line`)
    t.same([...(stated ?? [])].sort(), [...(rules[folder] ?? [])].sort(), `src/${folder}/README.md states its row`)
  }
  t.same(
    Object.keys(rules)
      .filter(k => !k.endsWith('.ts'))
      .filter(k => !folders.includes(k)),
    [],
    'no rule names a folder that does not exist',
  )
})

t.test('collectors/ has a README naming its one way into src/', async t => {
  const readme = readFileSync(join(root, 'collectors', 'README.md'), 'utf8')
  t.same(mayImportLine(readme), ['collector-kit'])
})

t.test('at most 6 loose files in src/, each with an import rule', async t => {
  t.ok(loose.length <= 6, `${loose.length} loose files: ${loose.join(', ')}`)
  for (const f of loose) t.ok(rules[f], `src/${f} has a row in MAY_IMPORT`)
})

t.test('no source file over 500 lines; over 450 only when its opening comment says it holds one idea', async t => {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const n of readdirSync(dir)) {
      const p = join(dir, n)
      if (statSync(p).isDirectory()) walk(p)
      else if (/\.tsx?$/.test(n)) files.push(p)
    }
  }
  walk(src)
  walk(join(root, 'collectors'))
  t.ok(files.length > 100, 'the walk found the sources')
  for (const f of files) {
    const lines = readFileSync(f, 'utf8').split('\n')
    const n = lines.length - 1
    const name = f.slice(root.length + 1)
    t.ok(n <= 500, `${name}: ${n} lines`)
    if (n > 450) {
      const opening = lines
        .slice(
          0,
          lines.findIndex(l => !l.startsWith('//')),
        )
        .join(' ')
      t.match(opening, /One idea/, `${name} (${n} lines) says it holds one idea`)
    }
  }
})
