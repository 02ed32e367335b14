// `browser-telemetry bundle`: saves the debug bundle of a time window (GET .../telemetry/bundle) as a
// zip. The download goes to a temporary file beside the target and is renamed into place only once
// the daemon ended it properly, so a failed or interrupted download never leaves a zip that looks
// whole (the daemon breaks the connection on a failure; a short file is never renamed).
import { createWriteStream } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { stringOption } from './args.js'
import { defineCommand } from './command.js'
import { CliError, writeOut, type CliIO, type OutStream } from './io.js'
import { formatBytes, progress } from './progress.js'
import { WINDOW_OPTIONS } from './read.js'

/** The zip's end record signature: a download that lacks it in its last bytes is not whole. */
const EOCD = Buffer.from([0x50, 0x4b, 0x05, 0x06])

/** The file name the daemon offers (Content-Disposition), reduced to a safe base name. */
export function offeredName(disposition: string | null): string | undefined {
  const m = /filename="([^"]{1,200})"/.exec(disposition ?? '')
  const name = m ? basename(m[1]!) : undefined
  return name && /^[A-Za-z0-9._-]+\.zip$/.test(name) ? name : undefined
}

export const bundleCommand = defineCommand(
  {
    name: 'bundle',
    summary:
      'Save the debug bundle of a time window: one zip with manifest.json, events.ndjson, network.har, console.txt, screenshots/ and frames/ (open it with `browser-telemetry view`).',
    options: {
      ...WINDOW_OPTIONS,
      output: {
        type: 'string',
        short: 'o',
        arg: 'FILE',
        help: 'Write the zip here (default: the name the daemon offers, in this directory; - for standard output)',
      },
    },
    notes: [
      'The file appears only when the download is complete; a failed download leaves nothing behind.',
      'Examples:',
      '  browser-telemetry bundle --since 30m -o session.zip',
      '  browser-telemetry view session.zip',
    ],
  },
  async ({ values }, client, io) => {
    const since = stringOption(values.since)
    const until = stringOption(values.until)
    const res = await client.request('GET', await client.browserPath('/telemetry/bundle'), {
      query: { since, until },
      signal: io.signal,
    })
    await saveZipDownload(res, stringOption(values.output), 'bundle', io)
    return 0
  },
)

/**
 * Saves a zip the daemon streams (a bundle, a trace) with progress on the terminal: to `output`
 * (default: the name the daemon offers), whole or not at all; `-` writes standard output.
 */
export async function saveZipDownload(
  res: Response,
  outputOption: string | undefined,
  what: string,
  io: CliIO,
): Promise<string> {
  if (!res.body) throw new CliError('the daemon answered without a body')
  const output = outputOption ?? offeredName(res.headers.get('content-disposition')) ?? `${what}.zip`
  const started = Date.now()
  const bar = progress(io.stderr)
  let bytes = 0
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length
      bar.update(`${what}: ${formatBytes(bytes)} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
      cb(null, chunk)
    },
  })
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>)
  try {
    if (output === '-') {
      // A pipe cannot be taken back: a broken download still exits 1 after what was written.
      for await (const chunk of body) {
        bytes += (chunk as Buffer).length
        bar.update(`${what}: ${formatBytes(bytes)} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
        await writeOut(io.stdout, chunk as Buffer)
      }
      return output
    }
    await saveWhole(body, counter, output, io.signal)
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err
    if (err instanceof CliError) throw err
    throw new CliError(
      `the download broke off after ${formatBytes(bytes)} (${(err as Error).message}); nothing was written`,
    )
  } finally {
    bar.done()
  }
  done(io.stderr, `wrote ${output} (${formatBytes(bytes)} in ${((Date.now() - started) / 1000).toFixed(1)} s)`)
  return output
}

/** Streams into `<dir>/.<name>.<pid>.part`, checks the zip's end, then renames; the temp file never survives a failure. */
async function saveWhole(body: Readable, counter: Transform, output: string, signal?: AbortSignal): Promise<void> {
  const temp = join(dirname(output), `.${basename(output)}.${process.pid}.part`)
  try {
    await pipeline(body, counter, createWriteStream(temp, { mode: 0o600 }), { signal })
    const fh = await open(temp, 'r')
    try {
      const { size } = await fh.stat()
      const tail = Buffer.alloc(Math.min(size, 22 + 0xffff))
      await fh.read(tail, 0, tail.length, size - tail.length)
      if (tail.lastIndexOf(EOCD) < 0)
        throw new CliError('the download ended early (no zip end record); nothing was written')
    } finally {
      await fh.close()
    }
    await rename(temp, output)
  } catch (err) {
    await rm(temp, { force: true })
    throw err
  }
}

/** The closing line, on a terminal only: piped runs stay quiet. */
function done(err: OutStream, line: string): void {
  if (err.isTTY === true) err.write(line + '\n')
}
