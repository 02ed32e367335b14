import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { chown, cp, readFile } from 'node:fs/promises'
import puppeteer from 'puppeteer-core'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { CHROMIUM_FLAGS } from '../src/monitor/launch.js'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVE_OPTIONS, envName, parseServeConfig } from '../src/config/config.js'
import { tempDir } from './helpers/store.js'
import { descendants } from './helpers/procs.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const UNIT = join(root, 'systemd/browser-telemetry.service')
const ENV_EXAMPLE = join(root, 'systemd/browser-telemetry.env.example')
const CHROMIUM_UNIT = join(root, 'systemd/browser-telemetry-chromium.service')
const DROP_IN = join(root, 'systemd/browser-telemetry.service.d/chromium-unit.conf')
const has = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise(resolve => {
    execFile(cmd, args, { timeout: 60_000, env }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
    })
  })
}

/** [Service] etc. key=value lines (repeated keys kept in order). */
function directives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith('[')) continue
    const i = line.indexOf('=')
    const k = line.slice(0, i)
    out.set(k, [...(out.get(k) ?? []), line.slice(i + 1)])
  }
  return out
}

t.test('the unit runs serve unprivileged, with state, restart, env file and readiness by wait-ready', async t => {
  const d = directives(await readFile(UNIT, 'utf8'))
  const one = (k: string) => d.get(k)?.at(-1)
  t.match(one('ExecStart'), /browser-telemetry serve$/)
  t.equal(one('Type'), 'exec', 'no notify socket')
  t.equal(one('NotifyAccess'), 'none', 'no process of the unit (Chromium included) can report for the daemon')
  t.same(d.get('ExecStartPost'), ['/usr/bin/env browser-telemetry wait-ready --timeout 50s'])
  t.ok(Number(one('TimeoutStartSec')!.replace(/s$/, '')) > 50, 'wait-ready gives up before systemd does')
  t.equal(one('DynamicUser'), 'yes')
  t.equal(one('User'), undefined, 'never root')
  t.equal(one('StateDirectory'), 'browser-telemetry')
  t.ok(d.get('Environment')!.includes('BROWSER_TELEMETRY_DATA_DIR=%S/browser-telemetry'))
  t.equal(one('Restart'), 'on-failure')
  t.equal(one('EnvironmentFile'), '-/etc/browser-telemetry/browser-telemetry.env')
  t.equal(one('MemoryDenyWriteExecute'), 'no', 'V8 JIT needs W+X memory')
  t.equal(one('ProtectKernelLogs'), 'no', 'the OOM watcher reads /dev/kmsg')
  t.ok(d.get('DeviceAllow')!.includes('/dev/kmsg r'))
  t.equal(one('CapabilityBoundingSet'), 'CAP_SYSLOG')
  t.equal(one('PrivateDevices'), undefined, 'PrivateDevices would hide /dev/kmsg')
})

t.test(
  'systemd-analyze verify is clean and the security exposure is 2.1',
  { skip: has('systemd-analyze') ? false : 'systemd-analyze not installed' },
  async t => {
    const verify = await run('systemd-analyze', ['verify', UNIT])
    t.equal(verify.code, 0, verify.stderr)
    t.equal(verify.stderr.trim(), '', 'no warnings')
    const sec = await run('systemd-analyze', ['security', '--offline=yes', UNIT])
    const m = /Overall exposure level for browser-telemetry\.service: (\d+(?:\.\d+)?)/.exec(sec.stdout)
    t.ok(m, `score printed: ${sec.stdout.slice(-300)} ${sec.stderr}`)
    const score = Number(m![1])
    t.equal(score, 2.1, 'exposure 2.1 (2.3 with NotifyAccess=all)')
    t.match(sec.stdout, /✓ NotifyAccess=\s+Service child processes cannot alter service state/)
    // The Chromium unit, with the drop-in that points the daemon at it.
    const dir = await tempDir(t)
    await cp(join(root, 'systemd'), dir, { recursive: true })
    const env = { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` }
    for (const unit of ['browser-telemetry-chromium.service', 'browser-telemetry.service']) {
      const v = await run('systemd-analyze', ['verify', join(dir, unit)], env)
      t.same([v.code, v.stderr.trim()], [0, ''], `${unit} with the drop-in verifies cleanly`)
    }
    const withDropIn = await run(
      'systemd-analyze',
      ['security', '--offline=yes', join(dir, 'browser-telemetry.service')],
      env,
    )
    t.match(
      withDropIn.stdout,
      /Overall exposure level for browser-telemetry\.service: 2\.1\b/,
      'the daemon unit keeps 2.1',
    )
    const chromium = await run('systemd-analyze', [
      'security',
      '--offline=yes',
      join(dir, 'browser-telemetry-chromium.service'),
    ])
    const c = /Overall exposure level for browser-telemetry-chromium\.service: (\d+(?:\.\d+)?)/.exec(chromium.stdout)
    t.ok(c && Number(c[1]) <= 3.5, `Chromium unit exposure ${c?.[1]} <= 3.5 (namespaces for its sandbox allowed)`)
  },
)

t.test('the Chromium unit: its own user, the namespaces its sandbox needs, the launch flags; the drop-in', async t => {
  const d = directives(await readFile(CHROMIUM_UNIT, 'utf8'))
  const one = (k: string) => d.get(k)?.at(-1)
  t.equal(one('DynamicUser'), 'yes')
  t.equal(one('RestrictNamespaces'), 'user pid net')
  t.equal(one('NoNewPrivileges'), 'yes', 'the namespace sandbox needs no setuid helper')
  t.equal(one('CapabilityBoundingSet'), '')
  const args = one('ExecStart')!.split(' ')
  t.equal(args[0], '/usr/bin/chromium')
  t.same(args.slice(1, 1 + CHROMIUM_FLAGS.length), CHROMIUM_FLAGS, "the daemon's launch flags")
  t.notOk(args.includes('--no-sandbox'))
  t.ok(args.includes('--remote-debugging-address=127.0.0.1') && args.includes('--remote-debugging-port=9223'))
  const drop = directives(await readFile(DROP_IN, 'utf8'))
  t.same(drop.get('Environment'), ['BROWSER_TELEMETRY_CDP_URL=http://127.0.0.1:9223'])
  t.same(
    [drop.get('Wants'), drop.get('After')],
    [['browser-telemetry-chromium.service'], ['browser-telemetry-chromium.service']],
  )
  // Every hardening line of the daemon's unit stays (its score is pinned above when systemd-analyze runs).
  const unit = directives(await readFile(UNIT, 'utf8'))
  for (const k of [
    'ProtectSystem',
    'ProtectHome',
    'PrivateTmp',
    'ProtectProc',
    'NoNewPrivileges',
    'RestrictNamespaces',
    'SystemCallFilter',
    'RestrictAddressFamilies',
    'CapabilityBoundingSet',
    'DevicePolicy',
    'UMask',
  ])
    t.ok(unit.get(k), `daemon unit keeps ${k}`)
})

t.test(
  "the Chromium unit's command as another user: sandboxed renderers, the daemon attaches, file://<data-dir> is out of reach",
  { skip: process.getuid?.() === 0 ? false : 'needs root to run the browser as nobody' },
  async t => {
    t.setTimeout(60_000)
    const run = await tempDir(t)
    await chown(run, 65534, 65534)
    const args = directives(await readFile(CHROMIUM_UNIT, 'utf8'))
      .get('ExecStart')!
      .at(-1)!
      .replaceAll('%t/browser-telemetry-chromium', run)
      .replace('--remote-debugging-port=9223', '--remote-debugging-port=0')
      .split(' ')
    // NoNewPrivileges=yes, CapabilityBoundingSet= and DynamicUser=yes, as systemd applies them.
    const { spawn } = await import('node:child_process')
    const child = spawn(
      '/usr/bin/setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', '--no-new-privs', '--bounding-set=-all', '--', ...args],
      { env: { HOME: run, PATH: '/usr/bin:/bin' }, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    t.teardown(() => {
      child.kill('SIGKILL')
    })
    let err = ''
    const ws = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (c: Buffer) => {
        err += c.toString()
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err)
        if (m) resolve(m[1]!)
      })
      child.once('exit', code => reject(new Error(`chromium exited ${code}: ${err.slice(-500)}`)))
    })
    t.notMatch(err, /No usable sandbox|FATAL/, 'the sandbox started')
    const dataDir = await tempDir(t)
    const config = parseServeConfig(
      [
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        dataDir,
        '--proxy-listen',
        '127.0.0.1:0',
        '--cdp-url',
        ws,
        '--categories',
        'page',
      ],
      {},
    )
    const daemon = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
    t.teardown(() => daemon.close())
    const token = (await readFile(join(dataDir, 'token'), 'utf8')).trim()
    const pp = await puppeteer.connect({
      browserWSEndpoint: `ws://127.0.0.1:${daemon.proxy!.address().port}/devtools/browser?token=${token}`,
    })
    t.teardown(() => pp.disconnect())
    const page = await pp.newPage()
    const r = await page.goto(`file://${dataDir}/token`).then(
      () => 'loaded',
      (e: Error) => e.message,
    )
    t.equal(r, `net::ERR_FILE_NOT_FOUND at file://${dataDir}/token`, "Chromium's own user cannot read the token")
    const health = (await (await fetch(`${daemon.url}/healthz`)).json()) as { warnings: string[] }
    t.same(health.warnings, [], 'nothing to warn of')
    const renderers: number[] = []
    for (const p of await descendants(child.pid!))
      if ((await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).includes('--type=renderer')) renderers.push(p)
    t.ok(renderers.length > 0, 'a renderer runs')
    for (const p of renderers)
      t.match(
        await readFile(`/proc/${p}/status`, 'utf8'),
        /^Uid:\s+65534\s[\s\S]*^Seccomp:\s+2$/m,
        `renderer ${p}: nobody, seccomp-bpf`,
      )
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8')
    t.match(status, /^Uid:\s+65534\s/m)
    t.match(status, /^NoNewPrivs:\s+1$/m)
  },
)

t.test('the env example documents every serve setting and nothing else', async t => {
  const text = await readFile(ENV_EXAMPLE, 'utf8')
  const lines = text.split('\n')
  for (const [flag, spec] of Object.entries(SERVE_OPTIONS)) {
    const doc = `# --${flag}: ${spec.help}${spec.default !== undefined ? ` (default: ${spec.default})` : ''}`
    const at = lines.indexOf(doc)
    t.ok(at >= 0, `--${flag} documented with its help and default`)
    // The variable follows its description (notes may sit in between), commented out with the default.
    const example = spec.default ?? (spec.type === 'boolean' ? '1' : '')
    const v = lines.slice(at + 1).find(l => l.startsWith(`#${envName(flag)}=`) || l.startsWith(`${envName(flag)}=`))
    t.equal(v, `#${envName(flag)}=${example}`, `${envName(flag)} example`)
  }
  const known = new Set(Object.keys(SERVE_OPTIONS).map(envName))
  const mentioned = new Set([...text.matchAll(/^#?(BROWSER_TELEMETRY_[A-Z_]+)=/gm)].map(m => m[1]!))
  t.same(
    [...mentioned].filter(n => !known.has(n)),
    [],
    'no unknown variables',
  )
  t.equal(mentioned.size, known.size)
})

t.test('nothing in the daemon writes to a notify socket', async t => {
  const { readdir } = await import('node:fs/promises')
  const files = (await readdir(join(root, 'src'), { recursive: true })).filter(f => f.endsWith('.ts'))
  const hits: string[] = []
  for (const f of files)
    if (/systemd-notify|NOTIFY_SOCKET|sd_notify/.test(await readFile(join(root, 'src', f), 'utf8'))) hits.push(f)
  t.same(hits, [], 'no sd_notify: readiness is ExecStartPost=wait-ready')
})
