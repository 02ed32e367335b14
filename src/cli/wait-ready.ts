// `browser-telemetry wait-ready`: exits 0 once a daemon answers GET /healthz at the `serve` listen
// address, 1 when none does within --timeout. The systemd unit runs it as ExecStartPost= so the
// unit becomes active only then, without a notify socket that every process in the unit (Chromium
// included) could write to. The API starts after the event log is open, so an answer means both.
import { OPTIONS } from '../config/options.js'
import { duration, pick } from '../config/resolve.js'
import { resolved } from './args.js'
import { defineCommand } from './command.js'
import { CliError, usageError } from './io.js'

const WAIT_READY_OPTIONS = {
  ...pick(OPTIONS, ['listen'], {
    listen: { arg: 'HOST:PORT', help: "The daemon's listen address, as `serve` reads it" },
  }),
  timeout: duration({ default: '50s', env: '', arg: 'DURATION', help: 'Give up after this long' }),
}

/** The URL to probe for a listen address: a wildcard host is reached on loopback. */
export function healthUrlOf(listen: { host: string; port: number }): string {
  const h = listen.host.replace(/^\[|\]$/g, '')
  const host = h === '0.0.0.0' || h === '' ? '127.0.0.1' : h === '::' ? '[::1]' : h.includes(':') ? `[${h}]` : h
  return `http://${host}:${listen.port}/healthz`
}

/** A /healthz body of this daemon (200 ok or 503 degraded both mean it is up): its browser id. */
async function daemonAnswer(url: string, signal: AbortSignal): Promise<string | undefined> {
  try {
    const res = await fetch(url, { signal, headers: { accept: 'application/json' } })
    const body = (await res.json()) as { browser_id?: unknown; status?: unknown }
    if ((res.status === 200 || res.status === 503) && typeof body.browser_id === 'string') return body.browser_id
  } catch {
    /* not listening yet, or not the daemon */
  }
  return undefined
}

export const waitReadyCommand = defineCommand(
  {
    name: 'wait-ready',
    summary:
      'Wait until the daemon at the serve listen address answers /healthz (the systemd unit runs it as ExecStartPost=).',
    connection: false,
    options: WAIT_READY_OPTIONS,
    notes: [
      'Exit 0 once it answers (event log open, API listening); 1 after --timeout. A wildcard listen host is probed on loopback.',
      'Example:',
      '  BROWSER_TELEMETRY_LISTEN=127.0.0.1:10222 browser-telemetry wait-ready --timeout 30s',
    ],
  },
  async ({ values }, _client, io) => {
    const o = resolved(WAIT_READY_OPTIONS, values, io.env)
    const listen = o.value('listen')
    const timeoutMs = o.value('timeout')
    if (listen.port === 0) throw usageError('--listen: port 0 has no fixed address to wait on')
    const url = healthUrlOf(listen)
    const deadline = Date.now() + timeoutMs
    let pauseMs = 50
    for (;;) {
      const left = deadline - Date.now()
      if (left <= 0) break
      const attempt = AbortSignal.any([AbortSignal.timeout(Math.min(left, 2000)), ...(io.signal ? [io.signal] : [])])
      const browserId = await daemonAnswer(url, attempt)
      if (browserId !== undefined) {
        io.stdout.write(`browser-telemetry wait-ready: ${url} answers (browser ${browserId})\n`)
        return 0
      }
      if (io.signal?.aborted) return 1
      await new Promise(r => setTimeout(r, Math.min(pauseMs, Math.max(0, deadline - Date.now()))))
      pauseMs = Math.min(pauseMs * 2, 500)
    }
    throw new CliError(`no daemon answered ${url} within ${timeoutMs} ms`)
  },
)
