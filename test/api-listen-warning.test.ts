// The API has no TLS of its own: listening beyond loopback, the daemon logs one warning at start and
// /healthz lists it under `warnings`; on loopback there is none. (0.0.0.0 on port 0 is bound, but the
// test only ever connects to 127.0.0.1.)
import t, { type Test } from 'tap'
import { Writable } from 'node:stream'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { createLogger } from '../src/log.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { tempDir } from './helpers/store.js'

const WARNING =
  'the API listens on 0.0.0.0, beyond loopback, without TLS: bearer tokens and telemetry cross the network in clear unless a TLS proxy is in front'

async function daemonOn(t: Test, host: string) {
  const logs: { level: number; msg: string }[] = []
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n').filter(Boolean))
        logs.push(JSON.parse(line) as { level: number; msg: string })
      cb()
    },
  })
  const d = await startDaemon(
    parseServeConfig(['--listen', `${host}:0`, '--data-dir', await tempDir(t), '--no-browser'], {}),
    { logger: createLogger('info', undefined, sink), announce: () => {}, showNewToken: false },
  )
  t.teardown(() => d.close())
  const port = Number(new URL(d.url).port)
  return { d, logs, port }
}

t.test('listening on 0.0.0.0: the warning in the log and in /healthz, exactly', async t => {
  const { logs, port, d } = await daemonOn(t, '0.0.0.0')
  const res = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(res.status, 200)
  const health = (await res.json()) as { warnings: string[]; status: string }
  t.same(health.warnings, [WARNING])
  t.equal(health.status, 'ok', 'a warning never degrades the status')
  t.same(
    logs.filter(l => l.level === 40).map(l => l.msg),
    [WARNING],
    'logged once at start, at warn level',
  )

  // wait-ready probes a wildcard listen address on loopback.
  let out = ''
  const io: CliIO = {
    stdout: { write: c => ((out += String(c)), true) },
    stderr: { write: () => true },
    env: { BROWSER_TELEMETRY_LISTEN: `0.0.0.0:${port}` },
  }
  t.equal(await clientCommands['wait-ready']!.run(['--timeout', '10s'], io), 0)
  t.equal(out, `browser-telemetry wait-ready: http://127.0.0.1:${port}/healthz answers (browser ${d.browserId})\n`)
})

t.test('listening on 127.0.0.1: no warning', async t => {
  const { logs, port } = await daemonOn(t, '127.0.0.1')
  const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { warnings: string[] }
  t.same(health.warnings, [])
  t.same(
    logs.filter(l => l.level === 40).map(l => l.msg),
    [],
  )
})
