// `browser-telemetry bundle`: the file it writes holds what the route serves; progress only on a
// terminal; a daemon failure mid-download leaves no file (and no temporary one) behind.
import t from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { DEFAULT_BUNDLE_LIMITS } from '../src/bundle/bundle.js'
import type { EventLog } from '../src/store/event-log.js'
import { BROWSER_ID, T0_US, TOKEN, startBundleApi, unzipAll, type BundleApi } from './helpers/bundle.js'
import { tempDir } from './helpers/store.js'

const SEC = 1_000_000
const iso = (us: number) => new Date(us / 1000).toISOString()

function capture(tty = false) {
  let out = ''
  let err = ''
  const io: CliIO = {
    stdout: {
      write: c => {
        out += String(c)
        return true
      },
    },
    stderr: {
      isTTY: tty,
      write: c => {
        err += String(c)
        return true
      },
    },
    env: {},
  }
  return { io, out: () => out, err: () => err }
}

async function record(api: BundleApi, steps: number) {
  for (let n = 0; n < steps; n++) {
    api.setClock(T0_US + n * SEC)
    await api.emitStep(n)
  }
  api.setClock(T0_US + 600 * SEC)
}

t.test('bundle -o writes the zip the route serves', async t => {
  const api = await startBundleApi(t)
  await record(api, 40)
  const dir = await tempDir(t, 'bt-cli-bundle-')
  const window = ['--since', iso(T0_US), '--until', iso(T0_US + 30 * SEC)]
  const file = join(dir, 'x.zip')
  const quiet = capture(false)
  t.equal(
    await clientCommands.bundle!.run(['--url', api.url, '--token', TOKEN, ...window, '-o', file], quiet.io),
    0,
    quiet.err(),
  )
  t.equal(quiet.err(), '', 'piped: nothing on stderr')
  t.same(await readdir(dir), ['x.zip'], 'only the zip, no temporary file')
  const fromCli = await unzipAll(await readFile(file))
  const res = await api.get(
    `/browsers/${BROWSER_ID}/telemetry/bundle?since=${encodeURIComponent(iso(T0_US))}&until=${encodeURIComponent(iso(T0_US + 30 * SEC))}`,
  )
  const fromRoute = await unzipAll(Buffer.from(await res.arrayBuffer()))
  t.same([...fromCli.keys()], [...fromRoute.keys()], 'the same files in the same order')
  for (const [name, bytes] of fromRoute) {
    if (name === 'manifest.json') continue
    t.ok(fromCli.get(name)!.equals(bytes), `${name}: the same bytes`)
  }
  // Only what the download itself changed: the log's last seq (its api_call event) at the start.
  const m = (b: Buffer) => ({
    ...JSON.parse(b.toString()),
    seq: { ...JSON.parse(b.toString()).seq, last_committed_at_start: 0 },
  })
  t.same(m(fromCli.get('manifest.json')!), m(fromRoute.get('manifest.json')!), 'manifest.json: the same')
  t.ok(fromCli.get('events.ndjson')!.length > 10_000)

  const tty = capture(true)
  const named = join(dir, 'tty.zip')
  t.equal(await clientCommands.bundle!.run(['--url', api.url, '--token', TOKEN, ...window, '-o', named], tty.io), 0)
  t.match(tty.err(), /wrote .*tty\.zip \(\d+\.\d KiB in \d+\.\d s\)\n$/, 'a terminal gets the closing line')

  const stdout = capture(false)
  t.equal(await clientCommands.bundle!.run(['--url', api.url, '--token', TOKEN, ...window, '-o', '-'], stdout.io), 0)
  t.ok(stdout.out().startsWith('PK\u0003\u0004'), '-o - writes the zip to standard output')

  const help = capture()
  t.equal(await clientCommands.bundle!.run(['--help'], help.io), 0)
  t.match(help.out(), /--since[\s\S]*--until[\s\S]*--output/)
})

t.test('a daemon failure mid-download leaves no file; an API refusal neither', async t => {
  let reads = 0
  const failing = (log: EventLog): EventLog =>
    new Proxy(log, {
      get(target, prop) {
        if (prop === 'read')
          return async (q: Parameters<EventLog['read']>[0]) => {
            if (++reads === 5) throw new Error('disk on fire')
            return target.read(q)
          }
        const v = Reflect.get(target, prop, target) as unknown
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
      },
    })
  const api = await startBundleApi(t, {
    source: log => ({ log: failing(log) }),
    limits: { ...DEFAULT_BUNDLE_LIMITS, readPageEvents: 20 },
  })
  await record(api, 40)
  const dir = await tempDir(t, 'bt-cli-bundle-fail-')
  const file = join(dir, 'x.zip')
  const c = capture()
  t.equal(
    await clientCommands.bundle!.run(['--url', api.url, '--token', TOKEN, '--since', iso(T0_US), '-o', file], c.io),
    1,
  )
  t.match(
    c.err(),
    /^browser-telemetry bundle: the download broke off after \d+(\.\d)? (B|KiB) \(.*\); nothing was written\n$/,
  )
  t.ok(reads >= 5, 'the daemon failed after the download began')
  t.same(await readdir(dir), [], 'no x.zip, no temporary file')

  const bad = capture()
  t.equal(
    await clientCommands.bundle!.run(['--url', api.url, '--token', TOKEN, '--since', 'yesterday', '-o', file], bad.io),
    1,
  )
  t.match(bad.err(), /^browser-telemetry bundle: 400 bad_request: .*since/)
  t.same(await readdir(dir), [])
})
