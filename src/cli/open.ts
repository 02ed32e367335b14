// `browser-telemetry open`: the session viewer's URL with the token in the fragment (the fragment
// never reaches the server or its logs; the page moves the token into sessionStorage and strips it
// from the address bar). --launch also opens it with xdg-open when that is installed, through a
// single-use redirect: xdg-open's argv, which every local user can read, never holds the token.
import { spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { defineCommand } from './command.js'
import { CliError, type CliIO } from './io.js'
import { serveRedirectOnce } from './redirect-once.js'

/** How long --launch waits for the browser to follow its link. */
export const LAUNCH_WAIT_MS = 120_000

/** The viewer URL for a daemon base URL, token and browser id. */
export function viewerUrl(base: string, token: string, browserId: string): string {
  return `${base}/viewer/#${new URLSearchParams({ token, browser: browserId }).toString()}`
}

/** First executable `name` on PATH, or undefined. */
export function findOnPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue
    const file = join(dir, name)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      /* next */
    }
  }
  return undefined
}

/** Opens `url` with `opener` by way of a single-use redirect; resolves once the browser followed it. */
async function launchWithoutToken(opener: string, url: string, io: CliIO): Promise<void> {
  const link = await serveRedirectOnce(url)
  try {
    const child = spawn(opener, [link.url], { detached: true, stdio: 'ignore', env: io.env })
    child.unref()
    const outcome = await new Promise<string | undefined>(resolve => {
      void link.followed.then(() => resolve(undefined))
      child.once('error', err => resolve(`cannot run xdg-open: ${err.message}`))
      // xdg-open may stay with the browser it started, so only a failed exit ends the wait.
      child.once('exit', code => {
        if (code !== 0) resolve(`xdg-open exited with ${code ?? 'a signal'}; open the URL above in a browser`)
      })
      const timer = setTimeout(
        () => resolve(`no browser followed the link within ${LAUNCH_WAIT_MS / 1000} s; open the URL above`),
        LAUNCH_WAIT_MS,
      )
      timer.unref()
      void link.followed.then(() => clearTimeout(timer))
      io.signal?.addEventListener('abort', () => resolve(undefined), { once: true })
    })
    if (outcome !== undefined) throw new CliError(outcome)
  } finally {
    await link.close()
  }
}

export const openCommand = defineCommand(
  {
    name: 'open',
    summary: 'Print the session viewer URL (token in the fragment); --launch opens it in the desktop browser.',
    options: {
      launch: {
        type: 'boolean',
        help: 'Also open it with xdg-open (when installed), through a single-use link on 127.0.0.1 that keeps the token off its command line',
      },
    },
    notes: [
      'The URL carries the token: treat it like the token. The page keeps it in the tab only (sessionStorage).',
      'Example:',
      '  browser-telemetry open --launch',
    ],
  },
  async ({ values }, client, io) => {
    const token = client.conn.token
    if (!token)
      throw new CliError("no token: pass --token, set BROWSER_TELEMETRY_TOKEN, or run next to the daemon's data dir")
    const browserId = await client.browserId()
    // Fails early with the daemon's own message when the token cannot read telemetry.
    await client.request('GET', await client.browserPath('/telemetry/events'), { query: { order: 'desc', limit: 1 } })
    const url = viewerUrl(client.conn.url, token, browserId)
    io.stdout.write(url + '\n')
    if (values.launch === true) {
      const opener = findOnPath('xdg-open', io.env.PATH)
      if (!opener) {
        io.stderr.write('browser-telemetry open: xdg-open is not installed; open the URL above in a browser\n')
        return 0
      }
      await launchWithoutToken(opener, url, io)
    }
    return 0
  },
)
