// `browser-telemetry har`: the network events of a window as a HAR 1.2 file.
import { createWriteStream } from 'node:fs'
import { finished } from 'node:stream/promises'
import type { Envelope } from '../events/index.js'
import { HAR_CATEGORIES, toHar } from '../har/index.js'
import { stringOption } from './args.js'
import { defineCommand } from './command.js'
import { writeOut } from './io.js'
import { WINDOW_OPTIONS } from './read.js'
import { readWindow } from './window.js'

export const harCommand = defineCommand(
  {
    name: 'har',
    summary:
      'Export the network requests of a time window as a HAR 1.2 file (requests joined with responses and failures, redirects, bodies when captured).',
    options: {
      ...WINDOW_OPTIONS,
      output: { type: 'string', short: 'o', arg: 'FILE', help: 'Write the HAR here (default: standard output)' },
    },
    notes: [
      'Example:',
      '  browser-telemetry har --since 15m -o session.har   # open in Chrome DevTools > Network > Import',
    ],
  },
  async ({ values }, client, io) => {
    const envelopes: Envelope[] = []
    const since = stringOption(values.since)
    const until = stringOption(values.until)
    await readWindow(
      client,
      { since, until, order: 'asc', categories: [...HAR_CATEGORIES] },
      page => {
        envelopes.push(...page)
      },
      { stderr: io.stderr, signal: io.signal },
    )
    const browserId = await client.browserId()
    const har = toHar(envelopes, {
      comment: `browser ${browserId}, window ${since ?? '5m'}${until ? ` until ${until}` : ''}, exported by browser-telemetry`,
    })
    const text = JSON.stringify(har, null, 2) + '\n'
    const output = stringOption(values.output)
    if (output === undefined || output === '-') {
      await writeOut(io.stdout, text)
    } else {
      const file = createWriteStream(output, { mode: 0o600 })
      file.end(text)
      await finished(file)
      io.stderr.write(`wrote ${har.log.entries.length} entries, ${har.log.pages.length} pages to ${output}\n`)
    }
    return 0
  },
)
