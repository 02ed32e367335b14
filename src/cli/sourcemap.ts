// `browser-telemetry sourcemap upload|list|delete`: source maps for production bundles whose maps
// are not public (PUT/GET/DELETE /browsers/{id}/sourcemaps). Here --url is the script's URL, as
// stack frames name it; the daemon's address is --api-url (or BROWSER_TELEMETRY_URL).
import { readFile, stat } from 'node:fs/promises'
import { stringOption } from './args.js'
import { defineCommand, fail, type ClientCommand } from './command.js'
import { CliError, processIO, usageError, type CliIO } from './io.js'

const API_URL = 'api-url'
const SCRIPT_URL = {
  type: 'string',
  arg: 'URL',
  help: "The script's URL exactly as stack frames name it (e.g. https://shop.example/assets/app.min.js)",
} as const

const upload = defineCommand(
  {
    name: 'sourcemap upload',
    summary: 'Upload a source map for a script; prints the stored record as JSON.',
    positionals: '<file.map>',
    minPositionals: 1,
    maxPositionals: 1,
    apiUrlFlag: API_URL,
    options: { url: SCRIPT_URL },
    notes: [
      'A map carrying a "debugId" may be uploaded without --url: it then covers every script whose',
      '`//# debugId=` names it. Frames read after the upload are mapped with it, stored events included.',
      '',
      'Example:',
      '  browser-telemetry sourcemap upload dist/app.min.js.map --url https://shop.example/assets/app.min.js',
    ],
  },
  async ({ positionals, values }, client, io) => {
    const file = positionals[0]!
    const size = await stat(file).then(
      s => s.size,
      (err: NodeJS.ErrnoException) => {
        throw new CliError(`${file}: ${err.code ?? err.message}`)
      },
    )
    if (size === 0) throw usageError(`${file} is empty`)
    const url = stringOption(values.url)
    const res = await client.request('PUT', await client.browserPath('/sourcemaps'), {
      query: { url },
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: new Uint8Array(await readFile(file)),
      signal: io.signal,
    })
    io.stdout.write(JSON.stringify(await res.json()) + '\n')
  },
)

const list = defineCommand(
  {
    name: 'sourcemap list',
    summary: 'List the uploaded source maps, one JSON record per line.',
    apiUrlFlag: API_URL,
    options: {},
  },
  async (_args, client, io) => {
    const maps = await client.json<unknown[]>('GET', await client.browserPath('/sourcemaps'), { signal: io.signal })
    io.stdout.write(maps.map(m => JSON.stringify(m) + '\n').join(''))
  },
)

const del = defineCommand(
  {
    name: 'sourcemap delete',
    summary: 'Delete an uploaded source map, by its script URL or its Debug ID.',
    apiUrlFlag: API_URL,
    options: {
      url: SCRIPT_URL,
      'debug-id': { type: 'string', arg: 'UUID', help: 'The Debug ID of a map uploaded without --url' },
    },
  },
  async ({ values }, client, io) => {
    const url = stringOption(values.url)
    const debugId = stringOption(values['debug-id'])
    if ((url === undefined) === (debugId === undefined)) throw usageError('give --url or --debug-id (one of the two)')
    await client.request('DELETE', await client.browserPath('/sourcemaps'), {
      query: { url, debug_id: debugId },
      signal: io.signal,
    })
    io.stdout.write(`deleted the source map for ${url ?? `debug id ${debugId}`}\n`)
  },
)

export const sourcemapSubcommands = { upload, list, delete: del }

const HELP = [
  'Usage: browser-telemetry sourcemap <command> [options]',
  '',
  'Source maps for stack traces of minified scripts whose maps are not public.',
  '',
  'Commands:',
  ...Object.entries(sourcemapSubcommands).map(([n, c]) => `  ${n.padEnd(8)}${c.summary}`),
  '',
  'Run `browser-telemetry sourcemap <command> --help` for its options.',
  '',
].join('\n')

export const sourcemapCommand: ClientCommand = {
  summary: 'Source maps for minified stack traces: upload, list, delete.',
  async run(argv, io: CliIO = processIO()) {
    const [sub, ...rest] = argv
    if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
      io.stdout.write(HELP)
      return sub === undefined ? 2 : 0
    }
    const cmd = (sourcemapSubcommands as Record<string, ClientCommand>)[sub]
    if (!cmd) return fail('sourcemap', usageError(`unknown command ${JSON.stringify(sub)} (upload, list, delete)`), io)
    return cmd.run(rest, io)
  },
}
