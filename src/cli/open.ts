// `browser-telemetry open`: the session viewer's URL with the token in the fragment (the fragment
// never reaches the server or its logs; the page moves the token into sessionStorage and strips it
// from the address bar). --launch also opens it with xdg-open when that is installed.
import { spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { defineCommand } from './command.js'
import { CliError } from './io.js'

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

export const openCommand = defineCommand(
  {
    name: 'open',
    summary: 'Print the session viewer URL (token in the fragment); --launch opens it in the desktop browser.',
    options: {
      launch: { type: 'boolean', help: 'Also open the URL with xdg-open (when installed)' },
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
      const child = spawn(opener, [url], { detached: true, stdio: 'ignore', env: io.env })
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve)
        child.once('error', reject)
      })
      child.unref()
    }
    return 0
  },
)
