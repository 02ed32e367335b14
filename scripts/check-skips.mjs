#!/usr/bin/env node
// Lists every test the last `npm test` skipped or marked todo (from tap's per-file results in
// .tap/test-results) and fails when one is not on the allow-list below: a skip must be a decision,
// not an accident of the machine (a missing package, a missing privilege), and a todo test is not
// run at all, so it hides as well as a skip does.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

// file -> test names allowed to skip (or be todo), each with why it may.
const ALLOWED = {
  'test/system-collectors.test.ts': {
    // Kills a real process in a cgroup v1 memory controller and reads /dev/kmsg: it changes the
    // host, so it runs only when asked for (BT_TEST_REAL_OOM=1) on a disposable machine.
    'real memcg OOM kill (opt-in: BT_TEST_REAL_OOM=1, cgroup v1 memory controller, readable /dev/kmsg)': true,
  },
}

const root = '.tap/test-results'
function* files(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) yield* files(p)
    else if (p.endsWith('.tap')) yield p
  }
}

let results
try {
  results = [...files(root)]
} catch {
  console.error(`check-skips: no ${root}: run the suite first`)
  process.exit(1)
}
const skipped = []
for (const p of results) {
  const file = relative(root, p).replace(/\.tap$/, '')
  for (const line of readFileSync(p, 'utf8').split('\n')) {
    // `ok 3 - name # SKIP reason`, `ok 4 - name # TODO reason`; a failing todo is `not ok ... # TODO`.
    const m = /^\s*(?:not )?ok \d+(?: - (.*?))? # (SKIP|TODO)\b ?(.*)$/i.exec(line)
    if (m) skipped.push({ file, name: m[1] ?? '', kind: m[2].toLowerCase(), reason: m[3] })
  }
}
console.log(`skipped or todo tests: ${skipped.length}`)
let unexpected = 0
for (const s of skipped) {
  const ok = ALLOWED[s.file]?.[s.name] === true
  if (!ok) unexpected++
  console.log(
    `  ${ok ? 'allowed   ' : 'NOT ALLOWED'} ${s.kind} ${s.file}: ${s.name}${s.reason ? ` (${s.reason})` : ''}`,
  )
}
if (unexpected > 0) {
  console.error(`check-skips: ${unexpected} skipped or todo test(s) not on the allow-list in scripts/check-skips.mjs`)
  process.exit(1)
}
