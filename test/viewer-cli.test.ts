// `browser-telemetry open`: prints the viewer URL with the token and browser id in the fragment,
// refuses a token that cannot read, and --launch runs xdg-open (a stand-in on PATH here).
import t from 'tap'
import { chmod, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { BROWSER_ID, TOKEN, startApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

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

  const record = join(dir, 'opened')
  await writeFile(join(dir, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${record}'\n`)
  await chmod(join(dir, 'xdg-open'), 0o755)
  const launched = capture({ PATH: dir })
  t.equal(await open.run(['--url', api.url, '--token', TOKEN, '--launch'], launched.io), 0, launched.err())
  t.equal(await waitFor(async () => readFile(record, 'utf8').catch(() => ''), 5000, 'xdg-open to run'), want)

  const help = capture({})
  t.equal(await open.run(['--help'], help.io), 0)
  t.match(help.out(), /--launch/)
})
