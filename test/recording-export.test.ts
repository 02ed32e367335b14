// `browser-telemetry recording export`: frames through the API into a WebM that ffprobe reads with
// the expected frame count, duration and per-frame timing; progress only on a terminal; without
// ffmpeg on PATH it says how to install it.
import t, { type Test } from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { FrameStore } from '../src/recording/frame-store.js'
import { RecordingSwitch } from '../src/recording/switch.js'
import { registerRecordingRoutes } from '../src/api/routes/recording.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import { encodeWebm } from '../src/recording/webm.js'
import { startApi, BROWSER_ID, TOKEN } from './helpers/api.js'
import { tempDir } from './helpers/store.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..')

function capture(env: NodeJS.ProcessEnv, tty = false) {
  let out = ''
  let err = ''
  const io: CliIO = {
    stdout: { write: c => ((out += String(c)), true) },
    stderr: { write: c => ((err += String(c)), true), isTTY: tty },
    env,
  }
  return { io, out: () => out, err: () => err }
}

/** A solid-colour JPEG of w x h from ffmpeg. */
function colorJpeg(color: string, w = 320, h = 240): Buffer {
  return execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `color=c=${color}:s=${w}x${h}:d=0.04`,
    '-frames:v',
    '1',
    '-f',
    'mjpeg',
    'pipe:1',
  ])
}

/** Frame offsets in ms: irregular, as a real recording's are. */
const OFFSETS_MS = [0, 200, 400, 1400, 1600, 3100, 3300, 3500, 5200, 6000]
const COLORS = ['red', 'green', 'blue', 'yellow', 'white', 'black', 'gray', 'cyan', 'magenta', 'orange']

async function setup(t: Test) {
  const store = await FrameStore.open({ dir: await tempDir(t), maxBytes: 64 * 1024 * 1024, maxPendingFrames: 100 })
  t.teardown(() => store.close())
  const start = Date.now() * 1000 - 120_000_000
  OFFSETS_MS.forEach((ms, i) =>
    store.add({
      ts: start + ms * 1000,
      target_id: 'PAGE',
      after_seq: i,
      // One frame of another size: letterboxed into the video.
      ...(i === 5
        ? { width: 160, height: 120, jpeg: colorJpeg(COLORS[i]!, 160, 120) }
        : { width: 320, height: 240, jpeg: colorJpeg(COLORS[i]!) }),
    }),
  )
  await store.flush()
  const recording = new RecordingSwitch(true)
  const api = await startApi(t, {
    deps: {
      recording,
      routes: [
        r =>
          registerRecordingRoutes(r, {
            frames: store,
            recording,
            get log() {
              return api.log
            },
          }),
      ],
    },
  })
  return { api, start }
}

async function probe(file: string) {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-count_frames',
    '-show_entries',
    'format=duration,format_name:stream=codec_name,width,height,nb_read_frames',
    '-of',
    'json',
    file,
  ])
  const p = JSON.parse(stdout) as {
    format: { duration: string; format_name: string }
    streams: { codec_name: string; width: number; height: number; nb_read_frames: string }[]
  }
  const { stdout: pts } = await run('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'packet=pts_time',
    '-of',
    'csv=p=0',
    file,
  ])
  return { ...p, pts: pts.trim().split('\n').map(Number) }
}

t.test('export: a WebM with every frame at its real time, the last held for 1 s', async t => {
  const { api } = await setup(t)
  const dir = await tempDir(t)
  const out = join(dir, 'session.webm')
  const c = capture({ PATH: process.env.PATH })
  const code = await clientCommands.recording!.run(
    ['export', '--url', api.url, '--token', TOKEN, '--browser-id', BROWSER_ID, '--since', '1h', '-o', out],
    c.io,
  )
  t.equal(code, 0, c.err())
  t.equal(c.err().includes('\r'), false, 'no progress line when stderr is not a terminal')
  t.match(c.err(), /^wrote 11 frames, 7\.0 s of video, 0 chapters \(.*\) to .*session\.webm\n$/)
  const p = await probe(out)
  t.match(p.format.format_name, /webm|matroska/)
  t.equal(p.streams[0]!.codec_name, 'vp8')
  t.same([p.streams[0]!.width, p.streams[0]!.height], [320, 240], 'the largest frame size')
  t.equal(Number(p.streams[0]!.nb_read_frames), OFFSETS_MS.length + 1, 'every frame, plus the closing copy of the last')
  const duration = Number(p.format.duration)
  t.ok(Math.abs(duration - 7.0) <= 1, `duration ${duration} s ≈ 6.0 s of frames + 1 s held`)
  t.ok(Math.abs(duration - 7.0) <= 0.05, `and in fact within 50 ms (${duration})`)
  t.same(
    p.pts.slice(0, OFFSETS_MS.length).map(s => Math.round(s * 1000)),
    OFFSETS_MS,
    'each frame at its own time (ms)',
  )
})

t.test('export on a terminal shows frames done and the elapsed time', async t => {
  const { api } = await setup(t)
  const out = join(await tempDir(t), 'tty.webm')
  const c = capture({ PATH: process.env.PATH }, true)
  const code = await clientCommands.recording!.run(
    ['export', '--url', api.url, '--token', TOKEN, '--browser-id', BROWSER_ID, '--since', '1h', '-o', out],
    c.io,
  )
  t.equal(code, 0, c.err())
  // eslint-disable-next-line no-control-regex -- the progress line starts with ESC [2K
  t.match(c.err(), /\r\x1b\[2K(listed|fetched|encoded) \d+(\/\d+)? frames, \d+\.\d s/)
})

t.test('usage and empty windows', async t => {
  const { api } = await setup(t)
  const base = ['export', '--url', api.url, '--token', TOKEN, '--browser-id', BROWSER_ID]
  const noOut = capture({ PATH: process.env.PATH })
  t.equal(await clientCommands.recording!.run(base, noOut.io), 2)
  t.match(noOut.err(), /-o FILE is required/)
  const empty = capture({ PATH: process.env.PATH })
  t.equal(
    await clientCommands.recording!.run([...base, '--since', '10s', '-o', join(await tempDir(t), 'x.webm')], empty.io),
    1,
  )
  t.match(empty.err(), /no recording frames in the window/)
  const help = capture({})
  t.equal(await clientCommands.recording!.run(['--help'], help.io), 0)
  t.match(help.out(), /export/)
})

t.test('without ffmpeg on PATH: a non-zero exit and how to install it (the real command line)', async t => {
  const { api } = await setup(t)
  // A PATH with node and nothing else: no ffmpeg.
  const bin = await tempDir(t)
  await symlink(process.execPath, join(bin, 'node'))
  const c = capture({ PATH: bin })
  t.equal(
    await clientCommands.recording!.run(
      ['export', '--url', api.url, '--token', TOKEN, '--browser-id', BROWSER_ID, '-o', join(bin, 'x.webm')],
      c.io,
    ),
    1,
  )
  t.match(
    c.err(),
    /^browser-telemetry recording export: ffmpeg was not found on PATH; install it with `apt-get install ffmpeg`/,
  )
  const child = await run(
    join(bin, 'node'),
    [
      join(root, 'dist/src/cli.js'),
      'recording',
      'export',
      '--url',
      api.url,
      '--token',
      TOKEN,
      '-o',
      join(bin, 'y.webm'),
    ],
    { env: { PATH: bin } },
  ).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  )
  t.equal(child.code, 1, 'exit code 1')
  t.match(child.stderr, /apt-get install ffmpeg/)
  await t.rejects(
    encodeWebm({
      frames: [{ ts: 0, width: 2, height: 2 }],
      jpeg: async () => new Uint8Array(),
      output: join(bin, 'z.webm'),
      ffmpeg: join(bin, 'nope'),
    }),
    /ffmpeg|ENOENT/,
  )
})
