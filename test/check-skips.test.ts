// scripts/check-skips.mjs against real tap output: a test file written here is run by node with tap
// (outside the runner, so it prints the same TAP stream the runner saves in .tap/test-results), and
// the script reads it from a scratch working directory. A todo test is not run, so it must be named
// and fail the run like a skip unless it is on the allow-list.
import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { tempDir } from './helpers/store.js'

const script = join(import.meta.dirname, '..', 'scripts', 'check-skips.mjs')
const tapUrl = import.meta.resolve('tap')
/** On the script's allow-list (its one entry). */
const ALLOWED_FILE = 'test/system-collectors.test.ts'
const ALLOWED_NAME = 'real memcg OOM kill (opt-in: BT_TEST_REAL_OOM=1, cgroup v1 memory controller, readable /dev/kmsg)'

interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Node without the runner's variables: tap then prints TAP instead of reporting to a parent runner. */
function run(file: string, cwd: string, args: string[] = []): Promise<Run> {
  return new Promise(resolve => {
    execFile(
      process.execPath,
      [file, ...args],
      { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/** Runs each body (tests on a tap `t`) as that test file and saves its output where the runner would. */
async function results(t: Test, files: Record<string, string>) {
  const dir = await tempDir(t, 'bt-check-skips-')
  for (const [file, body] of Object.entries(files)) {
    const src = join(dir, 'fixture.mjs')
    await writeFile(src, `import t from ${JSON.stringify(tapUrl)}\n${body}\n`)
    const out = await run(src, dir)
    const saved = join(dir, '.tap', 'test-results', `${file}.tap`)
    await mkdir(join(saved, '..'), { recursive: true })
    await writeFile(saved, out.stdout)
  }
  return dir
}
t.test('a todo test that is not allowed is listed and fails the run', async t => {
  const dir = await results(t, {
    'test/a.test.ts': `
      t.test('runs', async t => { t.equal(1 + 1, 2, 'fine') })
      t.test('comes later', { todo: 'not written yet' }, async t => { t.equal(1 + 1, 2, 'never run') })
      t.todo('a bare todo')`,
  })
  const r = await run(script, dir)
  t.equal(r.code, 1)
  t.same(r.stdout.trim().split('\n'), [
    'skipped or todo tests: 2',
    '  NOT ALLOWED todo test/a.test.ts: comes later (not written yet)',
    '  NOT ALLOWED todo test/a.test.ts: a bare todo',
  ])
  t.match(r.stderr, /check-skips: 2 skipped or todo test\(s\) not on the allow-list/)
})

t.test('a nested todo or skip is found too, and a skip still fails', async t => {
  const dir = await results(t, {
    'test/b.test.ts': `
      t.test('outer', async t => {
        t.test('inner todo', { todo: true }, async () => {})
        t.skip('inner skip')
      })`,
  })
  const r = await run(script, dir)
  t.equal(r.code, 1)
  t.same(r.stdout.trim().split('\n'), [
    'skipped or todo tests: 2',
    '  NOT ALLOWED todo test/b.test.ts: inner todo',
    '  NOT ALLOWED skip test/b.test.ts: inner skip',
  ])
})

t.test('allow-listed: listed, the run passes; as a todo it is allowed the same way', async t => {
  for (const mark of ['skip', 'todo']) {
    const dir = await results(t, {
      [ALLOWED_FILE]: `
        t.test(${JSON.stringify(ALLOWED_NAME)}, { ${mark}: 'opt-in' }, async () => {})
        t.test('runs', async t => { t.equal(1 + 1, 2, 'fine') })`,
    })
    const r = await run(script, dir)
    t.equal(r.code, 0, `${mark}: exit code`)
    t.same(r.stdout.trim().split('\n'), [
      'skipped or todo tests: 1',
      `  allowed    ${mark} ${ALLOWED_FILE}: ${ALLOWED_NAME} (opt-in)`,
    ])
  }
})

t.test('nothing skipped: zero listed, the run passes', async t => {
  const dir = await results(t, { 'test/c.test.ts': `t.test('runs', async t => { t.equal(1 + 1, 2, 'fine') })` })
  const r = await run(script, dir)
  t.same({ code: r.code, stdout: r.stdout.trim() }, { code: 0, stdout: 'skipped or todo tests: 0' })
})
