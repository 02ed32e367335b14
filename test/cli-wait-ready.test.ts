// `browser-telemetry wait-ready` (the unit's ExecStartPost=): waits while nothing or something else
// answers the listen address, exits 0 once a real daemon's /healthz does, 1 after --timeout.
import t from 'tap'
import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { healthUrlOf } from '../src/cli/wait-ready.js'
import { tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'

const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url))
const waitReady = clientCommands['wait-ready']!

function capture(env: NodeJS.ProcessEnv) {
  let out = ''
  let err = ''
  const io: CliIO = {
    stdout: { write: c => ((out += String(c)), true) },
    stderr: { write: c => ((err += String(c)), true) },
    env,
  }
  return { io, out: () => out, err: () => err }
}

/** A port nothing listens on now (the kernel gave it out and it was released). */
async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>(r => s.listen(0, '127.0.0.1', r))
  const { port } = s.address() as AddressInfo
  await new Promise(r => s.close(r))
  return port
}

const listenOn = (s: Server, port: number) => new Promise<void>(r => s.listen(port, '127.0.0.1', r))

t.test('wildcard listen hosts are probed on loopback', async t => {
  t.equal(healthUrlOf({ host: '0.0.0.0', port: 10222 }), 'http://127.0.0.1:10222/healthz')
  t.equal(healthUrlOf({ host: '::', port: 1 }), 'http://[::1]:1/healthz')
  t.equal(healthUrlOf({ host: '::1', port: 1 }), 'http://[::1]:1/healthz')
  t.equal(healthUrlOf({ host: '127.0.0.2', port: 5 }), 'http://127.0.0.2:5/healthz')
})

t.test('nothing listening: exit 1 after --timeout, saying where it looked', async t => {
  const port = await freePort()
  const c = capture({ BROWSER_TELEMETRY_LISTEN: `127.0.0.1:${port}` })
  const started = Date.now()
  t.equal(await waitReady.run(['--timeout', '300ms'], c.io), 1)
  t.ok(Date.now() - started >= 300, 'waited the whole timeout')
  t.equal(c.err(), `browser-telemetry wait-ready: no daemon answered http://127.0.0.1:${port}/healthz within 300 ms\n`)
  t.equal(c.out(), '')
  const zero = capture({})
  t.equal(await waitReady.run(['--listen', '127.0.0.1:0'], zero.io), 2)
  t.match(zero.err(), /port 0 has no fixed address/)
})

t.test('waits while another server holds the port, exits 0 once the daemon listens there', async t => {
  t.setTimeout(60_000)
  const port = await freePort()
  // Something that is not the daemon answers first: a 404 page, then a 200 without a browser id.
  let probes = 0
  const other = createServer((req, res) => {
    probes++
    if (probes === 1) res.writeHead(404).end('not found')
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
  })
  await listenOn(other, port)
  const c = capture({ BROWSER_TELEMETRY_LISTEN: `127.0.0.1:${port}` })
  let code: number | undefined
  const done = waitReady.run(['--timeout', '45s'], c.io).then(n => (code = n))
  await waitFor(() => probes >= 3, 10_000, 'wait-ready to probe the other server three times')
  t.equal(code, undefined, 'an answer without a browser id is not the daemon')
  await new Promise(r => {
    other.closeAllConnections()
    other.close(r)
  })
  const dir = await tempDir(t)
  const daemon = await startDaemon(
    parseServeConfig(['--listen', `127.0.0.1:${port}`, '--data-dir', dir, '--no-browser'], {}),
    { logger: silentLogger, announce: () => {}, showNewToken: false },
  )
  t.teardown(() => daemon.close())
  t.equal(await done, 0, c.err())
  t.equal(
    c.out(),
    `browser-telemetry wait-ready: http://127.0.0.1:${port}/healthz answers (browser ${daemon.browserId})\n`,
  )

  // The built command, as ExecStartPost= runs it: the listen address from the unit's environment.
  const run = await new Promise<{ code: number; stdout: string }>(resolve => {
    execFile(
      process.execPath,
      [CLI, 'wait-ready', '--timeout', '10s'],
      { env: { PATH: process.env.PATH, BROWSER_TELEMETRY_LISTEN: `127.0.0.1:${port}` } },
      (err, stdout) => resolve({ code: err ? Number(err.code) : 0, stdout }),
    )
  })
  t.same(run, {
    code: 0,
    stdout: `browser-telemetry wait-ready: http://127.0.0.1:${port}/healthz answers (browser ${daemon.browserId})\n`,
  })
})
