// `browser-telemetry read`: every event of a window as NDJSON (one envelope per line).
import { CATEGORIES } from '../events/index.js'
import { intOption, listOption, stringOption } from './args.js'
import { defineCommand } from './command.js'
import { usageError, writeOut } from './io.js'
import { readWindow } from './window.js'

export const WINDOW_OPTIONS = {
  since: {
    type: 'string',
    arg: 'TIME',
    help: 'Window start: RFC-3339 or a duration ago like 90s, 5m, 1h30m (default 5m; not with --order desc)',
  },
  until: { type: 'string', arg: 'TIME', help: 'Window end, exclusive: RFC-3339 or a duration ago' },
} as const

export function categoriesOption(v: string | boolean | string[] | undefined): string[] {
  const cats = listOption(v)
  for (const c of cats) {
    if (!(CATEGORIES as readonly string[]).includes(c))
      throw usageError(`--category: unknown category ${JSON.stringify(c)} (allowed: ${CATEGORIES.join(', ')})`)
  }
  return cats
}

export const readCommand = defineCommand(
  {
    name: 'read',
    summary: 'Print the events of a time window as NDJSON, oldest first (or newest first with --order desc).',
    options: {
      ...WINDOW_OPTIONS,
      category: {
        type: 'string',
        multiple: true,
        arg: 'NAME',
        help: `Only these categories, comma-separated (${CATEGORIES.join(', ')})`,
      },
      order: { type: 'string', arg: 'asc|desc', help: 'asc (default) or desc' },
      limit: { type: 'string', arg: 'N', help: 'Stop after N events (default: the whole window)' },
    },
    notes: [
      'Examples:',
      '  browser-telemetry read --since 10m --category console,network',
      '  browser-telemetry read --order desc --limit 20 | jq .event.type',
    ],
  },
  async ({ values }, client, io) => {
    const order = stringOption(values.order)
    if (order !== undefined && order !== 'asc' && order !== 'desc')
      throw usageError(`--order: expected asc or desc, got ${JSON.stringify(order)}`)
    await readWindow(
      client,
      {
        since: stringOption(values.since),
        until: stringOption(values.until),
        order,
        categories: categoriesOption(values.category),
        limit: intOption(values.limit, 'limit'),
      },
      async page => {
        if (page.length > 0) await writeOut(io.stdout, page.map(e => JSON.stringify(e)).join('\n') + '\n')
      },
      { stderr: io.stderr, signal: io.signal },
    )
    return 0
  },
)
