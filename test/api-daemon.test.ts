// startDaemon wiring and the `serve` command as a real process: startup, token/curl line,
// persistent browser id, SIGTERM -> clean exit 0, startup errors -> one line + exit 1.
import t from 'tap'
import { spawn } from 'node:child_process'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { EventLog } from '../src/store/event-log.js'
import { silentLogger } from '../src/log.js'
import { tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'

t.test('startDaemon: generated token + browser id persist across restarts; close() is clean', async t => {
  const dir = await tempDir(t)
  const lines: string[] = []
  const config = parseServeConfig(['--listen', '127.0.0.1:0', '--data-dir', dir, '--no-browser'], {})
  const d1 = await startDaemon(config, { logger: silentLogger, announce: l => lines.push(l), showNewToken: true })
  t.teardown(() => d1.close())
  t.match(d1.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.equal((await readFile(join(dir, 'browser-id'), 'utf8')).trim(), d1.browserId)
  const token = d1.generatedToken!.token
  t.equal(lines.length, 2)
  t.equal(
    lines[0],
    `API token generated and stored in ${join(dir, 'token')} (mode 0600): ${token}`,
    'shown once: just created, a terminal',
  )
  t.equal(
    lines[1],
    `Try: curl -H "Authorization: Bearer $(cat ${join(dir, 'token')})" '${d1.url}/browsers/${d1.browserId}/telemetry/events?limit=10'`,
  )
  t.equal((await stat(join(dir, 'token'))).mode & 0o777, 0o600)
  t.equal((await stat(join(dir, 'browser-id'))).mode & 0o777, 0o600)
  t.equal((await stat(dir)).mode & 0o777, 0o700, 'data dir owner-only')

  const res = await fetch(`${d1.url}/browsers/${d1.browserId}/telemetry`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(res.status, 200)
  await d1.close()
  await d1.close() // idempotent

  // The log was closed cleanly (no unclean-stop gap) and the api_call is there.
  const log = await EventLog.open({ path: join(dir, 'events'), retentionIntervalMs: 0 })
  t.equal(log.previousStopWasUnclean, false)
  t.equal(log.lastSeq, 1)
  await log.close()

  const lines2: string[] = []
  const d2 = await startDaemon(config, { logger: silentLogger, announce: l => lines2.push(l), showNewToken: true })
  t.teardown(() => d2.close())
  t.equal(
    lines2[0],
    `API token stored in ${join(dir, 'token')} (mode 0600)`,
    'a reused token is never shown again, only its path',
  )
  t.notOk(lines2.join('\n').includes(token))
  t.equal(d2.browserId, d1.browserId, 'browser id kept')
  t.equal(d2.generatedToken!.token, token, 'token kept')
  const ok = await fetch(`${d2.url}/browsers/${d2.browserId}/telemetry/events?since=1h`, {
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(ok.status, 200)
  t.equal(JSON.parse(await ok.text()).length, 1)
  await d2.close()
})

t.test('startDaemon: a just-generated token is not printed when stderr is not a terminal (journal)', async t => {
  const dir = await tempDir(t)
  const lines: string[] = []
  const d = await startDaemon(parseServeConfig(['--listen', '127.0.0.1:0', '--data-dir', dir, '--no-browser'], {}), {
    logger: silentLogger,
    announce: l => lines.push(l),
    showNewToken: false,
  })
  t.teardown(() => d.close())
  const token = d.generatedToken!.token
  t.equal(lines[0], `API token generated and stored in ${join(dir, 'token')} (mode 0600)`)
  t.notOk(lines.join('\n').includes(token), 'the token is in no announced line')
})

t.test('startDaemon: --browser-id and --token win; no token file written', async t => {
  const dir = await tempDir(t)
  const d = await startDaemon(
    parseServeConfig(
      ['--listen', '127.0.0.1:0', '--data-dir', dir, '--browser-id', 'my-browser', '--token', 'given-token'],
      {},
    ),
    { logger: silentLogger, announce: () => t.fail('nothing to announce') },
  )
  t.teardown(() => d.close())
  t.equal(d.browserId, 'my-browser')
  t.equal(d.generatedToken, undefined)
  t.equal(
    (await fetch(`${d.url}/browsers/my-browser/telemetry`, { headers: { authorization: 'Bearer given-token' } }))
      .status,
    200,
  )
  await t.rejects(readFile(join(dir, 'token')), { code: 'ENOENT' })
})

t.test('startDaemon logs the backoff clamp as a warning and starts', async t => {
  const dir = await tempDir(t)
  const { pino } = await import('pino')
  const lines: { level: number; msg: string }[] = []
  const logger = pino(
    { level: 'warn' },
    {
      write: (s: string) => {
        lines.push(JSON.parse(s))
      },
    },
  )
  const config = parseServeConfig(
    ['--listen', '127.0.0.1:0', '--data-dir', dir, '--no-browser', '--token', 'x', '--reconnect-max-backoff', '100ms'],
    {},
  )
  const d = await startDaemon(config, { logger, announce: () => undefined })
  t.teardown(() => d.close())
  const clamp = lines.filter(l => /reconnect-max-backoff/.test(l.msg))
  t.same(
    clamp.map(l => [l.level, l.msg]),
    [[40, '--reconnect-initial-backoff 250ms is above --reconnect-max-backoff 100ms; using 100ms for both']],
  )
})

function runCli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', c => {
    out += c
  })
  child.stderr.on('data', c => {
    err += c
  })
  const exited = new Promise<number | null>(r => child.on('exit', code => r(code)))
  return { child, exited, out: () => out, err: () => err }
}

t.test('serve: prints the token + curl line, serves, SIGTERM -> exit 0 with the log closed cleanly', async t => {
  t.setTimeout(60_000)
  const dir = await tempDir(t)
  const p = runCli(['serve', '--listen', '127.0.0.1:0', '--data-dir', dir, '--no-browser', '--log-level', 'silent'])
  t.teardown(() => {
    p.child.kill('SIGKILL')
  })
  const curl = await waitFor(
    () =>
      /Try: curl -H "Authorization: Bearer \$\(cat (\S+)\)" '(http:\/\/127\.0\.0\.1:\d+)\/browsers\/(\S+)\/telemetry\/events\?limit=10'/.exec(
        p.err(),
      ),
    60_000,
    'curl line',
  )
  const [, tokenPath, url, browserId] = curl!
  t.equal(tokenPath, join(dir, 'token'))
  const token = (await readFile(tokenPath!, 'utf8')).trim()
  t.notOk(p.err().includes(token), 'stderr is a pipe (a journal): the token is never printed')
  const res = await fetch(`${url}/browsers/${browserId}/telemetry/events?limit=10`, {
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(res.status, 200)
  const stream = await fetch(`${url}/browsers/${browserId}/telemetry/stream`, {
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(stream.status, 200)
  const reading = (async () => {
    for await (const _ of stream.body!) {
      /* drain */
    }
    return 'ended'
  })().catch(() => 'reset')
  p.child.kill('SIGTERM')
  t.equal(await p.exited, 0, 'exit 0 after SIGTERM')
  t.equal(await reading, 'ended', 'open stream ended cleanly')
  const log = await EventLog.open({ path: join(dir, 'events'), retentionIntervalMs: 0 })
  t.equal(log.previousStopWasUnclean, false, 'log closed cleanly')
  await log.close()
})

t.test('serve: startup errors are one line and exit 1', async t => {
  t.setTimeout(60_000)
  const dir = await tempDir(t)
  const bad = runCli(['serve', '--listen', 'nonsense', '--data-dir', dir])
  t.equal(await bad.exited, 1)
  t.equal(bad.err().trim().split('\n').length, 1, bad.err())
  t.match(bad.err(), /^browser-telemetry: --listen: expected host:port/)

  const tf = runCli([
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--data-dir',
    dir,
    '--no-browser',
    '--token-file',
    join(dir, 'nope'),
  ])
  t.equal(await tf.exited, 1)
  t.match(tf.err(), /^browser-telemetry: cannot start: --token-file: cannot read .*nope: ENOENT\n$/)

  const unknown = runCli(['frobnicate'])
  t.equal(await unknown.exited, 2)
  t.match(unknown.err(), /unknown command "frobnicate"/)
})
