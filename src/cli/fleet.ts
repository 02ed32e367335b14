// `browser-telemetry fleet tail|read`: watch any VM of a fleet from one place by reading the NATS
// JetStream stream the daemons ship to (see docs/fleet.md), printed like `tail` / `read`.
import type { NatsConnection } from '@nats-io/transport-node'
import { parseTimeBound } from '../api/telemetry-query.js'
import type { Category, Envelope } from '../events/index.js'
import { FLEET_READ_OPTIONS } from '../config/options.js'
import { natsTarget, type NatsTarget } from '../config/config.js'
import { connectFleet, readFleet, type FleetMessage } from '../fleet/reader.js'
import {
  intOption,
  helpText,
  parseCommand,
  resolved,
  stringOption,
  type CommandSpec,
  type OptionSpec,
  type Parsed,
} from './args.js'
import { fail, type ClientCommand } from './command.js'
import { formatEnvelope } from './format.js'
import { CliError, processIO, usageError, useColor, writeOut, type CliIO } from './io.js'
import { categoriesOption } from './read.js'

const NATS_OPTIONS: Record<string, OptionSpec> = {
  ...FLEET_READ_OPTIONS,
  category: { type: 'string', multiple: true, arg: 'NAME', help: 'Only these categories, comma-separated' },
  json: { type: 'boolean', help: 'NDJSON: each envelope as shipped, with "browser_id" added first' },
}

interface FleetTarget extends NatsTarget {
  browserId?: string
  categories: Category[]
}

function targetOf(values: Parsed['values'], env: NodeJS.ProcessEnv): FleetTarget {
  const o = resolved(FLEET_READ_OPTIONS, values, env)
  const nats = natsTarget(o)
  if (!nats) throw usageError('--nats-url is required (or BROWSER_TELEMETRY_NATS_URL)')
  return {
    ...nats,
    browserId: o.get('browser-id'),
    categories: categoriesOption(values.category) as Category[],
  }
}

function timeOption(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined
  const us = parseTimeBound(v, Date.now() * 1000)
  if (us === undefined)
    throw usageError(
      `--${flag}: expected an RFC-3339 time or a duration ago like 90s, 5m, 1h30m, got ${JSON.stringify(v)}`,
    )
  return us
}

/** One output line per message: readable (browser id first unless filtered to one) or NDJSON. */
function printer(target: FleetTarget, json: boolean, color: boolean) {
  return (m: FleetMessage, env: Envelope): string => {
    if (json) return `{"browser_id":${JSON.stringify(m.browserId)},${m.json.slice(1)}`
    const line = formatEnvelope(env, color)
    return target.browserId !== undefined ? line : `${m.browserId} ${line}`
  }
}

type FleetHandler = (target: FleetTarget, args: Parsed, nc: NatsConnection, io: CliIO) => Promise<number | void>

function defineFleetCommand(spec: CommandSpec, handler: FleetHandler): ClientCommand {
  return {
    summary: spec.summary,
    async run(argv, io = processIO()) {
      try {
        const args = parseCommand(spec, argv)
        if (args.help) {
          io.stdout.write(helpText(spec))
          return 0
        }
        const target = targetOf(args.values, io.env)
        let nc: NatsConnection
        try {
          nc = await connectFleet(target.auth)
        } catch (err) {
          throw new CliError(`cannot connect to NATS (${target.auth.servers.join(', ')}): ${(err as Error).message}`)
        }
        try {
          return (
            (await handler(target, args, nc, io).catch((err: Error) => {
              if (/stream not found/i.test(err.message))
                throw new CliError(`stream ${target.stream} not found on ${target.auth.servers.join(', ')}`)
              throw err
            })) ?? 0
          )
        } finally {
          await nc.close().catch(() => undefined)
        }
      } catch (err) {
        return fail(spec.name, err, io)
      }
    },
  }
}

const tail = defineFleetCommand(
  {
    name: 'fleet tail',
    summary: 'Follow the fleet stream (ordered consumer): one readable line per event, like `tail`.',
    connection: false,
    options: {
      ...NATS_OPTIONS,
      since: {
        type: 'string',
        arg: 'TIME',
        help: 'Start at this time (RFC-3339 or a duration ago like 5m; default: only new events)',
      },
      count: { type: 'string', arg: 'N', help: 'Exit after printing N events' },
    },
    notes: [
      'Examples:',
      '  browser-telemetry fleet tail --nats-url nats://127.0.0.1:4222',
      '  browser-telemetry fleet tail --nats-url nats://nats:4222 --browser-id vm-42 --category console --since 10m',
    ],
  },
  async (target, { values }, nc, io) => {
    const count = intOption(values.count, 'count')
    const json = values.json === true
    const print = printer(target, json, !json && useColor(io.stdout, io.env))
    const abort = new AbortController()
    const onSigint = () => abort.abort()
    if (io.signal) io.signal.addEventListener('abort', onSigint, { once: true })
    else process.once('SIGINT', onSigint)
    let printed = 0
    try {
      await readFleet(
        nc,
        { ...target, sinceUs: timeOption(stringOption(values.since), 'since'), follow: true, signal: abort.signal },
        async m => {
          await writeOut(io.stdout, print(m, JSON.parse(m.json) as Envelope) + '\n')
          return count === undefined || ++printed < count
        },
      )
    } finally {
      process.off('SIGINT', onSigint)
      io.signal?.removeEventListener('abort', onSigint)
    }
  },
)

const read = defineFleetCommand(
  {
    name: 'fleet read',
    summary: "Print the fleet stream's events of a time window, oldest first, then exit (NDJSON with --json).",
    connection: false,
    options: {
      ...NATS_OPTIONS,
      since: {
        type: 'string',
        arg: 'TIME',
        help: "Window start: RFC-3339 or a duration ago (default 5m; matched against the stream's store time)",
      },
      until: { type: 'string', arg: 'TIME', help: 'Window end, exclusive, by event ts: RFC-3339 or a duration ago' },
      limit: { type: 'string', arg: 'N', help: 'Stop after N events' },
    },
    notes: [
      'Examples:',
      '  browser-telemetry fleet read --nats-url nats://nats:4222 --browser-id vm-42 --since 1h --json | jq .event.type',
    ],
  },
  async (target, { values }, nc, io) => {
    const limit = intOption(values.limit, 'limit')
    const sinceUs = timeOption(stringOption(values.since) ?? '5m', 'since')
    const untilUs = timeOption(stringOption(values.until), 'until')
    const json = values.json === true
    const print = printer(target, json, !json && useColor(io.stdout, io.env))
    let printed = 0
    let out = ''
    await readFleet(nc, { ...target, sinceUs, follow: false, signal: io.signal }, async m => {
      const env = JSON.parse(m.json) as Envelope
      if (untilUs !== undefined && env.event.ts >= untilUs) return false
      out += print(m, env) + '\n'
      if (out.length > 64 * 1024) {
        await writeOut(io.stdout, out)
        out = ''
      }
      return limit === undefined || ++printed < limit
    })
    if (out) await writeOut(io.stdout, out)
  },
)

export const fleetSubcommands = { tail, read }

const FLEET_HELP = [
  'Usage: browser-telemetry fleet <command> [options]',
  '',
  'Read the NATS JetStream stream that daemons started with --nats-url ship to.',
  '',
  'Commands:',
  ...Object.entries(fleetSubcommands).map(([n, c]) => `  ${n.padEnd(6)}${c.summary}`),
  "  serve Serve any VM's telemetry from the stream with the daemon's read API (events pages, SSE).",
  '',
  'Run `browser-telemetry fleet <command> --help` for its options.',
  '',
].join('\n')

export const fleetCommand: ClientCommand = {
  summary: 'Watch a fleet from one place: tail, read or serve the NATS JetStream stream daemons ship to.',
  async run(argv, io: CliIO = processIO()) {
    const [sub, ...rest] = argv
    if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
      io.stdout.write(FLEET_HELP)
      return sub === undefined ? 2 : 0
    }
    const cmd = (fleetSubcommands as Record<string, ClientCommand>)[sub]
    if (!cmd) return fail('fleet', usageError(`unknown command ${JSON.stringify(sub)} (tail, read, serve)`), io)
    return cmd.run(rest, io)
  },
}
