// A daemon killed without a chance to clean up (kill -9, the OOM killer) takes its launched browser with
// it: the browser runs under PR_SET_PDEATHSIG (util-linux setpriv), so no orphan keeps the port and the
// profile. Real headless Chromium, launched by a child process that is then SIGKILLed.
import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { waitFor } from './helpers/http.js'

const alive = async (pid: number): Promise<boolean> => {
  // A killed child of init is reaped at once; a zombie ('Z') counts as gone.
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

t.test('SIGKILL of the launching process kills the launched browser', async t => {
  const script = `
    import { launchChromium } from './src/monitor/launch.ts'
    const b = await launchChromium()
    process.stdout.write(JSON.stringify({ pid: b.pid, port: b.port }) + '\\n')
    setInterval(() => {}, 1000)
  `
  const launcher = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => {
    launcher.kill('SIGKILL')
  })
  const [line] = (await once(createInterface({ input: launcher.stdout! }), 'line')) as [string]
  const { pid, port } = JSON.parse(line) as { pid: number; port: number }
  t.ok(await alive(pid), 'browser running')
  const cmd = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')
  t.match(cmd[0], /\/chromium$/, "setpriv exec'd the browser in place: the pid is the browser's")
  const version = await fetch(`http://127.0.0.1:${port}/json/version`)
  t.equal(version.status, 200, 'DevTools answers before the kill')

  launcher.kill('SIGKILL')
  await once(launcher, 'exit')
  await waitFor(async () => !(await alive(pid)), 10000, 'browser gone after its launcher was SIGKILLed')
  t.notOk(await alive(pid), 'no orphan browser')
  await t.rejects(fetch(`http://127.0.0.1:${port}/json/version`), 'the DevTools port is closed')
})
