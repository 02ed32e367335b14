// Least privilege of launch mode: a root daemon runs Chromium as an unprivileged user with its own
// profile, sandboxed where the kernel allows; a page or a CDP client driving that browser cannot read
// the daemon's data dir (token, log) through file://. Real daemon, real headless Chromium.
import t, { type Test } from 'tap'
import { chmod, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import puppeteer from 'puppeteer-core'
import { WebSocket } from 'ws'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon, type DaemonHandle } from '../src/main.js'
import { createLogger } from '../src/log.js'
import { Writable } from 'node:stream'
import { Monitor, NOBODY, resolveChromiumUser, type ChromiumUser } from '../src/monitor/index.js'
import { sandboxFailureReason, trySandbox } from '../src/monitor/launch.js'
import { silentLogger } from '../src/log.js'
import { waitFor } from './helpers/http.js'
import { fakeAccepted, tempDir } from './helpers/store.js'
import { descendants, processesNaming } from './helpers/procs.js'

const isRoot = process.getuid?.() === 0
const NEEDS_ROOT = 'needs root: only a root daemon switches Chromium to another user (CI runs as root)'

/** Uid, gid (real ids) and supplementary groups of a process, from /proc/<pid>/status. */
async function procIds(pid: number): Promise<{ uid: number; gid: number; groups: string; seccomp: string }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const field = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? ''
  return {
    uid: Number(field('Uid').split(/\s+/)[0]),
    gid: Number(field('Gid').split(/\s+/)[0]),
    groups: field('Groups'),
    seccomp: field('Seccomp'),
  }
}

const cmdline = async (pid: number) => (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function startLaunchDaemon(
  t: Test,
  dir: string,
  extra: string[] = [],
): Promise<{ d: DaemonHandle; logs: string[] }> {
  const logs: string[] = []
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk))
      cb()
    },
  })
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dir,
      '--proxy-listen',
      '127.0.0.1:0',
      '--proxy-auth',
      '--categories',
      'page',
      ...extra,
    ],
    {},
  )
  const d = await startDaemon(config, {
    logger: createLogger('info', undefined, sink),
    announce: () => {},
    showNewToken: false,
  })
  t.teardown(() => d.close())
  return { d, logs }
}

t.test(
  'resolveChromiumUser: names and uids from passwd, nobody falls back to 65534, unknown names refused',
  async t => {
    const passwd =
      'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nbrowser:x:998:997::/home/b:/bin/false\nbroken:x:abc:1::/:/bin/false\n'
    t.same(resolveChromiumUser('browser', passwd), { name: 'browser', uid: 998, gid: 997 })
    t.same(resolveChromiumUser('998', passwd), { name: 'browser', uid: 998, gid: 997 })
    t.same(resolveChromiumUser('nobody', passwd), { name: 'nobody', uid: 65534, gid: 65534 })
    t.same(resolveChromiumUser('nobody', 'root:x:0:0::/:/bin/sh\n'), NOBODY, 'no entry for nobody: 65534:65534')
    t.same(resolveChromiumUser('4242', passwd), { name: '4242', uid: 4242, gid: 4242 }, 'a bare uid needs no entry')
    t.throws(() => resolveChromiumUser('broken', passwd), {
      name: 'ChromiumUserError',
      message: /^--chromium-user: no user "broken" in \/etc\/passwd/,
    })
    t.throws(() => resolveChromiumUser('ghost', passwd), {
      message:
        '--chromium-user: no user "ghost" in /etc/passwd (create it, e.g. useradd --system --no-create-home ghost, or pass an existing user)',
    })
  },
)

t.test(
  'sandbox decision: tried unless Chromium itself would run as root; the reason line of a failed sandbox',
  async t => {
    t.equal(trySandbox({}, 1000), true, 'a non-root daemon launches without --no-sandbox')
    t.equal(trySandbox({}, 0), false, 'root without a user switch: Chromium refuses the sandbox as root')
    t.equal(trySandbox({ user: NOBODY }, 0), true, 'root handing Chromium to nobody')
    t.equal(trySandbox({ user: { name: 'root', uid: 0, gid: 0 } }, 0), false)
    t.equal(trySandbox({ user: NOBODY, sandbox: 'off' }, 0), false, 'off after a failed probe')
    t.equal(trySandbox({ user: NOBODY, extraArgs: ['--no-sandbox'] }, 0), false, 'the operator asked for --no-sandbox')
    const stderr =
      '[1:1:1123/1.1:ERROR:dbus/bus.cc:405] Failed to connect to the bus\n' +
      '[20:20:1123/132858.055913:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! If you are running on Ubuntu 23.10+ see the docs.\n'
    t.equal(sandboxFailureReason(stderr), 'No usable sandbox! If you are running on Ubuntu 23.10+ see the docs.')
    t.equal(
      sandboxFailureReason(
        '[1:1:FATAL:x.cc] Failed to move to new namespace: PID namespaces supported, but failed: errno = Operation not permitted',
      ),
      'Failed to move to new namespace: PID namespaces supported, but failed: errno = Operation not permitted',
    )
    t.equal(
      sandboxFailureReason('[1:1:ERROR:x.cc] bind() failed: Address already in use'),
      undefined,
      'other startup failures are not retried',
    )
    t.equal(sandboxFailureReason('No usable sandbox! ' + 'x'.repeat(1000))!.length, 300, 'the reason is bounded')
  },
)

t.test(
  'a root daemon runs Chromium as nobody, sandboxed, in its own 0700 profile; file://<data-dir>/token gives nothing',
  { skip: isRoot ? false : NEEDS_ROOT },
  async t => {
    t.setTimeout(45_000)
    const dir = await tempDir(t)
    process.env.BROWSER_TELEMETRY_TEST_SECRET = 'daemon-env-secret'
    t.teardown(() => {
      delete process.env.BROWSER_TELEMETRY_TEST_SECRET
    })
    const { d } = await startLaunchDaemon(t, dir)
    const browser = d.monitor!.launched!
    const token = await readFile(join(dir, 'token'), 'utf8')

    t.same(
      await procIds(browser.pid).then(({ uid, gid, groups }) => ({ uid, gid, groups })),
      { uid: 65534, gid: 65534, groups: '' },
      'browser process: nobody, no supplementary groups',
    )
    // Machines of this project (kernel with unprivileged user namespaces, no setuid chrome-sandbox)
    // run the namespace sandbox; the fallback without it has a test of its own below.
    const args = await cmdline(browser.pid)
    t.equal(browser.sandbox.enabled, true, `sandboxed (fallback reason: ${browser.sandbox.fallbackReason ?? 'none'})`)
    t.notOk(args.includes('--no-sandbox'), 'launched without --no-sandbox')
    // Renderers: nobody, seccomp-bpf filter on (mode 2).
    const renderers = await waitFor(
      async () => {
        const found: number[] = []
        // A zygote child rewrites its argv into one string: search the text.
        for (const p of await descendants(browser.pid))
          if ((await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).includes('--type=renderer')) found.push(p)
        return found.length > 0 && found
      },
      20_000,
      'a renderer process',
    )
    const ids = await procIds(renderers[0]!)
    t.same({ uid: ids.uid, seccomp: ids.seccomp }, { uid: 65534, seccomp: '2' }, 'renderer: nobody under seccomp-bpf')

    // Its own profile, outside the data dir, owned by nobody, 0700; the data dir stays root 0700.
    const profile = await stat(browser.userDataDir)
    t.same({ uid: profile.uid, mode: profile.mode & 0o777 }, { uid: 65534, mode: 0o700 })
    t.notOk(browser.userDataDir.startsWith(dir), 'profile outside the data dir')
    const data = await stat(dir)
    t.same({ uid: data.uid, mode: data.mode & 0o777 }, { uid: 0, mode: 0o700 })
    t.equal((await stat(join(dir, 'token'))).mode & 0o777, 0o600)

    // The CDP proxy still wants the cdp token (--proxy-auth) and refuses Origin-bearing upgrades.
    const proxy = `ws://127.0.0.1:${d.proxy!.address().port}/devtools/browser`
    const upgradeStatus = (url: string, headers: Record<string, string> = {}) =>
      new Promise<string>(resolve => {
        const ws = new WebSocket(url, { headers })
        ws.once('open', () => {
          ws.close()
          resolve('open')
        })
        ws.once('error', err => resolve(err.message))
      })
    t.equal(await upgradeStatus(proxy), 'Unexpected server response: 401')
    t.equal(
      await upgradeStatus(`${proxy}?token=${token}`, { origin: 'https://evil.example' }),
      'Unexpected server response: 403',
    )

    // Drive the browser as an automation client would: through the proxy with the cdp token.
    const pp = await puppeteer.connect({ browserWSEndpoint: `${proxy}?token=${token}`, defaultViewport: null })
    t.teardown(() => pp.disconnect())
    const page = await pp.newPage()
    const attempt = async (url: string, timeout = 30_000) => {
      const err = await page.goto(url, { timeout }).then(
        () => undefined,
        (e: Error) => e.message,
      )
      const body = await page.evaluate(() => document.body?.innerText ?? '').catch(() => '')
      return { err, body }
    }
    // Control: a file nobody may read is shown, so a refusal below is the permission, not file:// itself.
    const open = await mkdtemp(join(tmpdir(), 'bt-open-'))
    t.teardown(() => rm(open, { recursive: true, force: true }))
    await chmod(open, 0o755)
    await writeFile(join(open, 'readable.txt'), 'READABLE-BY-NOBODY', { mode: 0o644 })
    const control = await attempt(`file://${open}/readable.txt`)
    t.equal(control.err, undefined)
    t.match(control.body, 'READABLE-BY-NOBODY')

    const openListing = await attempt(`file://${open}/`)
    t.match(openListing.body, 'readable.txt', 'control: a directory nobody may read is listed')

    for (const file of ['token', 'browser-id', 'events/LOG', 'events/CURRENT']) {
      const r = await attempt(`file://${dir}/${file}`)
      // Chromium reports the EACCES of a file it cannot reach as not found.
      t.equal(r.err, `net::ERR_FILE_NOT_FOUND at file://${dir}/${file}`, `file://<data-dir>/${file} is refused`)
      t.notMatch(r.body, token.trim(), `no token in the page of ${file}`)
    }
    // The data dir's own listing. Chromium's directory lister does not always finish a directory it
    // may not open (once, under load, no load event within 30 s), so the page is read whatever its load
    // state, from a blank one: what matters is that it lists nothing (a root browser lists all three).
    await page.goto('about:blank')
    const listing = await attempt(`file://${dir}/`, 10_000)
    t.notMatch(
      listing.body,
      /token|browser-id|events/,
      `the data dir's listing shows none of its entries (${listing.err ?? 'loaded'})`,
    )

    // Secrets in the daemon's environment do not reach Chromium's (reduced to locale/path, its HOME).
    const environ = (await readFile(`/proc/${browser.pid}/environ`, 'utf8')).split('\0')
    t.notOk(
      environ.some(kv => kv.startsWith('BROWSER_TELEMETRY_')),
      'no BROWSER_TELEMETRY_* variable',
    )
    t.ok(environ.includes(`HOME=${join(browser.userDataDir, '..', 'home')}`), 'HOME is its own')
    t.equal(
      await readlink(`/proc/${browser.pid}/cwd`),
      join(browser.userDataDir, '..', 'home'),
      'and so is its working directory',
    )
    await page.close()
  },
)

t.test(
  'relaunch after a crash keeps the user; shutdown kills and reaps it and removes its profile',
  { skip: isRoot ? false : NEEDS_ROOT },
  async t => {
    t.setTimeout(45_000)
    const dir = await tempDir(t)
    const { d } = await startLaunchDaemon(t, dir, ['--reconnect-initial-backoff', '50ms'])
    const first = d.monitor!.launched!
    const firstBase = join(first.userDataDir, '..')
    const collecting = () =>
      new Promise<void>(resolve => {
        const l = (s: string) => {
          if (s === 'collecting') {
            d.monitor!.events.off('state', l)
            resolve()
          }
        }
        d.monitor!.events.on('state', l)
      })
    const back = collecting()
    process.kill(first.pid, 'SIGKILL')
    await back
    const second = d.monitor!.launched!
    t.not(second.pid, first.pid)
    t.same(
      await procIds(second.pid).then(({ uid, gid }) => ({ uid, gid })),
      { uid: 65534, gid: 65534 },
      'relaunched as nobody',
    )
    t.equal(second.sandbox.enabled, first.sandbox.enabled, 'same sandbox decision')
    t.equal(alive(first.pid), false, 'the crashed browser was reaped')
    await t.rejects(stat(firstBase), { code: 'ENOENT' }, "the crashed browser's profile and HOME are removed")
    const secondBase = join(second.userDataDir, '..')
    t.equal((await stat(secondBase)).uid, 65534)

    await d.close()
    t.equal(alive(second.pid), false, 'shutdown ended the browser')
    t.equal(second.process.exitCode !== null || second.process.signalCode !== null, true, 'and reaped it')
    t.same(await processesNaming(second.userDataDir), [], 'and its helpers (crashpad handler, zygotes) ended')
    await t.rejects(stat(secondBase), { code: 'ENOENT' }, 'its profile and HOME are removed')
  },
)

t.test('--chromium-user naming a user that does not exist: the daemon refuses to start', async t => {
  const dir = await tempDir(t)
  const config = parseServeConfig(
    ['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', 'off', '--chromium-user', 'bt-no-such-user'],
    {},
  )
  await t.rejects(startDaemon(config, { logger: silentLogger, announce: () => {} }), {
    message:
      '--chromium-user: no user "bt-no-such-user" in /etc/passwd (create it, e.g. useradd --system --no-create-home bt-no-such-user, or pass an existing user)',
  })
  t.equal(
    parseServeConfig([], { BROWSER_TELEMETRY_CHROMIUM_USER: 'browser' }).browser.chromiumUser,
    'browser',
    'env twin',
  )
  t.equal(parseServeConfig([], {}).browser.chromiumUser, 'nobody', 'default')
})

t.test(
  'a sandbox that cannot start: one warn line with the reason, --no-sandbox, and no second probe on relaunch',
  async t => {
    t.setTimeout(45_000)
    // A wrapper that fails like Chromium on a kernel without user namespaces unless --no-sandbox is given.
    const bin = await mkdtemp(join(tmpdir(), 'bt-fake-chromium-'))
    t.teardown(() => rm(bin, { recursive: true, force: true }))
    await chmod(bin, 0o755)
    const wrapper = join(bin, 'chromium')
    await writeFile(
      wrapper,
      `#!/bin/sh
for a in "$@"; do [ "$a" = --no-sandbox ] && exec /usr/bin/chromium "$@"; done
echo '[7:7:1123/000000.000000:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! Update your kernel or see https://chromium.googlesource.com/chromium/src/+/main/docs/linux/suid_sandbox_development.md' >&2
exit 1
`,
      { mode: 0o755 },
    )
    const user: ChromiumUser | undefined = isRoot ? NOBODY : undefined
    const lines: string[] = []
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk))
        cb()
      },
    })
    const monitor = new Monitor({
      launch: { chromiumPath: wrapper, user },
      emit: fakeAccepted,
      logger: createLogger('info', undefined, sink),
      reconnect: { initialBackoffMs: 20 },
    })
    t.teardown(() => monitor.stop())
    await monitor.start()
    const first = monitor.launched!
    t.same(first.sandbox, {
      enabled: false,
      fallbackReason:
        'No usable sandbox! Update your kernel or see https://chromium.googlesource.com/chromium/src/+/main/docs/linux/suid_sandbox_development.md',
    })
    t.ok((await cmdline(first.pid)).includes('--no-sandbox'))
    const back = new Promise<void>(resolve =>
      monitor.events.on('state', s => {
        if (s === 'collecting') resolve()
      }),
    )
    process.kill(first.pid, 'SIGKILL')
    await back
    t.same(
      monitor.launched!.sandbox,
      { enabled: false },
      'relaunched straight with --no-sandbox (no fallback, so no probe)',
    )
    const warns = lines
      .map(l => JSON.parse(l) as { level: number; msg: string; reason?: string })
      .filter(l => l.level === 40 && l.msg.includes('sandbox'))
    t.same(
      warns.map(w => [w.msg, w.reason]),
      [['Chromium sandbox cannot start here; running Chromium with --no-sandbox', first.sandbox.fallbackReason]],
    )
  },
)
