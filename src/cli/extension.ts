// `browser-telemetry extension upload|list|get|download|delete`: the extension store routes.
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { intOption, stringOption } from './args.js'
import { pages } from './client.js'
import { defineCommand, fail, type ClientCommand } from './command.js'
import { CliError, processIO, usageError, writeOut, type CliIO } from './io.js'
import { formatBytes, progress } from './progress.js'
import { upload } from './upload.js'

const ref = (idOrName: string) => `/extensions/${encodeURIComponent(idOrName)}`

const uploadExt = defineCommand(
  {
    name: 'extension upload',
    summary: 'Upload a zip of an unpacked browser extension; prints the Extension record as JSON.',
    positionals: '<zip>',
    minPositionals: 1,
    maxPositionals: 1,
    options: {
      name: { type: 'string', arg: 'NAME', help: 'Unique name for later reference (letters, digits, . _ -)' },
    },
  },
  async ({ positionals, values }, client, io) => {
    const name = stringOption(values.name)
    const res = await upload(
      client,
      '/extensions',
      [
        { name: 'file', file: positionals[0]!, contentType: 'application/zip' },
        ...(name !== undefined ? [{ name: 'name', value: name }] : []),
      ],
      { stderr: io.stderr, signal: io.signal, accept: 'application/json' },
    )
    io.stdout.write(JSON.stringify(await res.json()) + '\n')
  },
)

const list = defineCommand(
  {
    name: 'extension list',
    summary: 'List uploaded extensions, one JSON record per line.',
    options: {
      name: { type: 'string', arg: 'NAME', help: 'Only the extension with exactly this name' },
      query: { type: 'string', arg: 'TEXT', help: 'Only names containing this text' },
      limit: { type: 'string', arg: 'N', help: 'Stop after N records' },
    },
  },
  async ({ values }, client, io) => {
    const limit = intOption(values.limit, 'limit')
    let n = 0
    for await (const page of pages<unknown>(
      client,
      '/extensions',
      { name: stringOption(values.name), query: stringOption(values.query), limit: 100 },
      io.signal,
    )) {
      const take = limit !== undefined ? page.slice(0, limit - n) : page
      n += take.length
      if (take.length > 0) await writeOut(io.stdout, take.map(e => JSON.stringify(e)).join('\n') + '\n')
      if (limit !== undefined && n >= limit) break
    }
  },
)

const get = defineCommand(
  {
    name: 'extension get',
    summary: 'Print the metadata of one extension (by id or name) as JSON.',
    positionals: '<id-or-name>',
    minPositionals: 1,
    maxPositionals: 1,
    options: {},
  },
  async ({ positionals }, client, io) => {
    io.stdout.write(JSON.stringify(await client.json('GET', `${ref(positionals[0]!)}/metadata`)) + '\n')
  },
)

const download = defineCommand(
  {
    name: 'extension download',
    summary: 'Download the zip of one extension (by id or name).',
    positionals: '<id-or-name>',
    minPositionals: 1,
    maxPositionals: 1,
    options: {
      output: {
        type: 'string',
        short: 'o',
        arg: 'FILE',
        help: 'Write here ("-" for standard output; default <id-or-name>.zip)',
      },
    },
  },
  async ({ positionals, values }, client, io) => {
    const idOrName = positionals[0]!
    const output = stringOption(values.output) ?? `${idOrName.replace(/[^A-Za-z0-9._-]/g, '_')}.zip`
    const res = await client.request('GET', ref(idOrName), {
      headers: { accept: 'application/zip' },
      signal: io.signal,
    })
    const total = Number(res.headers.get('content-length') ?? NaN)
    const bar = progress(io.stderr)
    let got = 0
    const body = Readable.fromWeb(res.body as never).on('data', (c: Buffer) => {
      got += c.length
      bar.update(`downloading ${formatBytes(got)}${Number.isFinite(total) ? ` / ${formatBytes(total)}` : ''}`)
    })
    try {
      if (output === '-') {
        for await (const c of body) await writeOut(io.stdout, c as Buffer)
      } else {
        await pipeline(body, createWriteStream(output, { flags: 'wx' })).catch(async (err: NodeJS.ErrnoException) => {
          if (err.code === 'EEXIST') throw new CliError(`${output} exists; choose another -o`)
          await rm(output, { force: true })
          throw err
        })
        io.stderr.write(`wrote ${formatBytes(got)} to ${output}\n`)
      }
    } finally {
      bar.done()
    }
  },
)

const del = defineCommand(
  {
    name: 'extension delete',
    summary: 'Delete one extension (by id or name).',
    positionals: '<id-or-name>',
    minPositionals: 1,
    maxPositionals: 1,
    options: {},
  },
  async ({ positionals }, client, io) => {
    await client.request('DELETE', ref(positionals[0]!), { signal: io.signal })
    io.stdout.write(`deleted ${positionals[0]}\n`)
  },
)

export const extensionSubcommands = { upload: uploadExt, list, get, download, delete: del }

const EXTENSION_HELP = [
  'Usage: browser-telemetry extension <command> [options]',
  '',
  'Manage the browser-extension store of the daemon.',
  '',
  'Commands:',
  ...Object.entries(extensionSubcommands).map(([n, c]) => `  ${n.padEnd(10)}${c.summary}`),
  '',
  'Run `browser-telemetry extension <command> --help` for its options.',
  '',
].join('\n')

export const extensionCommand: ClientCommand = {
  summary: 'Manage browser extensions: upload, list, get, download, delete.',
  async run(argv, io: CliIO = processIO()) {
    const [sub, ...rest] = argv
    if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
      io.stdout.write(EXTENSION_HELP)
      return sub === undefined ? 2 : 0
    }
    const cmd = (extensionSubcommands as Record<string, ClientCommand>)[sub]
    if (!cmd)
      return fail(
        'extension',
        usageError(`unknown command ${JSON.stringify(sub)} (upload, list, get, download, delete)`),
        io,
      )
    return cmd.run(rest, io)
  },
}
