// The entries of a debug bundle copied from the daemon's other stores: sourcemaps/, perf-traces/,
// frames/ (the recording's frame store) and recording.webm encoded from those frames.
import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeWebm, findFfmpeg, FFMPEG_INSTALL_HINT, type EncodedWebm } from '../recording/webm.js'
import { oneTrack } from '../util/one-track.js'
import type { BundleContext } from './context.js'
import type { FrameMeta } from './frames.js'
import { writePerfTraces } from './perf-traces.js'
import { writeSourceMaps } from './sourcemaps.js'
import { readStepSpans } from './steps.js'

/** sourcemaps/: the maps the window's stacks use (known once events.ndjson is written), and their index. */
export async function sourceMapFiles(ctx: BundleContext): Promise<void> {
  const { source } = ctx
  if (!source.sourceMaps || ctx.mappedScripts.size === 0) return
  const files = await writeSourceMaps(source.sourceMaps, ctx.mappedScripts, ctx.entry, ctx.signal)
  ctx.manifest.files.sourcemaps = { files }
}

/** perf-traces/: the performance traces started in the window, when the daemon keeps them. */
export async function perfTraceFiles(ctx: BundleContext): Promise<void> {
  if (ctx.source.perfTraces)
    ctx.manifest.files['perf-traces'] = { files: await writePerfTraces(ctx.source.perfTraces, ctx.window, ctx.entry) }
}

/** frames/<id>.jpg for every frame of the window still stored, then frames/index.json listing them. */
export async function frameFiles(ctx: BundleContext): Promise<void> {
  const { manifest, window, signal } = ctx
  const included: FrameMeta[] = []
  const store = ctx.source.frames
  if (store) {
    const untilUs = window.untilUs ?? ctx.createdUs
    let cursor: number | undefined
    outer: for (;;) {
      signal.throwIfAborted()
      const page = store.list({ sinceUs: window.sinceUs, untilUs, limit: 100, ...(cursor ? { cursor } : {}) })
      for (const meta of page.items) {
        if (meta.after_seq > ctx.lastSeq || included.length >= ctx.limits.maxFrames) break outer
        const bytes = await store.read(meta.frame_id)
        signal.throwIfAborted()
        if (!bytes) continue // removed by retention since it was listed
        await ctx.entry(`frames/${meta.frame_id}.jpg`, [bytes], false)
        included.push(meta)
      }
      if (!page.hasMore || page.nextCursor === 0 || page.items.length === 0) break
      cursor = page.nextCursor
    }
    manifest.recording.gaps = store.gaps().filter(g => g.ts >= window.sinceUs && g.ts < untilUs)
  }
  manifest.recording.frames = included.length
  manifest.files.frames.files = included.length
  await ctx.entry('frames/index.json', [JSON.stringify(included)])
  ctx.framesIncluded = included
}

/** recording.webm: the frames encoded at their real timing, a chapter per top-level agent step, when ffmpeg is on PATH. */
export async function videoFile(ctx: BundleContext): Promise<void> {
  const { manifest, source, window, signal, limits } = ctx
  const included = ctx.framesIncluded
  const store = source.frames
  if (!store || included.length === 0) {
    manifest.recording.video_note = 'no recording frames in this window'
    return
  }
  // One tab's frames: two visible tabs' would alternate in one video.
  const track = oneTrack(included)
  const ffmpeg = source.ffmpeg === null ? undefined : (source.ffmpeg ?? (await findFfmpeg()))
  if (!ffmpeg) {
    manifest.recording.video_note = `ffmpeg was not on the daemon's PATH; ${FFMPEG_INSTALL_HINT}`
    return
  }
  const dir = await mkdtemp(join(tmpdir(), 'bt-bundle-video-'))
  try {
    const file = join(dir, 'recording.webm')
    const { steps } = await readStepSpans(source.log, {
      sinceUs: window.sinceUs,
      ...(window.untilUs !== undefined ? { untilUs: window.untilUs } : {}),
      lastSeq: ctx.lastSeq,
      signal,
      pageEvents: limits.readPageEvents,
      pageBytes: limits.readPageBytes,
    })
    let encoded: EncodedWebm
    try {
      encoded = await encodeWebm({
        frames: track,
        steps,
        jpeg: async i => {
          const bytes = await store.read(track[i]!.frame_id)
          if (!bytes) throw new Error(`frame ${track[i]!.frame_id} was removed by retention during the export`)
          return bytes
        },
        output: file,
        ffmpeg,
        tmpDir: dir,
        signal,
      })
    } catch (err) {
      signal.throwIfAborted()
      // The frames are in the bundle either way; a video that could not be made is only noted.
      manifest.recording.video_note = `recording.webm could not be encoded: ${(err as Error).message}`
      return
    }
    await ctx.entry('recording.webm', createReadStream(file), false)
    manifest.recording.video = 'recording.webm'
    const shown = track[0]?.target_id
    if (shown !== undefined) manifest.recording.video_target_id = shown
    manifest.files['recording.webm'] = {
      frames: encoded.frames,
      duration_ms: encoded.durationMs,
      bytes: encoded.bytes,
      chapters: encoded.chapters,
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
