// A daemon running above normal priority (the systemd unit's Nice=-5) launches Chromium at normal
// priority again: the browser is not favoured over anything but the daemon. Runs the compiled
// launcher in a child started with `nice -n -5` (needs the privilege to lower niceness: root, as in
// CI; skipped without it). Needs dist/ (npm test builds it first).
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const launcher = pathToFileURL(join(import.meta.dirname, '..', 'dist/src/monitor/launch.js')).href
const script = `
import { getPriority } from 'node:os'
import { readFileSync, readdirSync } from 'node:fs'
const { launchChromium } = await import(${JSON.stringify(launcher)})
// As an unprivileged user (what a root daemon does, and what the systemd unit's DynamicUser is):
// as root Chromium sets its own processes' priorities, unprivileged it keeps what it inherited.
const b = await launchChromium(process.getuid() === 0 ? { user: { name: 'nobody', uid: 65534, gid: 65534 } } : {})
try {
  // /proc/<pid>/stat after the parenthesised command name: field 4 is the parent, 19 the nice value.
  const stat = (pid) => readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ')[1].split(' ')
  // The zygote, the parent of every renderer.
  const parent = new Map()
  for (const p of readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) { try { parent.set(Number(p), Number(stat(p)[1])) } catch {} }
  const descends = (pid) => { for (let x = parent.get(pid); x; x = parent.get(x)) if (x === b.pid) return true; return false }
  const zygote = [...parent.keys()].find((p) => { try { return descends(p) && readFileSync('/proc/' + p + '/cmdline', 'utf8').includes('--type=zygote') } catch { return false } })
  process.stdout.write(JSON.stringify({ daemon: getPriority(), chromium: Number(stat(b.pid)[16]), zygote: Number(stat(zygote)[16]) }))
} finally { await b.close() }
`

const canLowerNiceness = process.getuid?.() === 0

t.test(
  'Chromium launched from a daemon at nice -5 runs at nice 0',
  { skip: canLowerNiceness ? false : 'lowering niceness needs root' },
  async t => {
    const r = spawnSync(
      'nice',
      ['-n', '-5', 'env', '-u', 'NODE_OPTIONS', process.execPath, '--input-type=module', '-e', script],
      { encoding: 'utf8', timeout: 60_000 },
    )
    t.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout) as unknown
    t.same(out, { daemon: -5, chromium: 0, zygote: 0 })
  },
)

t.test('at normal priority Chromium is launched as it is', async t => {
  const r = spawnSync('env', ['-u', 'NODE_OPTIONS', process.execPath, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  })
  t.equal(r.status, 0, r.stderr)
  t.same(JSON.parse(r.stdout), { daemon: 0, chromium: 0, zygote: 0 })
})
