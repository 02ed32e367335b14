// Encodes recording frames into a WebM (VP8) with Debian's ffmpeg, at their real timing: each frame
// is shown from its ts until the next frame's, the last one for `holdLastMs` more. A leaf: Node and
// ffmpeg only, no daemon or CLI imports, so both `browser-telemetry recording export` and the debug
// bundle (recording.webm) call it; the caller says where each frame's JPEG comes from.
//
// How: the JPEGs go to a temp folder, an ffconcat list gives each its duration (at 1 ms precision:
// `option framerate 1000` per file, since the image demuxer's default 25 fps would round every
// timestamp to 40 ms), and ffmpeg encodes with variable frame rate. ffconcat ignores the last
// file's duration, so the last frame is listed once more at the end of the hold: the video has
// frames.length + 1 frames and lasts (last ts - first ts) + holdLastMs. Each frame's time is its ts
// from the first one rounded to the ms (durations are differences of those, so rounding never
// accumulates), and the chapters (chapters.ts, one per top-level agent step) are placed on the same
// clock: an FFMETADATA file as a second input, its chapters mapped into the WebM.
import { spawn } from 'node:child_process'
import { constants } from 'node:fs'
import { access, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { chaptersOf, ffmetadata, type StepSpan } from './chapters.js'

/** What a user without ffmpeg is told. */
export const FFMPEG_INSTALL_HINT = 'install it with `apt-get install ffmpeg` (Debian/Ubuntu), or put it on PATH'

export class FfmpegNotFoundError extends Error {
  constructor() {
    super(`ffmpeg was not found on PATH; ${FFMPEG_INSTALL_HINT}`)
    this.name = 'FfmpegNotFoundError'
  }
}

/** The ffmpeg executable on PATH (or the one given), else undefined. */
export async function findFfmpeg(env: NodeJS.ProcessEnv = process.env, name = 'ffmpeg'): Promise<string | undefined> {
  if (name.includes('/')) return (await isExecutable(name)) ? name : undefined
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    const p = join(dir, name)
    if (await isExecutable(p)) return p
  }
  return undefined
}

async function isExecutable(p: string): Promise<boolean> {
  try {
    await access(p, constants.X_OK)
    return (await stat(p)).isFile()
  } catch {
    return false
  }
}

export interface WebmFrame {
  /** Unix µs (the frame store's ts). */
  ts: number
  /** JPEG pixels (the output is the largest of them; smaller frames are letterboxed). */
  width: number
  height: number
}

export interface WebmProgress {
  /** fetch: JPEGs written to the temp folder; encode: frames ffmpeg has encoded. */
  phase: 'fetch' | 'encode'
  done: number
  total: number
}

export interface EncodeWebmOptions {
  /** Oldest first (ts non-decreasing). */
  frames: readonly WebmFrame[]
  /** The JPEG of frames[index]; called once per frame, in order. */
  jpeg: (index: number) => Promise<Uint8Array>
  /** The WebM file to write (replaced). */
  output: string
  /** The top-level agent steps of the window: one chapter each (clamped to the video; outside ones dropped). */
  steps?: readonly StepSpan[]
  /** How long the last frame stays on screen (default 1000 ms). */
  holdLastMs?: number
  /** ffmpeg executable (default: found on PATH). */
  ffmpeg?: string
  /** Where the temp folder goes (default the OS temp dir). */
  tmpDir?: string
  signal?: AbortSignal
  onProgress?: (p: WebmProgress) => void
}

export interface EncodedWebm {
  /** Frames in the video (frames.length + 1: the closing copy of the last frame). */
  frames: number
  durationMs: number
  bytes: number
  /** Chapters written (steps inside the video's span). */
  chapters: number
}

export async function encodeWebm(o: EncodeWebmOptions): Promise<EncodedWebm> {
  if (o.frames.length === 0) throw new Error('no recording frames in the window')
  const ffmpeg = o.ffmpeg ?? (await findFfmpeg())
  if (!ffmpeg) throw new FfmpegNotFoundError()
  const hold = Math.max(1, Math.round(o.holdLastMs ?? 1000))
  const dir = await mkdtemp(join(o.tmpDir ?? tmpdir(), 'bt-webm-'))
  try {
    const n = o.frames.length
    const first = o.frames[0]!.ts
    let list = 'ffconcat version 1.0\n'
    let width = 2
    let height = 2
    // The ms of the video each frame starts at: non-decreasing by at least 1 ms per frame.
    let at = 0
    for (let i = 0; i < n; i++) {
      o.signal?.throwIfAborted()
      const f = o.frames[i]!
      const name = `${String(i).padStart(8, '0')}.jpg`
      await writeFile(join(dir, name), await o.jpeg(i))
      width = Math.max(width, f.width)
      height = Math.max(height, f.height)
      const next = o.frames[i + 1]
      const nextAt = next ? Math.max(at + 1, Math.round((next.ts - first) / 1000)) : at + hold
      list += `file ${name}\noption framerate 1000\nduration ${((nextAt - at) / 1000).toFixed(3)}\n`
      if (!next) list += `file ${name}\noption framerate 1000\n`
      at = nextAt
      o.onProgress?.({ phase: 'fetch', done: i + 1, total: n })
    }
    const durationMs = at
    const chapters = chaptersOf(o.steps ?? [], first, durationMs)
    if (chapters.length > 0) await writeFile(join(dir, 'chapters.ffmeta'), ffmetadata(chapters))
    await writeFile(join(dir, 'frames.ffconcat'), list)
    // Even sizes (yuv420p); frames of another size are scaled to fit and letterboxed.
    width += width % 2
    height += height % 2
    const args = [
      '-hide_banner',
      '-loglevel',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'concat',
      '-safe',
      '0',
      '-i',
      join(dir, 'frames.ffconcat'),
      ...(chapters.length > 0
        ? ['-f', 'ffmetadata', '-i', join(dir, 'chapters.ffmeta'), '-map', '0:v', '-map_chapters', '1']
        : []),
      '-vf',
      `scale=${width}:${height}:force_original_aspect_ratio=decrease,pad=${width}:${height}:-1:-1,format=yuv420p`,
      '-fps_mode',
      'vfr',
      '-c:v',
      'libvpx',
      '-b:v',
      '2M',
      '-crf',
      '10',
      '-deadline',
      'realtime',
      '-cpu-used',
      '8',
      '-an',
      '-progress',
      'pipe:1',
      '-nostats',
      '-f',
      'webm',
      o.output,
    ]
    await runFfmpeg(ffmpeg, args, n + 1, o)
    return { frames: n + 1, durationMs, bytes: (await stat(o.output)).size, chapters: chapters.length }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function runFfmpeg(ffmpeg: string, args: string[], total: number, o: EncodeWebmOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'pipe', 'pipe'], signal: o.signal })
    let err = ''
    let out = ''
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 4000) err += String(d)
    })
    // -progress: key=value lines, a block per update; frame=N is what is encoded so far.
    child.stdout.on('data', (d: Buffer) => {
      out += String(d)
      const lines = out.split('\n')
      out = lines.pop()!
      for (const l of lines) {
        const m = /^frame=(\d+)/.exec(l)
        if (m) o.onProgress?.({ phase: 'encode', done: Math.min(total, Number(m[1])), total })
      }
    })
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (code === 0) resolve()
      else
        reject(
          new Error(
            `ffmpeg failed (${signal ?? `exit ${code}`}): ${err.trim().split('\n').slice(-3).join(' / ') || 'no message'}`,
          ),
        )
    })
  })
}
