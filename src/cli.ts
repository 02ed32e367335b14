#!/usr/bin/env -S node --max-semi-space-size=2 --single-threaded --no-memory-reducer
// The `browser-telemetry` command. Subcommands are rows of COMMANDS: add a client command
// (tail, read, har, upload-zip, extension ...) by adding a row; `run` returns the exit code.
import { pathToFileURL } from 'node:url'
import { realpathSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import {
  ConfigError,
  FLEET_SERVE_OPTIONS,
  parseFleetServeConfig,
  parseServeConfig,
  SERVE_OPTIONS,
} from './config/config.js'
import { startDaemon } from './main.js'
import { startFleetServe, type FleetServe } from './fleet/serve.js'
import { clientCommands } from './cli/index.js'
import { helpText, type CommandSpec } from './cli/args.js'

export interface Command {
  name: string
  summary: string
  usage: string
  run(argv: string[]): Promise<number>
}

const SERVE_SPEC: CommandSpec = {
  name: 'serve',
  summary:
    'Run the daemon: event log, capture pipeline and HTTP API. Each flag is also read from the env var shown in brackets.',
  connection: false,
  options: SERVE_OPTIONS,
}

/** The daemon's old-generation growth per full collection (V8's default is dynamic, up to 300%). */
export const HEAP_GROWING_PERCENT = 25

const serve: Command = {
  name: 'serve',
  summary: 'Run the daemon: event log, capture pipeline and HTTP API',
  get usage() {
    return helpText(SERVE_SPEC)
  },
  async run(argv) {
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(helpText(SERVE_SPEC))
      return 0
    }
    // V8 lets the old generation grow up to 4x its live size before a full collection. Huge CDP
    // messages (a page's 1.6 MB console calls) leave their JSON text and serialisations as large
    // objects that only a full collection frees: 10 such calls grew the daemon's RSS by ~90 MB.
    // Growing by 25% at most keeps those collections small and frequent (docs/limits.md, heap
    // growth). Read at every collection, so setting it here, before the daemon allocates, is enough.
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
    let handle: Awaited<ReturnType<typeof startDaemon>>
    try {
      handle = await startDaemon(parseServeConfig(argv, process.env))
    } catch (err) {
      // One line, no stack: configuration and startup problems are the user's to fix.
      process.stderr.write(
        `browser-telemetry: ${err instanceof ConfigError ? '' : 'cannot start: '}${(err as Error).message}\n`,
      )
      return 1
    }
    return await new Promise<number>(resolve => {
      let stopping = false
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          process.stderr.write(`browser-telemetry: ${signal} again, exiting now\n`)
          resolve(1)
          return
        }
        stopping = true
        // Bound the shutdown: a stuck producer must not keep a stopping service alive.
        setTimeout(() => {
          process.stderr.write('browser-telemetry: shutdown took over 5 s, exiting\n')
          resolve(1)
        }, 5000).unref()
        handle.close().then(
          () => resolve(0),
          (err: unknown) => {
            process.stderr.write(`browser-telemetry: unclean shutdown: ${(err as Error).message}\n`)
            resolve(1)
          },
        )
      }
      process.on('SIGTERM', stop)
      process.on('SIGINT', stop)
    })
  },
}

const FLEET_SERVE_SPEC: CommandSpec = {
  name: 'fleet serve',
  summary:
    "Serve any VM's telemetry from the fleet stream with the daemon's read API (events pages, SSE). Each flag is also read from the env var shown in brackets.",
  connection: false,
  options: FLEET_SERVE_OPTIONS,
  notes: [
    'Examples:',
    '  browser-telemetry fleet serve --nats-url nats://nats:4222 --listen 0.0.0.0:10223 --token-file /etc/bt/tokens',
    `  curl -H "Authorization: Bearer $TOKEN" 'http://127.0.0.1:10223/browsers/vm-42/telemetry/events?since=1h&limit=100'`,
  ],
}

/** `fleet serve`: runs until SIGINT/SIGTERM; the exit code. */
async function runFleetServe(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(helpText(FLEET_SERVE_SPEC))
    return 0
  }
  let handle: FleetServe
  try {
    handle = await startFleetServe(parseFleetServeConfig(argv, process.env))
  } catch (err) {
    process.stderr.write(
      `browser-telemetry fleet serve: ${err instanceof ConfigError ? '' : 'cannot start: '}${(err as Error).message}\n`,
    )
    return 1
  }
  process.stderr.write(`browser-telemetry fleet serve: listening on ${handle.url}\n`)
  return new Promise<number>(resolve => {
    const stop = () => {
      setTimeout(() => resolve(1), 5000).unref()
      handle.close().then(
        () => resolve(0),
        () => resolve(1),
      )
    }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
}

export const COMMANDS: Command[] = [
  serve,
  ...Object.entries(clientCommands).map(([name, c]): Command => ({
    name,
    summary: c.summary,
    usage: '',
    // `fleet serve` is a server like `serve` (it runs until a signal), wired here; the rest of `fleet` reads the stream.
    run:
      name === 'fleet'
        ? argv => (argv[0] === 'serve' ? runFleetServe(argv.slice(1)) : c.run(argv))
        : argv => c.run(argv),
  })),
]

function usage(): string {
  return [
    'Usage: browser-telemetry <command> [flags]',
    '',
    'Commands:',
    ...COMMANDS.map(c => `  ${c.name.padEnd(12)} ${c.summary}`),
    '',
    'Run "browser-telemetry <command> --help" for its flags.',
  ].join('\n')
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(usage() + '\n')
    return name === undefined ? 2 : 0
  }
  const cmd = COMMANDS.find(c => c.name === name)
  if (!cmd) {
    process.stderr.write(`browser-telemetry: unknown command ${JSON.stringify(name)}\n\n${usage()}\n`)
    return 2
  }
  return cmd.run(rest)
}

// Run when executed directly (node dist/src/cli.js, tsx src/cli.ts, or the npm bin symlink).
const invoked = process.argv[1] ? pathToFileURL(realpathSync(process.argv[1])).href : ''
if (invoked === import.meta.url) {
  main(process.argv.slice(2)).then(
    code => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`browser-telemetry: ${(err as Error).message}\n`)
      process.exit(1)
    },
  )
}
