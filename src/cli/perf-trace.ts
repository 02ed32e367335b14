// `browser-telemetry perf-trace`: records a Chromium performance trace (POST .../perf-traces), waits
// for it, and saves the gzip file (Perfetto and the DevTools Performance panel open it). The file
// goes to a temporary name beside the target and is renamed only once whole.
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { parseDuration } from '../util/duration.js'
import { stringOption } from './args.js'
import { defineCommand } from './command.js'
import { CliError, usageError, writeOut } from './io.js'
import { formatBytes, progress } from './progress.js'

const MAX_DURATION_MS = 60_000
/** How often the CLI asks whether the trace is ready, once its duration passed. */
const POLL_MS = 250

export const perfTraceCommand = defineCommand(
  {
    name: 'perf-trace',
    summary:
      'Record a Chromium performance trace of the browser (or one page) and save it as trace-event JSON, gzipped: open it in Perfetto (ui.perfetto.dev) or the DevTools Performance panel.',
    options: {
      duration: { type: 'string', arg: 'DURATION', help: 'How long to trace, 1ms to 60s (default 5s)' },
      'target-id': { type: 'string', arg: 'ID', help: 'Trace one page (its target id); default: the whole browser' },
      categories: {
        type: 'string',
        arg: 'LIST',
        help: "Comma-separated trace categories (default: the DevTools Performance panel's)",
      },
      output: {
        type: 'string',
        short: 'o',
        arg: 'FILE',
        help: 'Write the trace here (default: perf-trace-<trace id>.json.gz in this directory; - for standard output)',
      },
    },
    notes: ['Example:', '  browser-telemetry perf-trace --duration 5s -o trace.json.gz'],
  },
  async ({ values }, client, io) => {
    const durationText = stringOption(values.duration) ?? '5s'
    const durationMs = parseDuration(durationText)
    if (durationMs === undefined || durationMs < 1 || durationMs > MAX_DURATION_MS)
      throw usageError(`--duration: expected 1ms to 60s, got ${JSON.stringify(durationText)}`)
    const categoriesText = stringOption(values.categories)
    const categories = categoriesText
      ?.split(',')
      .map(c => c.trim())
      .filter(c => c !== '')
    const targetId = stringOption(values['target-id'])
    const base = await client.browserPath('/telemetry/perf-traces')
    const { trace_id: id } = await client.json<{ trace_id: string }>('POST', base, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        duration_ms: Math.round(durationMs),
        ...(targetId !== undefined ? { target_id: targetId } : {}),
        ...(categories ? { categories } : {}),
      }),
      signal: io.signal,
    })
    const bar = progress(io.stderr)
    const started = Date.now()
    let res: Response
    try {
      for (;;) {
        res = await client.request('GET', `${base}/${id}`, { signal: io.signal })
        if (res.status === 200) break
        await res.body?.cancel()
        const elapsed = (Date.now() - started) / 1000
        bar.update(`perf-trace ${id}: recording, ${elapsed.toFixed(1)} s of ${(durationMs / 1000).toFixed(1)} s`)
        await sleep(POLL_MS, io.signal)
      }
    } finally {
      bar.done()
    }
    if (!res.body) throw new CliError('the daemon answered without a body')
    const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>)
    const output = stringOption(values.output) ?? `perf-trace-${id}.json.gz`
    if (output === '-') {
      for await (const chunk of body) await writeOut(io.stdout, chunk as Buffer)
      return 0
    }
    const temp = join(dirname(output), `.${basename(output)}.${process.pid}.part`)
    try {
      await pipeline(body, createWriteStream(temp, { mode: 0o600 }), { signal: io.signal })
      await rename(temp, output)
    } catch (err) {
      await rm(temp, { force: true })
      if ((err as Error).name === 'AbortError') throw err
      throw new CliError(`the download broke off (${(err as Error).message}); nothing was written`)
    }
    const size = Number(res.headers.get('content-length') ?? 0)
    if (io.stderr.isTTY === true) io.stderr.write(`wrote ${output} (${formatBytes(size)}, trace ${id})\n`)
    return 0
  },
)

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(signal.reason as Error)
      },
      { once: true },
    )
  })
}
