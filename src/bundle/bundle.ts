// One idea: a debug bundle, one zip of a time window (events, HAR, console, the agent's actions,
// screenshots, recording frames, source maps, manifest), streamed. Nothing is held whole: every file
// is a stream that reads the log a page at a time only when the zip asks for more bytes, so a reader
// that stops reading stops the reads, and the files go into the zip one after another (each read
// pass starts only when the one before ended). Everything comes from the stored envelopes, which the
// pipeline masked before storing them.
import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { ACTION_CATEGORIES, ActionBuilder, stepsOf } from '../actions/index.js'
import type { Envelope } from '../events/index.js'
import { HarBuilder, HAR_CATEGORIES, type HarStreamBounds } from '../har/index.js'
import type { RedactionPolicy } from '../events/redact.js'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import { ZipStream, type ZipStreamStats } from './zip-stream.js'
import { consoleLine, isoMicros } from './console-text.js'
import { writeSourceMaps, type BundleSourceMaps } from './sourcemaps.js'
import type { BundleFrames, FrameMeta } from './frames.js'
import { oneTrack } from '../util/one-track.js'
import { encodeWebm, findFfmpeg, FFMPEG_INSTALL_HINT, type EncodedWebm } from '../recording/webm.js'
import { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, GapTracker, type BundleManifest } from './manifest.js'
import { readStepSpans } from './steps.js'
import { writePerfTraces, type BundlePerfTraces } from './perf-traces.js'

export type { BundleSourceMaps } from './sourcemaps.js'
export type { BundlePerfTraces } from './perf-traces.js'

/** Where a bundle's contents come from (the daemon's parts, or a test's). */
export interface BundleSource {
  browserId: string
  daemonVersion: string
  log: EventLog
  /** The recording's frame store; absent when the daemon has none (the bundle says recording was off). */
  frames?: BundleFrames
  /** Whether the screen recording is on now. */
  recordingEnabled?: () => boolean
  /** ffmpeg for recording.webm: a path, undefined to look on PATH, null never to encode. */
  ffmpeg?: string | null
  /** Event categories captured now. */
  categories: () => readonly string[]
  redaction: RedactionPolicy
  /** Source maps: console stacks mapped as the events API maps them, and the maps used, in sourcemaps/. */
  sourceMaps?: BundleSourceMaps
  /** Performance traces started in the window go in perf-traces/. */
  perfTraces?: BundlePerfTraces
}

export interface BundleWindow {
  /** Unix microseconds, inclusive. */
  sinceUs: number
  /** Unix microseconds, exclusive; undefined: up to the last event committed when the bundle began. */
  untilUs?: number
  /** The parameters as the caller wrote them, for the manifest. */
  requested?: { since?: string; until?: string }
}

export interface BundleLimits {
  /** Stored bytes one log read materialises at most. */
  readPageBytes: number
  /** Events per log read at most. */
  readPageEvents: number
  /** HAR: bytes of unfinished exchanges held, pages kept, how long a finished exchange waits for its page. */
  har: HarStreamBounds
  /** Dropped-seq gaps listed in the manifest (all are counted). */
  maxListedGaps: number
  /** Recording frames included at most (their index is written after them). */
  maxFrames: number
  /** Records the actions derivation holds at most (one per command and page report, ~250 bytes each). */
  maxActionRecords: number
}

export const DEFAULT_BUNDLE_LIMITS: BundleLimits = {
  readPageBytes: 1024 * 1024,
  readPageEvents: 500,
  har: { maxHeldBytes: 32 * 1024 * 1024, maxPages: 10_000, settleUs: 10_000_000 },
  maxListedGaps: 1000,
  maxFrames: 100_000,
  maxActionRecords: 200_000,
}

/** What a bundle build reports while and after it runs (tests and the bench read it). */
export type BundleStats = ZipStreamStats

export interface BundleBuild {
  /** The zip, to be piped to its reader; it errors (and never ends cleanly) if the build fails. */
  readonly output: Readable
  readonly stats: BundleStats
  /** Resolves with the manifest once the last byte is handed out; rejects when the build failed or was aborted. */
  readonly done: Promise<BundleManifest>
  /** Stops reading and writing; `output` is destroyed. */
  abort(reason?: Error): void
}

/** The file name offered for download: `browser-telemetry-<browser id>-<UTC time>.zip` (or another ending). */
export function bundleFileName(browserId: string, at: Date, ending = '.zip'): string {
  const safe = browserId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64)
  const t = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  return `browser-telemetry-${safe}-${t}${ending}`
}

/** Screenshot bytes are PNG or JPEG; the entry name says which. */
function imageExt(b: Buffer): 'png' | 'jpeg' | 'bin' {
  if (b.length >= 4 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png'
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg'
  return 'bin'
}

export function buildBundle(
  source: BundleSource,
  window: BundleWindow,
  limits: BundleLimits = DEFAULT_BUNDLE_LIMITS,
  now: () => Date = () => new Date(),
): BundleBuild {
  const createdAt = now()
  const createdUs = createdAt.getTime() * 1000
  const zs = new ZipStream(
    source.log,
    window,
    { events: limits.readPageEvents, bytes: limits.readPageBytes },
    createdAt,
    'bundle',
  )
  const { signal, stats, lastSeq, output } = zs
  const abort = (reason?: Error) => zs.abort(reason)
  const records = (categories?: readonly string[]) => zs.records(categories)
  const entry = (
    name: string,
    chunks: Iterable<string | Buffer> | AsyncIterable<string | Buffer> | Readable,
    compress = true,
  ) => zs.entry(name, chunks, compress)

  const manifest: BundleManifest = {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    browser_id: source.browserId,
    daemon_version: source.daemonVersion,
    created_at: createdAt.toISOString(),
    window: {
      since: isoMicros(window.sinceUs),
      until: window.untilUs !== undefined ? isoMicros(window.untilUs) : null,
      since_us: window.sinceUs,
      until_us: window.untilUs ?? null,
      requested: { since: window.requested?.since ?? null, until: window.requested?.until ?? null },
    },
    seq: { first: null, last: null, events: 0, last_committed_at_start: lastSeq },
    gaps: { dropped: [], listed_max: limits.maxListedGaps, total_gaps: 0, total_dropped: 0 },
    recording: { enabled: source.recordingEnabled?.() ?? false, frames: 0, gaps: [], video: null },
    categories: [...source.categories()],
    redaction: {
      ...source.redaction,
      applied:
        'by the daemon before anything was stored: every file of this bundle is made from the stored, masked events',
    },
    files: {
      'events.ndjson': { events: 0 },
      'network.har': { entries: 0, pages: 0, written_early: 0, pages_not_kept: 0 },
      'console.txt': { lines: 0 },
      'actions.json': { actions: 0 },
      screenshots: { files: 0 },
      frames: { files: 0 },
    },
    types: {},
    steps: [],
  }

  /** Scripts whose source map the window's stacks use (filled by the events pass). */
  const mappedScripts = new Set<string>()
  const served = async (page: StoredRecord[]) => (await source.sourceMaps?.mapRecords(page, mappedScripts)) ?? page

  /** events.ndjson: each stored envelope exactly as the events API serves it, one per line. */
  async function* eventsFile(): AsyncGenerator<string> {
    const gaps = new GapTracker(limits.maxListedGaps)
    for await (const stored of records()) {
      const page = await served(stored)
      let chunk = ''
      for (const r of page) {
        gaps.see(r.seq)
        manifest.seq.first ??= r.seq
        manifest.seq.last = r.seq
        manifest.seq.events++
        chunk += r.json + '\n'
        const type = typeOfJson(r.json)
        manifest.types[type] = (manifest.types[type] ?? 0) + 1
      }
      yield chunk
    }
    manifest.files['events.ndjson'].events = manifest.seq.events
    manifest.gaps = {
      dropped: gaps.dropped,
      listed_max: limits.maxListedGaps,
      total_gaps: gaps.totalGaps,
      total_dropped: gaps.totalDropped,
    }
  }

  /** network.har: entries written as their exchanges end; the pages (with load timings) last. */
  async function* harFile(): AsyncGenerator<string> {
    const har = new HarBuilder(limits.har)
    const creator = { name: 'browser-telemetry', version: source.daemonVersion }
    const comment = `browser ${source.browserId}, ${manifest.window.since} to ${manifest.window.until ?? `seq ${lastSeq}`}, debug bundle`
    yield `{"log":{"version":"1.2","creator":${JSON.stringify(creator)},"comment":${JSON.stringify(comment)},"entries":[`
    let n = 0
    const write = (entries: readonly object[]) => {
      let s = ''
      for (const e of entries) s += (n++ === 0 ? '\n' : ',\n') + JSON.stringify(e)
      return s
    }
    for await (const page of records(HAR_CATEGORIES)) {
      for (const r of page) har.add(JSON.parse(r.json) as Envelope, r.json.length)
      const s = write(har.ready())
      if (s) yield s
    }
    const rest = har.finish()
    yield write(rest.entries) + `\n],"pages":${JSON.stringify(rest.pages)}}}\n`
    manifest.files['network.har'] = {
      entries: n,
      pages: rest.pages.length,
      written_early: har.writtenEarly,
      pages_not_kept: har.pagesNotKept,
    }
  }

  async function* consoleFile(): AsyncGenerator<string> {
    for await (const stored of records(['console'])) {
      const page = await served(stored)
      let chunk = ''
      for (const r of page) {
        const line = consoleLine(JSON.parse(r.json) as Envelope)
        if (line === undefined) continue
        chunk += line + '\n'
        manifest.files['console.txt'].lines++
      }
      if (chunk) yield chunk
    }
  }

  /** actions.json: the agent's actions of the window (src/actions), one per line; the steps go to the manifest. */
  async function* actionsFile(): AsyncGenerator<string> {
    const builder = new ActionBuilder()
    const stepEvents: Envelope[] = []
    read: for await (const page of records(ACTION_CATEGORIES)) {
      for (const r of page) {
        if (builder.size >= limits.maxActionRecords) {
          manifest.files['actions.json'].cut_at_seq = r.seq
          break read
        }
        const e = JSON.parse(r.json) as Envelope
        builder.add(e)
        if (e.event.type === 'agent_step_started' || e.event.type === 'agent_step_finished') stepEvents.push(e)
      }
    }
    const actions = builder.finish()
    manifest.steps = stepsOf(stepEvents)
    manifest.files['actions.json'].actions = actions.length
    yield '['
    for (let i = 0; i < actions.length; i += 500) {
      let chunk = ''
      for (const a of actions.slice(i, i + 500)) chunk += (chunk === '' && i === 0 ? '\n' : ',\n') + JSON.stringify(a)
      yield chunk
    }
    yield '\n]\n'
  }

  /** sourcemaps/: the maps the window's stacks use, and their index. */
  async function sourceMapFiles(): Promise<void> {
    if (!source.sourceMaps || mappedScripts.size === 0) return
    const files = await writeSourceMaps(source.sourceMaps, mappedScripts, entry, signal)
    manifest.files.sourcemaps = { files }
  }

  async function screenshots(): Promise<void> {
    for await (const page of records(['screenshot'])) {
      for (const r of page) {
        const e = JSON.parse(r.json) as Envelope
        if (e.event.type !== 'monitor_screenshot') continue
        const bytes = Buffer.from(e.event.data.png, 'base64')
        await entry(`screenshots/${e.seq}.${imageExt(bytes)}`, [bytes], false)
        manifest.files.screenshots.files++
      }
    }
  }

  /** frames/<id>.jpg for every frame of the window still stored, then frames/index.json listing them. */
  async function frames(): Promise<FrameMeta[]> {
    const included: FrameMeta[] = []
    const store = source.frames
    if (store) {
      const untilUs = window.untilUs ?? createdUs
      let cursor: number | undefined
      outer: for (;;) {
        signal.throwIfAborted()
        const page = store.list({ sinceUs: window.sinceUs, untilUs, limit: 100, ...(cursor ? { cursor } : {}) })
        for (const meta of page.items) {
          if (meta.after_seq > lastSeq || included.length >= limits.maxFrames) break outer
          const bytes = await store.read(meta.frame_id)
          signal.throwIfAborted()
          if (!bytes) continue // removed by retention since it was listed
          await entry(`frames/${meta.frame_id}.jpg`, [bytes], false)
          included.push(meta)
        }
        if (!page.hasMore || page.nextCursor === 0 || page.items.length === 0) break
        cursor = page.nextCursor
      }
      manifest.recording.gaps = store.gaps().filter(g => g.ts >= window.sinceUs && g.ts < untilUs)
    }
    manifest.recording.frames = included.length
    manifest.files.frames.files = included.length
    await entry('frames/index.json', [JSON.stringify(included)])
    return included
  }

  /** recording.webm: the frames encoded at their real timing, a chapter per top-level agent step, when ffmpeg is on PATH. */
  async function video(included: FrameMeta[]): Promise<void> {
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
        lastSeq,
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
      await entry('recording.webm', createReadStream(file), false)
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

  const done = (async () => {
    try {
      await entry('events.ndjson', eventsFile())
      await entry('network.har', harFile())
      await entry('console.txt', consoleFile())
      await entry('actions.json', actionsFile())
      await sourceMapFiles()
      await screenshots()
      if (source.perfTraces)
        manifest.files['perf-traces'] = { files: await writePerfTraces(source.perfTraces, window, entry) }
      await video(await frames())
      await entry('manifest.json', [JSON.stringify(manifest, null, 2) + '\n'])
      await zs.end()
      return manifest
    } catch (err) {
      // After the headers went out the only honest signal is a broken stream: never a valid-looking
      // truncated zip (the central directory is written only by zip.end()).
      abort(err as Error)
      throw err
    }
  })()
  done.catch(() => {}) // the caller may not wait for it; output carries the failure
  return { output, stats, done, abort }
}

/** The event type of a stored envelope; the pipeline writes ts then type first, so parsing is rarely needed. */
function typeOfJson(json: string): string {
  const m = /^\{"seq":\d+,"event":\{"ts":-?\d+,"type":"([a-z0-9_]{1,64})"/.exec(json)
  if (m) return m[1]!
  try {
    return String((JSON.parse(json) as Envelope).event.type)
  } catch {
    return 'unknown'
  }
}
