// The shell around every client command: parse, --help, build the API client, and turn any failure
// into one line on stderr plus a non-zero exit code.
import { connectionOf, connectionValues, helpText, parseCommand, type CommandSpec, type Parsed } from './args.js'
import { ApiClient } from './client.js'
import { CliError, processIO, type CliIO } from './io.js'

export interface ClientCommand {
  summary: string
  /** argv after the command name; resolves to the exit code. */
  run(argv: string[], io?: CliIO): Promise<number>
}

export type CommandHandler = (args: Parsed, client: ApiClient, io: CliIO) => Promise<number | void>

export function defineCommand(spec: CommandSpec, handler: CommandHandler): ClientCommand & { spec: CommandSpec } {
  return {
    spec,
    summary: spec.summary,
    async run(argv, io = processIO()) {
      try {
        const args = parseCommand(spec, argv)
        if (args.help) {
          io.stdout.write(helpText(spec))
          return 0
        }
        const client = new ApiClient(connectionOf(connectionValues(spec, args.values), io.env))
        return (await handler(args, client, io)) ?? 0
      } catch (err) {
        return fail(spec.name, err, io)
      }
    },
  }
}

export function fail(name: string, err: unknown, io: CliIO): number {
  if (err instanceof CliError) {
    io.stderr.write(`browser-telemetry ${name}: ${err.message}\n`)
    return err.code
  }
  if ((err as Error)?.name === 'AbortError' && io.signal?.aborted) return 0
  const e = err as NodeJS.ErrnoException
  const msg = e?.code && e.path ? `${e.code}: ${e.path}` : (e?.message ?? String(err)).split('\n')[0]
  io.stderr.write(`browser-telemetry ${name}: ${msg}\n`)
  return 1
}
