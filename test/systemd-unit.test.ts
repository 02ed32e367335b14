import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { readFile, writeFile, chmod } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVE_OPTIONS, envName } from '../src/config/config.js'
import { notifyReady, notifyStopping, sdNotify } from '../src/daemon/systemd-notify.js'
import { tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const UNIT = join(root, 'systemd/browser-telemetry.service')
const ENV_EXAMPLE = join(root, 'systemd/browser-telemetry.env.example')
const has = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise(resolve => {
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => {
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

t.test('the unit runs serve unprivileged, with state, restart, env file and notify readiness', async t => {
  const d = directives(await readFile(UNIT, 'utf8'))
  const one = (k: string) => d.get(k)?.at(-1)
  t.match(one('ExecStart'), /browser-telemetry serve$/)
  t.equal(one('Type'), 'notify')
  t.equal(one('NotifyAccess'), 'all', 'systemd-notify is a child process')
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
  'systemd-analyze verify is clean and the security exposure is <= 3.0',
  { skip: has('systemd-analyze') ? false : 'systemd-analyze not installed' },
  async t => {
    const verify = await run('systemd-analyze', ['verify', UNIT])
    t.equal(verify.code, 0, verify.stderr)
    t.equal(verify.stderr.trim(), '', 'no warnings')
    const sec = await run('systemd-analyze', ['security', '--offline=yes', UNIT])
    const m = /Overall exposure level for browser-telemetry\.service: (\d+(?:\.\d+)?)/.exec(sec.stdout)
    t.ok(m, `score printed: ${sec.stdout.slice(-300)} ${sec.stderr}`)
    const score = Number(m![1])
    t.ok(score <= 3.0, `exposure ${score} <= 3.0`)
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

t.test('sd_notify is a no-op outside systemd and runs systemd-notify under it', async t => {
  const dir = await tempDir(t)
  const log = join(dir, 'calls')
  const fake = join(dir, 'fake-notify')
  await writeFile(fake, `#!/bin/sh\necho "$NOTIFY_SOCKET $*" >> ${log}\n`)
  await chmod(fake, 0o755)
  t.equal(await notifyReady('x', { env: {}, bin: fake }), false)
  t.equal(
    await notifyReady('store open, API on 127.0.0.1:1', { env: { NOTIFY_SOCKET: '/run/x.sock' }, bin: fake }),
    true,
  )
  t.equal(await notifyStopping('bye', { env: { NOTIFY_SOCKET: '/run/x.sock' }, bin: fake }), true)
  t.same((await readFile(log, 'utf8')).trim().split('\n'), [
    `/run/x.sock READY=1 STATUS=store open, API on 127.0.0.1:1 MAINPID=${process.pid}`,
    '/run/x.sock STOPPING=1 STATUS=bye',
  ])
  t.equal(
    await sdNotify({ READY: '1' }, { env: { NOTIFY_SOCKET: '/run/x.sock' }, bin: join(dir, 'missing') }),
    false,
    'a failure is reported, not thrown',
  )
})

t.test(
  'the real systemd-notify delivers READY=1 to $NOTIFY_SOCKET',
  { skip: has('systemd-notify') && has('python3') ? false : 'needs systemd-notify and python3' },
  async t => {
    const dir = await tempDir(t)
    const sock = join(dir, 'notify.sock')
    // A stand-in for PID 1: receives one datagram, answers the barrier by closing the passed fd.
    const listener = `
import socket, os, array, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); s.settimeout(20)
print('bound', flush=True)
got = []
while True:
    msg, anc, flags, addr = s.recvmsg(4096, socket.CMSG_SPACE(16))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds = array.array('i'); fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
            for fd in fds: os.close(fd)
    text = msg.decode()
    if text != 'BARRIER=1': got.append(text)
    if text == 'BARRIER=1': break
print(repr(got), flush=True)
`
    const { spawn } = await import('node:child_process')
    const py = spawn('python3', ['-c', listener, sock], { stdio: ['ignore', 'pipe', 'inherit'] })
    // Listened for now: the listener exits as soon as systemd-notify's barrier arrives, which can be
    // before notifyReady's answer reaches this test.
    const exited = new Promise(r => py.once('close', r)) // after its output is read too
    t.teardown(() => {
      py.kill()
    })
    let out = ''
    py.stdout.on('data', (c: Buffer) => {
      out += c.toString()
    })
    await waitFor(() => out.includes('bound'), 10_000, 'listener bound')
    t.equal(await notifyReady('ready', { env: { ...process.env, NOTIFY_SOCKET: sock } }), true)
    await exited
    t.match(out, `READY=1\\nSTATUS=ready\\nMAINPID=${process.pid}`)
  },
)
