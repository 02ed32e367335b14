// scripts/start.sh leaves the data dir 0700 and its files 0600 (umask 077). The script runs
// unmodified from a copy in a temp tree whose setup.sh and dist/src/cli.js are stand-ins, so no
// package is installed and no daemon touches ./data; then the real daemon runs under that umask.
import t from 'tap'
import { execFile } from 'node:child_process'
import { chmod, copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { tempDir } from './helpers/store.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..')

/** Every path under dir with its permission bits, sorted. */
async function modes(dir: string): Promise<[string, string][]> {
  const out: [string, string][] = []
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const p = join(e.parentPath, e.name)
    out.push([p.slice(dir.length + 1), ((await stat(p)).mode & 0o777).toString(8)])
  }
  return out.sort()
}

t.test('start.sh runs the daemon under umask 077: what it creates is 0700 / 0600', async t => {
  const tree = await tempDir(t)
  await mkdir(join(tree, 'scripts'))
  await mkdir(join(tree, 'dist/src'), { recursive: true })
  await copyFile(join(root, 'scripts/start.sh'), join(tree, 'scripts/start.sh'))
  await writeFile(join(tree, 'package.json'), '{"type":"commonjs"}\n')
  await writeFile(
    join(tree, 'scripts/setup.sh'),
    '#!/usr/bin/env bash\necho setup-ran > "$(dirname "$0")/../setup-ran"\n',
  )
  // Stand-in for the daemon: creates a data dir and files with default modes, as any code would.
  await writeFile(
    join(tree, 'dist/src/cli.js'),
    `
const fs = require('node:fs')
const path = require('node:path')
const dir = path.join(process.cwd(), 'data')
fs.mkdirSync(path.join(dir, 'events'), { recursive: true })
fs.writeFileSync(path.join(dir, 'token'), 'secret')
fs.writeFileSync(path.join(dir, 'events', 'LOG'), 'log')
fs.writeFileSync(path.join(process.cwd(), 'report.json'), JSON.stringify({ umask: process.umask(), argv: process.argv.slice(2), arenas: process.env.MALLOC_ARENA_MAX, execArgv: process.execArgv }))
`,
  )
  // Started as an operator would, from anywhere, with an umask that would leave things readable.
  await chmod(tree, 0o755)
  await run(
    'bash',
    ['-c', `umask 022 && cd / && exec bash ${join(tree, 'scripts/start.sh')} --open https://example.test`],
    { env: { PATH: process.env.PATH! } },
  )
  const report = JSON.parse(await readFile(join(tree, 'report.json'), 'utf8')) as {
    umask: number
    argv: string[]
    arenas: string
    execArgv: string[]
  }
  t.equal(report.umask, 0o077)
  t.same(report.argv, ['serve', '--open', 'https://example.test'], 'arguments pass through to serve')
  t.same(report.execArgv, ['--max-semi-space-size=2', '--single-threaded', '--no-memory-reducer'])
  t.equal(report.arenas, '2')
  t.equal(await readFile(join(tree, 'setup-ran'), 'utf8'), 'setup-ran\n', 'setup.sh runs first')
  t.same(await modes(join(tree, 'data')), [
    ['events', '700'],
    ['events/LOG', '600'],
    ['token', '600'],
  ])
  t.equal((await stat(join(tree, 'data'))).mode & 0o777, 0o700)
})

t.test('the real daemon under umask 077 creates nothing group- or world-accessible in its data dir', async t => {
  const dir = join(await tempDir(t), 'data')
  const before = process.umask(0o077)
  t.teardown(() => {
    process.umask(before)
  })
  const d = await startDaemon(
    parseServeConfig(['--listen', '127.0.0.1:0', '--data-dir', dir, '--no-browser', '--proxy-listen', 'off'], {}),
    { logger: silentLogger, announce: () => {} },
  )
  await d.close()
  t.equal((await stat(dir)).mode & 0o777, 0o700)
  const entries = await modes(dir)
  t.ok(
    entries.some(([p]) => p === 'token') && entries.some(([p]) => p.startsWith('events/')),
    `token and log present (${entries.length} entries)`,
  )
  t.same(
    entries.filter(([, m]) => m !== '700' && m !== '600'),
    [],
    'every entry 0700 (dirs) or 0600 (files)',
  )
})
