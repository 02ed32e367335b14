// `browser-telemetry open`: prints the viewer URL with the token and browser id in the fragment,
// refuses a token that cannot read, and --launch runs xdg-open (a stand-in on PATH here) on a
// single-use redirect, never on the token itself; the redirect answers its own user, once.
import t from 'tap'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { serveRedirectOnce } from '../src/cli/redirect-once.js'
import { viewerUrl } from '../src/cli/open.js'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { BROWSER_ID, TOKEN, startApi } from './helpers/api.js'
import { tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'

function capture(env: NodeJS.ProcessEnv) {
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
      write: c => {
        err += String(c)
        return true
      },
    },
    env,
  }
  return { io, out: () => out, err: () => err }
}

t.test('open prints, checks and launches the viewer URL', async t => {
  const api = await startApi(t, { tokens: { 'pub-only': ['publish'] } })
  const dir = await tempDir(t, 'bt-open-')
  const open = clientCommands.open!
  const want = `${api.url}/viewer/#token=${TOKEN}&browser=${BROWSER_ID}`

  const c = capture({ PATH: dir })
  t.equal(await open.run(['--url', api.url, '--token', TOKEN], c.io), 0, c.err())
  t.equal(c.out(), `${want}\n`, 'browser id asked from the daemon')

  const odd = capture({ PATH: dir })
  t.equal(await open.run(['--url', api.url, '--token', 'a&b=c #d', '--browser-id', BROWSER_ID], odd.io), 1)
  t.match(odd.err(), /^browser-telemetry open: 401 unauthorized/, 'a token the daemon refuses is reported, not printed')
  t.equal(odd.out(), '')

  const weak = capture({ PATH: dir })
  t.equal(await open.run(['--url', api.url, '--token', 'pub-only'], weak.io), 1)
  t.match(weak.err(), /^browser-telemetry open: 403 forbidden/)

  const none = capture({ PATH: dir, BROWSER_TELEMETRY_DATA_DIR: dir })
  t.equal(await open.run(['--url', api.url], none.io), 1)
  t.match(none.err(), /no token/)

  const noOpener = capture({ PATH: dir })
  t.equal(await open.run(['--url', api.url, '--token', TOKEN, '--launch'], noOpener.io), 0)
  t.equal(noOpener.out(), `${want}\n`)
  t.match(noOpener.err(), /xdg-open is not installed/)

  // The stand-in records its argv, follows the link like a browser would (headers kept) and exits.
  const record = join(dir, 'argv')
  const headers = join(dir, 'headers')
  // Written once curl is done: open returns when the link was followed, which can be before curl
  // wrote the answer's headers.
  const done = join(dir, 'done')
  await writeFile(
    join(dir, 'xdg-open'),
    `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\ncurl -s -o /dev/null -D '${headers}' "$1"\ntouch '${done}'\n`,
  )
  await chmod(join(dir, 'xdg-open'), 0o755)
  // A real daemon, so that following the link reaches its viewer.
  const daemon = await startDaemon(
    parseServeConfig(['--listen', '127.0.0.1:0', '--data-dir', await tempDir(t), '--no-browser'], {}),
    { logger: silentLogger, announce: () => {}, showNewToken: false },
  )
  t.teardown(() => daemon.close())
  const token = daemon.generatedToken!.token
  const viewerOf = viewerUrl(daemon.url, token, daemon.browserId)
  const launched = capture({ PATH: `${dir}:/usr/bin:/bin` })
  t.equal(await open.run(['--url', daemon.url, '--token', token, '--launch'], launched.io), 0, launched.err())
  t.equal(launched.out(), `${viewerOf}\n`, 'the URL is still printed for the user')
  const argv = await readFile(record, 'utf8')
  t.notOk(argv.includes(token), "the token is not on xdg-open's command line")
  t.match(argv, /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}\n$/, 'one argument: the single-use link')
  await waitFor(() => existsSync(done), 10_000, 'the stand-in finished following the link')
  const answer = await readFile(headers, 'utf8')
  t.match(answer, /^HTTP\/1\.1 303 See Other\r\n/)
  t.equal(
    /^location: (.*)\r$/im.exec(answer)?.[1],
    viewerOf,
    'the link redirects to the viewer with the token in the fragment',
  )
  const viewer = await fetch(viewerOf)
  t.equal(viewer.status, 200, 'following it reaches the viewer')
  t.match(viewer.headers.get('content-type'), /^text\/html/)
  const again = await fetch(argv.trim()).then(
    r => r.status,
    (e: Error & { cause?: { code?: string } }) => e.cause?.code,
  )
  t.equal(again, 'ECONNREFUSED', 'the link is gone once followed')

  const failing = join(dir, 'fail')
  await mkdir(failing)
  await writeFile(join(failing, 'xdg-open'), '#!/bin/sh\nexit 3\n')
  await chmod(join(failing, 'xdg-open'), 0o755)
  const broken = capture({ PATH: failing })
  t.equal(await open.run(['--url', api.url, '--token', TOKEN, '--launch'], broken.io), 1)
  t.equal(
    broken.err(),
    'browser-telemetry open: xdg-open exited with 3; open the URL above in a browser\n',
    'a failed xdg-open ends the wait',
  )

  const help = capture({})
  t.equal(await open.run(['--help'], help.io), 0)
  t.match(help.out(), /--launch/)
})

t.test('the single-use redirect: 303 once to its own user, then 410; other paths 404', async t => {
  const link = await serveRedirectOnce('http://127.0.0.1:1/viewer/#token=x')
  t.teardown(() => link.close())
  const base = link.url.slice(0, link.url.lastIndexOf('/'))
  t.equal((await fetch(`${base}/`, { redirect: 'manual' })).status, 404)
  t.equal((await fetch(`${base}/nope`, { redirect: 'manual' })).status, 404)
  t.equal((await fetch(link.url, { method: 'POST', redirect: 'manual' })).status, 405)
  const first = await fetch(link.url, { redirect: 'manual' })
  t.same([first.status, first.headers.get('location')], [303, 'http://127.0.0.1:1/viewer/#token=x'])
  await link.followed
  const second = await fetch(link.url, { redirect: 'manual' })
  t.same([second.status, await second.json()], [410, { code: 'link_used', message: 'this link was used already' }])
})

t.test(
  "another user's request is refused and does not use the link up",
  { skip: process.getuid?.() === 0 ? false : 'needs root to ask as another user' },
  async t => {
    const link = await serveRedirectOnce('http://127.0.0.1:1/viewer/#token=x')
    t.teardown(() => link.close())
    const asNobody = await new Promise<string>(resolve => {
      execFile(
        '/usr/bin/setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', 'curl', '-s', '-w', ' %{http_code}', link.url],
        (_err, stdout) => resolve(stdout),
      )
    })
    t.equal(asNobody, '{"code":"forbidden","message":"this link answers only the user who made it"} 403')
    const mine = await fetch(link.url, { redirect: 'manual' })
    t.equal(mine.status, 303, 'still there for its own user')
  },
)
