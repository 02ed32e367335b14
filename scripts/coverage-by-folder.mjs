// Line coverage per folder from the json-summary report `npm run coverage` writes (no gate: report only).
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'

const file = process.argv[2] ?? '.tap/report/coverage-summary.json'
const summary = JSON.parse(readFileSync(file, 'utf8'))
const folders = new Map()
for (const [path, s] of Object.entries(summary)) {
  if (path === 'total') continue
  const rel = relative(process.cwd(), path)
  const parts = rel.split('/')
  const folder =
    parts[0] === 'src' && parts.length > 2 ? `src/${parts[1]}` : parts[0] === 'src' ? 'src (top level)' : parts[0]
  const f = folders.get(folder) ?? { covered: 0, total: 0 }
  f.covered += s.lines.covered
  f.total += s.lines.total
  folders.set(folder, f)
}
for (const [folder, f] of [...folders].sort()) {
  const pct = f.total === 0 ? 100 : (100 * f.covered) / f.total
  console.log(
    `${folder.padEnd(20)} ${pct.toFixed(1).padStart(6)}%  (${f.covered}/${f.total} lines)${pct < 70 ? '  < 70%' : ''}`,
  )
}
