// `browser-telemetry tail`: follow GET /browsers/{id}/telemetry/stream. On any disconnect (daemon
// restart, network blip, slow-client cut-off) it reconnects with Last-Event-ID = the last seq it
// received, so nothing is printed twice and nothing is skipped while the daemon still holds it.
import { setTimeout as delay } from 'node:timers/promises'
import { EVENT_TYPES, type Envelope } from '../events/index.js'
import { intOption, listOption } from './args.js'
import { ApiResponseError } from './client.js'
import { defineCommand } from './command.js'
import { formatEnvelope } from './format.js'
import { CliError, usageError, useColor, writeOut } from './io.js'
import { categoriesOption } from './read.js'
import { SseParser, type SseMessage } from './sse.js'

const INITIAL_BACKOFF_MS = 250
const MAX_BACKOFF_MS = 5000

export const tailCommand = defineCommand(
  {
    name: 'tail',
    summary:
      'Follow the live telemetry stream: one readable line per event (NDJSON with --json); resumes after reconnects.',
    options: {
      json: { type: 'boolean', help: 'Print envelopes as NDJSON instead of readable lines' },
      category: { type: 'string', multiple: true, arg: 'NAME', help: 'Only these categories, comma-separated' },
      type: {
        type: 'string',
        multiple: true,
        arg: 'TYPE',
        help: 'Only these event types, comma-separated (e.g. console_error,network_loading_failed)',
      },
      replay: { type: 'boolean', help: 'Start with every retained event instead of only new ones' },
      'after-seq': {
        type: 'string',
        arg: 'SEQ',
        help: 'Start after this seq (sent as Last-Event-ID; wins over --replay)',
      },
      count: { type: 'string', arg: 'N', help: 'Exit after printing N events' },
    },
    notes: [
      'Colour is used on a terminal unless NO_COLOR is set (FORCE_COLOR=1 forces it). Ctrl-C stops.',
      'Examples:',
      '  browser-telemetry tail --category console,network',
      '  browser-telemetry tail --json --type network_loading_failed | jq .event.data.error_text',
    ],
  },
  async ({ values }, client, io) => {
    const categories = new Set(categoriesOption(values.category))
    const types = new Set(listOption(values.type))
    for (const t of types)
      if (!(EVENT_TYPES as string[]).includes(t)) throw usageError(`--type: unknown event type ${JSON.stringify(t)}`)
    const count = intOption(values.count, 'count')
    let lastSeq = intOption(values['after-seq'], 'after-seq', 0)
    const replay = values.replay === true
    const json = values.json === true
    const color = !json && useColor(io.stdout, io.env)

    // Ctrl-C ends a terminal session cleanly (exit 0); tests pass their own signal.
    const abort = new AbortController()
    const onSigint = () => abort.abort()
    if (io.signal) io.signal.addEventListener('abort', onSigint, { once: true })
    else process.once('SIGINT', onSigint)
    const signal = abort.signal

    const path = await client.browserPath('/telemetry/stream')
    let printed = 0
    let connectedOnce = false
    let backoff = INITIAL_BACKOFF_MS
    try {
      while (!signal.aborted) {
        try {
          const headers: Record<string, string> = { accept: 'text/event-stream' }
          if (lastSeq !== undefined) headers['last-event-id'] = String(lastSeq)
          const res = await client.request('GET', path, {
            headers,
            query: { replay: lastSeq === undefined && replay ? 'all' : undefined },
            signal,
          })
          if (connectedOnce)
            io.stderr.write(`tail: reconnected${lastSeq !== undefined ? `, resuming after seq ${lastSeq}` : ''}\n`)
          connectedOnce = true
          backoff = INITIAL_BACKOFF_MS
          const inbox: SseMessage[] = []
          const parser = new SseParser(m => inbox.push(m))
          const decoder = new TextDecoder()
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            parser.push(decoder.decode(chunk, { stream: true }))
            let out = ''
            for (const m of inbox.splice(0)) {
              let env: Envelope
              try {
                env = JSON.parse(m.data) as Envelope
              } catch {
                throw new CliError(`stream sent a frame that is not JSON: ${m.data.slice(0, 80)}`)
              }
              // The resume point is the last seq received, whether or not the filters print it.
              if (lastSeq !== undefined && env.seq > lastSeq + 1) {
                io.stderr.write(
                  `tail: seq ${lastSeq + 1}${env.seq - 1 > lastSeq + 1 ? `..${env.seq - 1}` : ''} missing (dropped, or removed by retention while disconnected)\n`,
                )
              }
              lastSeq = env.seq
              if (categories.size > 0 && !categories.has(env.event.category)) continue
              if (types.size > 0 && !types.has(env.event.type)) continue
              out += (json ? m.data : formatEnvelope(env, color)) + '\n'
              if (count !== undefined && ++printed >= count) break
            }
            if (out) await writeOut(io.stdout, out)
            if (count !== undefined && printed >= count) return 0
          }
          if (signal.aborted) break
          io.stderr.write('tail: stream ended by the daemon; reconnecting\n')
        } catch (err) {
          if (signal.aborted) break
          // Client errors (bad token, unknown browser) will not heal by retrying.
          if (err instanceof ApiResponseError && err.status < 500) throw err
          if (err instanceof CliError && !(err instanceof ApiResponseError) && !connectedOnce) throw err
          if (err instanceof CliError && err.code !== 1) throw err
          io.stderr.write(`tail: ${(err as Error).message.split('\n')[0]}; retrying in ${backoff} ms\n`)
        }
        await delay(backoff, undefined, { signal }).catch(() => undefined)
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)
      }
      return 0
    } finally {
      process.off('SIGINT', onSigint)
      io.signal?.removeEventListener('abort', onSigint)
    }
  },
)
