// `browser-telemetry recording export`: the screen recording of a time window as a WebM video. Frames
// come through the API (GET /browsers/{id}/recording/frames, then each JPEG), the top-level agent
// steps of the same window from GET /browsers/{id}/recording/chapters (one chapter each), the
// encoding is src/recording/webm.ts (Debian's ffmpeg), at the frames' real timing.
import { stringOption } from './args.js'
import { ApiResponseError, pages, type ApiClient } from './client.js'
import { defineCommand, fail, type ClientCommand } from './command.js'
import { CliError, processIO, usageError, type CliIO } from './io.js'
import { formatBytes, progress } from './progress.js'
import { WINDOW_OPTIONS } from './read.js'
import type { StepSpan } from '../recording/chapters.js'
import { encodeWebm, findFfmpeg, FFMPEG_INSTALL_HINT, type WebmFrame } from '../recording/webm.js'

interface FrameItem extends WebmFrame {
  frame_id: number
}

const exportCmd = defineCommand(
  {
    name: 'recording export',
    summary: 'Encode the screen recording of a time window as a WebM video (needs ffmpeg).',
    options: {
      ...WINDOW_OPTIONS,
      output: { type: 'string', short: 'o', arg: 'FILE', help: 'The WebM file to write (required)' },
    },
    notes: [
      'Frames are shown at their real timing; the last one stays for 1 s. Frames of several pages',
      '(one visible tab per window) are interleaved in time order. Each top-level agent step of the',
      'window is a chapter, titled with its name (ffprobe -show_chapters lists them).',
      '',
      'Example:',
      '  browser-telemetry recording export --since 15m -o session.webm',
    ],
  },
  async ({ values }, client, io) => {
    const output = stringOption(values.output)
    if (output === undefined || output === '' || output === '-')
      throw usageError('-o FILE is required (a WebM file; the video cannot go to standard output)')
    const ffmpeg = await findFfmpeg(io.env)
    if (!ffmpeg) throw new CliError(`ffmpeg was not found on PATH; ${FFMPEG_INSTALL_HINT}`)
    const started = Date.now()
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`
    const bar = progress(io.stderr)
    try {
      const path = await client.browserPath('/recording/frames')
      const frames: FrameItem[] = []
      const query = { since: stringOption(values.since), until: stringOption(values.until), limit: '1000' }
      for await (const page of pages<FrameItem>(client, path, query, io.signal)) {
        frames.push(...page)
        bar.update(`listed ${frames.length} frames, ${elapsed()}`)
      }
      if (frames.length === 0)
        throw new CliError(
          'no recording frames in the window (is recording on? --recording, or {"recording": {"enabled": true}} in PATCH /browsers/{id}/telemetry)',
        )
      const steps = await windowSteps(client, query.since, query.until, io.signal, note => {
        bar.done()
        io.stderr.write(note + '\n')
      })
      let fetched = 0
      const result = await encodeWebm({
        frames,
        steps,
        ffmpeg,
        output,
        signal: io.signal,
        jpeg: async i => {
          const res = await client.request('GET', `${path}/${frames[i]!.frame_id}`, { signal: io.signal })
          fetched += 1
          return new Uint8Array(await res.arrayBuffer())
        },
        onProgress: p =>
          bar.update(
            p.phase === 'fetch'
              ? `fetched ${fetched}/${frames.length} frames, ${elapsed()}`
              : `encoded ${p.done}/${p.total} frames, ${elapsed()}`,
          ),
      })
      bar.done()
      io.stderr.write(
        `wrote ${result.frames} frames, ${(result.durationMs / 1000).toFixed(1)} s of video, ${result.chapters} chapters (${formatBytes(result.bytes)}) to ${output}\n`,
      )
    } finally {
      bar.done()
    }
  },
)

/** The window's top-level agent steps; none (said on stderr) from a daemon that does not serve them. */
async function windowSteps(
  client: ApiClient,
  since: string | undefined,
  until: string | undefined,
  signal: AbortSignal | undefined,
  note: (text: string) => void,
): Promise<StepSpan[]> {
  try {
    const body = await client.json<{ chapters: StepSpan[]; omitted: number }>(
      'GET',
      await client.browserPath('/recording/chapters'),
      { query: { since, until }, signal },
    )
    if (body.omitted > 0) note(`${body.omitted} agent steps beyond the first ${body.chapters.length} have no chapter`)
    // Only well-formed items: a step the video cannot place is left out, never a broken export.
    return (Array.isArray(body.chapters) ? body.chapters : []).filter(
      s =>
        typeof s?.step_id === 'string' &&
        typeof s.name === 'string' &&
        Number.isFinite(s.start_ts) &&
        (s.end_ts === undefined || Number.isFinite(s.end_ts)),
    )
  } catch (err) {
    if (!(err instanceof ApiResponseError) || err.status !== 404) throw err
    note('the daemon does not list agent steps (an older version): the video has no chapters')
    return []
  }
}

export const recordingSubcommands = { export: exportCmd }

const RECORDING_HELP = [
  'Usage: browser-telemetry recording <command> [options]',
  '',
  'The screen recording of the browser (recorded with serve --recording, or switched on at runtime).',
  '',
  'Commands:',
  ...Object.entries(recordingSubcommands).map(([n, c]) => `  ${n.padEnd(10)}${c.summary}`),
  '',
  'Run `browser-telemetry recording <command> --help` for its options.',
  '',
].join('\n')

export const recordingCommand: ClientCommand = {
  summary: 'The screen recording: export a window as a WebM video.',
  async run(argv, io: CliIO = processIO()) {
    const [sub, ...rest] = argv
    if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
      io.stdout.write(RECORDING_HELP)
      return sub === undefined ? 2 : 0
    }
    const cmd = (recordingSubcommands as Record<string, ClientCommand>)[sub]
    if (!cmd) return fail('recording', usageError(`unknown command ${JSON.stringify(sub)} (export)`), io)
    return cmd.run(rest, io)
  },
}
