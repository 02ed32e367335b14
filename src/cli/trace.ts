// `browser-telemetry trace`: saves the Playwright trace of a time window (GET .../telemetry/trace.zip)
// for `npx playwright show-trace` or https://trace.playwright.dev, whole or not at all, with
// progress on the terminal; or, with --link, asks for a signed link to it (POST .../trace-links)
// that opens in the hosted viewer without the token.
import { stringOption } from './args.js'
import { saveZipDownload } from './bundle.js'
import { defineCommand } from './command.js'
import { CliError, writeOut } from './io.js'
import { WINDOW_OPTIONS } from './read.js'

export const traceCommand = defineCommand(
  {
    name: 'trace',
    summary:
      "Save the Playwright trace of a time window (the agent's actions, film strip, network, console, errors) for the Playwright trace viewer, or print a signed link that opens it there.",
    options: {
      ...WINDOW_OPTIONS,
      target: { type: 'string', arg: 'ID', help: "Only this target's pages, requests, console and frames" },
      output: {
        type: 'string',
        short: 'o',
        arg: 'FILE',
        help: 'Write the zip here (default: the name the daemon offers, in this directory; - for standard output)',
      },
      link: {
        type: 'boolean',
        help: 'Print a signed, expiring link to the trace and its trace.playwright.dev URL instead of downloading',
      },
      ttl: {
        type: 'string',
        arg: 'SECONDS',
        help: 'With --link: how long the link works (default 900, at most 3600)',
      },
    },
    notes: [
      'The file appears only when the download is complete; a failed download leaves nothing behind.',
      'Examples:',
      '  browser-telemetry trace --since 30m -o session.zip && npx playwright show-trace session.zip',
      '  browser-telemetry trace --since 10m --link     # the viewer URL opens in any browser until it expires',
    ],
  },
  async ({ values }, client, io) => {
    const since = stringOption(values.since)
    const until = stringOption(values.until)
    const target = stringOption(values.target)
    if (values.link === true) {
      const ttlText = stringOption(values.ttl)
      const ttl = ttlText === undefined ? undefined : Number(ttlText)
      if (ttl !== undefined && !(Number.isInteger(ttl) && ttl > 0))
        throw new CliError(`--ttl: expected a whole number of seconds, got ${JSON.stringify(ttlText)}`)
      const link = await client.json<{ url: string; viewer_url: string; expires_at: string }>(
        'POST',
        await client.browserPath('/telemetry/trace-links'),
        {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            ...(since !== undefined ? { since } : {}),
            ...(until !== undefined ? { until } : {}),
            ...(target !== undefined ? { target_id: target } : {}),
            ...(ttl !== undefined ? { ttl_seconds: ttl } : {}),
          }),
          signal: io.signal,
        },
      )
      await writeOut(io.stdout, `${link.viewer_url}\n`)
      await writeOut(io.stderr, `trace: ${link.url}\nexpires at ${link.expires_at}\n`)
      return 0
    }
    if (values.ttl !== undefined) throw new CliError('--ttl goes with --link')
    const res = await client.request('GET', await client.browserPath('/telemetry/trace.zip'), {
      query: { since, until, target_id: target },
      signal: io.signal,
    })
    await saveZipDownload(res, stringOption(values.output), 'trace', io)
    return 0
  },
)
