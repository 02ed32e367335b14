// `browser-telemetry fleet serve` as a command: its flags and env twins, refusals with one line and
// exit 1, and the real process (tsx) serving, starting before NATS is up, and stopping on SIGTERM.
import t from 'tap'
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ConfigError, parseFleetServeConfig } from '../src/config/config.js'
import { waitFor } from './helpers/http.js'
import { startNatsServer } from './helpers/nats.js'
import { reservedPort } from './helpers/ports.js'
import { tempDir } from './helpers/store.js'

const repo = join(import.meta.dirname, '..')

t.test('flags, env twins (flags win) and defaults', async t => {
  const c = parseFleetServeConfig(['--nats-url', 'nats://a:4222,nats://b:4222', '--token', 'tok'], {
    BROWSER_TELEMETRY_NATS_STREAM: 'FLEET_1',
    BROWSER_TELEMETRY_LISTEN: '0.0.0.0:9000',
    BROWSER_TELEMETRY_TOKEN: 'from-env',
  })
  t.same(c, {
    listen: { host: '0.0.0.0', port: 9000 },
    token: 'tok',
    tokenFile: undefined,
    nats: { servers: ['nats://a:4222', 'nats://b:4222'], credsFile: undefined, tokenFile: undefined, tlsCa: undefined },
    stream: 'FLEET_1',
    subjectPrefix: 'telemetry',
    requestTimeoutMs: 5000,
    maxStreamClients: 64,
    logLevel: 'info',
  })
  const d = parseFleetServeConfig([], {
    BROWSER_TELEMETRY_NATS_URL: 'nats://n:4222',
    BROWSER_TELEMETRY_TOKEN_FILE: '/x',
  })
  t.same(d.listen, { host: '127.0.0.1', port: 10223 }, 'default listen')
  t.equal(d.tokenFile, '/x')
})

t.test('refusals name the flag', async t => {
  const cases: [string[], RegExp][] = [
    [['--token', 't'], /^--nats-url is required/],
    [['--nats-url', 'nats://n:4222'], /^--token or --token-file is required/],
    [['--nats-url', 'http://n', '--token', 't'], /^--nats-url: expected nats:\/\/host:port/],
    [['--nats-url', 'nats://n', '--token', 't', '--nats-timeout', '50ms'], /^--nats-timeout: at least 100ms/],
    [['--nats-url', 'nats://n', '--token', 't', '--nats-timeout', 'soon'], /^--nats-timeout: expected a duration/],
    [['--nats-url', 'nats://n', '--token', 't', '--nats-stream', 'a.b'], /^--nats-stream: letters, digits/],
    [['--nats-url', 'nats://n', '--token', 't', '--nats-subject-prefix', 'a.*'], /^--nats-subject-prefix: /],
    [['--nats-url', 'nats://n', '--token', 't', '--listen', 'nowhere'], /^--listen: expected host:port/],
    [
      ['--nats-url', 'nats://n', '--token', 't', '--max-stream-clients', '0'],
      /^--max-stream-clients: expected an integer >= 1/,
    ],
    [['--nats-url', 'nats://n', '--token', 't', '--bogus'], /bogus/],
  ]
  for (const [argv, message] of cases)
    t.throws(() => parseFleetServeConfig(argv, {}), { name: ConfigError.name, message }, argv.join(' '))
})

t.test('the command: serves before NATS is up (503), then reads; SIGTERM exits 0', async t => {
  const dir = await tempDir(t)
  const tokens = join(dir, 'tokens')
  await writeFile(tokens, 'cli-token read\n')
  const port = await reservedPort()
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'fleet', 'serve', '--listen', '127.0.0.1:0', '--token-file', tokens],
    {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        BROWSER_TELEMETRY_NATS_URL: `nats://127.0.0.1:${port}`,
        BROWSER_TELEMETRY_LOG_LEVEL: 'silent',
      },
    },
  )
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  child.stderr!.on('data', (d: Buffer) => (out += String(d)))
  const exited = new Promise<number | null>(r => child.once('exit', code => r(code)))
  t.teardown(() => child.kill('SIGKILL'))
  const url = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`fleet serve exited ${child.exitCode}: ${out}`)
      return /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]
    },
    30_000,
    'fleet serve to listen',
  )
  const auth = { headers: { authorization: 'Bearer cli-token' } }
  const down = await fetch(`${url}/browsers/vm-1/telemetry/events`, auth)
  t.equal(down.status, 503, 'no NATS yet: 503')
  t.equal(((await down.json()) as { code: string }).code, 'unavailable')
  t.equal((await fetch(`${url}/healthz`)).status, 503)

  const nats = await startNatsServer({ port })
  t.teardown(() => nats.dispose())
  const { connect } = await import('@nats-io/transport-node')
  const { jetstreamManager } = await import('@nats-io/jetstream')
  const nc = await connect({ servers: nats.url })
  await (await jetstreamManager(nc)).streams.add({ name: 'BROWSER_TELEMETRY', subjects: ['telemetry.>'] })
  await nc.close()
  await waitFor(async () => (await fetch(`${url}/healthz`)).status === 200 || undefined, 30_000, 'connected')
  const unknown = await fetch(`${url}/browsers/vm-1/telemetry/events`, auth)
  t.equal(unknown.status, 404, 'connected: an empty stream knows no browser')

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM: clean exit')
})
