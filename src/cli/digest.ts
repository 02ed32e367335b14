// `browser-telemetry digest`: the daemon's short account of a window (GET .../telemetry/digest),
// printed as it comes: markdown for a person or a model, or --json.
import { stringOption } from './args.js'
import { defineCommand } from './command.js'
import { CliError, writeOut } from './io.js'
import { WINDOW_OPTIONS } from './read.js'

export const digestCommand = defineCommand(
  {
    name: 'digest',
    summary:
      'Print a short account of a time window: each agent step with its actions and their effects, navigations with vitals, failed requests, console errors at their mapped lines, crashes and dropped events.',
    options: {
      ...WINDOW_OPTIONS,
      step: { type: 'string', arg: 'STEP_ID', help: 'Only this agent step (what happened while it ran)' },
      'max-chars': {
        type: 'string',
        arg: 'N',
        help: 'Character budget (500 to 200000, default 8000): the least important lines are left out first',
      },
      json: { type: 'boolean', help: 'The same items as JSON' },
    },
    notes: [
      'Examples:',
      '  browser-telemetry digest --since 10m',
      '  browser-telemetry digest --step 0f6e… --max-chars 2000   # why did this step fail?',
    ],
  },
  async ({ values }, client, io) => {
    const maxText = stringOption(values['max-chars'])
    const maxChars = maxText === undefined ? undefined : Number(maxText)
    if (maxChars !== undefined && !Number.isInteger(maxChars))
      throw new CliError(`--max-chars: expected a whole number, got ${JSON.stringify(maxText)}`)
    const res = await client.request('GET', await client.browserPath('/telemetry/digest'), {
      query: {
        since: stringOption(values.since),
        until: stringOption(values.until),
        step_id: stringOption(values.step),
        max_chars: maxChars,
        format: values.json === true ? 'json' : undefined,
      },
      signal: io.signal,
    })
    const text = await res.text()
    await writeOut(io.stdout, text.endsWith('\n') ? text : `${text}\n`)
    return 0
  },
)
