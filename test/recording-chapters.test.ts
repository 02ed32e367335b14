// Chapters in the exported WebM: one per top-level agent step, titled with its name, placed on the
// video's clock (ms from its first frame), clamped to the video, nested steps and steps outside it
// left out; hostile names (line breaks, FFMETADATA syntax, 10,000 characters, unicode) neither break
// the export nor add metadata. Real ffmpeg and ffprobe, through `recording export` (the CLI over the
// API) and the debug bundle's recording.webm; the pure parts (placing, escaping) by exact values.
import t, { type Test } from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { BundleManifest } from '../src/bundle/manifest.js'
import { registerRecordingRoutes } from '../src/api/routes/recording.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import type { TelemetryEvent } from '../src/events/index.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { MAX_TITLE_CHARS, capTitle, chaptersOf, ffmetadata, type StepSpan } from '../src/recording/chapters.js'
import { FrameStore } from '../src/recording/frame-store.js'
import { encodeWebm } from '../src/recording/webm.js'
import { RecordingSwitch } from '../src/recording/switch.js'
import type { EventLog } from '../src/store/event-log.js'
import { startApi, BROWSER_ID, TOKEN } from './helpers/api.js'
import { startBundleApi, unzipAll, T0_US } from './helpers/bundle.js'
import { openStore, tempDir } from './helpers/store.js'
import { readStepSpans } from '../src/bundle/steps.js'

const run = promisify(execFile)
const MS = 1000

// ---- the pure parts --------------------------------------------------------------------------

t.test('placing steps on the video: clamp, open steps, outside steps, 1 ms at least, order', async t => {
  const F = 1_000_000_000_000 // the first frame's ts (µs)
  const span = (id: string, startMs: number, endMs?: number): StepSpan => ({
    step_id: id,
    name: id,
    start_ts: F + startMs * MS,
    ...(endMs !== undefined ? { end_ts: F + endMs * MS } : {}),
  })
  t.same(
    chaptersOf(
      [
        span('late', 9000, 9500), // starts after the end (8000)
        span('at-end', 8000), // starts at the end: outside
        span('before', -500, -100), // ended before the first frame
        span('touching', -500, 0), // ended at the first frame: outside too
        span('across', -500, 300),
        span('instant', 400, 400), // shorter than 1 ms: shown for 1 ms
        span('open-a', 1000), // open: to the next step's start
        span('open-b', 1000), // same start: both end at the next later start
        span('next', 2000.4, 2999.6), // rounded to the ms
        span('tail', 7000), // open: to the next start (7500)
        span('over', 7500, 12_000), // clamped to the end
        span('last', 7900), // open, nothing after it: to the end of the video
      ],
      F,
      8000,
    ),
    [
      { startMs: 0, endMs: 300, title: 'across' },
      { startMs: 400, endMs: 401, title: 'instant' },
      { startMs: 1000, endMs: 2000, title: 'open-a' },
      { startMs: 1000, endMs: 2000, title: 'open-b' },
      { startMs: 2000, endMs: 3000, title: 'next' },
      { startMs: 7000, endMs: 7500, title: 'tail' },
      { startMs: 7500, endMs: 8000, title: 'over' },
      { startMs: 7900, endMs: 8000, title: 'last' },
    ],
  )
  t.same(chaptersOf([], F, 8000), [])
})

t.test('the steps of a window from the log: top-level only, finish without start, repeats, the bound', async t => {
  const { log, pipeline } = await openStore(t)
  const step = (type: 'agent_step_started' | 'agent_step_finished', id: string, extra: object = {}) =>
    pipeline.emit({
      type,
      data: {
        step_id: id,
        name: id.toUpperCase(),
        via: 'http',
        ...(type === 'agent_step_finished' ? { outcome: 'ok', duration_ms: 0.05 } : {}),
        ...extra,
      },
    } as EventInput)
  step('agent_step_finished', 'early') // its start was before the window
  step('agent_step_started', 'a')
  step('agent_step_started', 'a1', { parent_step_id: 'a' })
  step('agent_step_started', 'a', { name: 'A again' }) // started twice: ignored
  step('agent_step_finished', 'a')
  step('agent_step_finished', 'a', { name: 'A twice' }) // finished twice: the first finish stands
  step('agent_step_started', 'b')
  step('agent_step_started', 'c') // beyond the bound of 3
  await log.flush()
  const page = await log.read({ order: 'asc', limit: 100 })
  const ts = page.records.map(r => r.ts)
  const { steps, omitted } = await readStepSpans(log, { sinceUs: 0, maxSteps: 3 })
  t.same(steps, [
    { step_id: 'early', name: 'EARLY', start_ts: ts[0]! - 50, end_ts: ts[0]! },
    { step_id: 'a', name: 'A', start_ts: ts[1]!, end_ts: ts[4]! },
    { step_id: 'b', name: 'B', start_ts: ts[6]! },
  ])
  t.equal(omitted, 1, 'one step beyond the bound')
})

t.test('titles: cut by code points, FFMETADATA escapes, nothing injected', async t => {
  const emoji = '😀'.repeat(300) // 600 UTF-16 units
  const cut = capTitle(emoji)
  t.equal(Array.from(cut).length, MAX_TITLE_CHARS)
  t.equal(cut, '😀'.repeat(MAX_TITLE_CHARS - 1) + '…', 'no surrogate pair split')
  t.equal(capTitle('x'.repeat(MAX_TITLE_CHARS)), 'x'.repeat(MAX_TITLE_CHARS), 'at the bound: unchanged')
  t.equal(
    ffmetadata([{ startMs: 0, endMs: 5, title: 'a=b;c#d\\e\nf\rg\0h' }]),
    ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=5\ntitle=a\\=b\\;c\\#d\\\\e\\\nf\\\rgh\n',
  )
  t.equal(ffmetadata([]), ';FFMETADATA1\n')
})

// ---- a recording and its steps ---------------------------------------------------------------

/** Frame times in ms from the first: the video lasts 6000 + 1000 (the last frame held) = 7000 ms. */
const FRAMES_MS = [0, 200, 400, 1400, 1600, 3100, 3300, 3500, 5200, 6000]
const VIDEO_MS = 7000
/** A name that is FFMETADATA syntax: were it not escaped it would end the title and add a chapter. */
const HOSTILE = 'log in = ; # \\ done\n[CHAPTER]\nTIMEBASE=1/1\nSTART=0\nEND=1\ntitle=injected\r\n;x'
/** 10,000 characters, most outside ASCII (the event schema allows 256; a log may hold longer). */
const LONG = '長い名前'.repeat(2000) + 'y'.repeat(2000)
const CART = '🛒 checkout — 日本語 café'

interface StepAction {
  ms: number
  kind: 'start' | 'finish'
  id: string
  name: string
  parent?: string
  /** Written to the log as it is, past the pipeline (whose schema bounds names to 256). */
  raw?: boolean
}

/** In time order. The chapters they make are CHAPTERS. */
const ACTIONS: StepAction[] = [
  { ms: -3000, kind: 'start', id: 's-before', name: 'before the video' },
  { ms: -1000, kind: 'finish', id: 's-before', name: 'before the video' },
  { ms: -500, kind: 'start', id: 's-open', name: 'open the page' },
  { ms: 200, kind: 'start', id: 's-click', name: 'click', parent: 's-open' },
  { ms: 300, kind: 'finish', id: 's-click', name: 'click', parent: 's-open' },
  { ms: 1300, kind: 'finish', id: 's-open', name: 'open the page' },
  { ms: 1400, kind: 'start', id: 's-login', name: HOSTILE },
  { ms: 2500.4, kind: 'finish', id: 's-login', name: HOSTILE },
  { ms: 2600, kind: 'start', id: 's-long', name: LONG, raw: true },
  { ms: 2900, kind: 'finish', id: 's-long', name: LONG, raw: true },
  { ms: 3000, kind: 'start', id: 's-cart', name: CART }, // never finished
  { ms: 3200, kind: 'start', id: 's-cart-sub', name: 'nested, open', parent: 's-cart' },
  { ms: 4000, kind: 'start', id: 's-pay', name: 'pay' },
  { ms: 5000, kind: 'finish', id: 's-pay', name: 'pay' },
  { ms: 5500, kind: 'start', id: 's-review', name: 'review' }, // never finished, the last
  { ms: 7500, kind: 'start', id: 's-after', name: 'after the video' },
  { ms: 8000, kind: 'finish', id: 's-after', name: 'after the video' },
]

/**
 * The chapters in ms of the video. Tolerance: none beyond the rounding of a step's µs ts to the
 * nearest ms (at most 0.5 ms: 2500.4 ms is written as 2500), since the frames here fall on whole
 * ms and the chapters' time base is 1/1000.
 */
const CHAPTERS = [
  { start: 0, end: 1300, title: 'open the page' }, // started 500 ms before the first frame: clamped
  { start: 1400, end: 2500, title: HOSTILE },
  {
    start: 2600,
    end: 2900,
    title:
      Array.from(LONG)
        .slice(0, MAX_TITLE_CHARS - 1)
        .join('') + '…',
  },
  { start: 3000, end: 4000, title: CART }, // open: ends where the next top-level step starts
  { start: 4000, end: 5000, title: 'pay' },
  { start: 5500, end: VIDEO_MS, title: 'review' }, // open, the last: ends with the video
]

function stepInput(a: StepAction): EventInput {
  const data = {
    step_id: a.id,
    name: a.name,
    via: 'http',
    ...(a.parent ? { parent_step_id: a.parent } : {}),
    ...(a.kind === 'finish' ? { outcome: 'ok', duration_ms: stepDurationMs(a) } : {}),
  }
  return { type: a.kind === 'start' ? 'agent_step_started' : 'agent_step_finished', data } as EventInput
}

function stepDurationMs(finish: StepAction): number {
  const start = ACTIONS.find(a => a.id === finish.id && a.kind === 'start')!
  return finish.ms - start.ms
}

/**
 * Writes the steps with the first frame at F (µs): through the pipeline at the clock's time, or
 * (raw) straight into the log with that ts, as a producer without the schema's bound would have.
 */
async function writeSteps(
  F: number,
  log: EventLog,
  setClock: (us: number) => void,
  emit: (input: EventInput) => Promise<void>,
): Promise<void> {
  for (const a of ACTIONS) {
    const ts = F + Math.round(a.ms * MS)
    if (a.raw) {
      const input = stepInput(a)
      const event = { ts, category: 'control', source: { kind: 'kernel_api' }, ...input } as unknown as TelemetryEvent
      if (!(await log.append(event, JSON.stringify(event)).committed)) throw new Error(`raw ${a.kind} of ${a.id} lost`)
      continue
    }
    setClock(ts)
    await emit(stepInput(a))
  }
}

/** A solid-colour JPEG of 160 x 120 from ffmpeg. */
function colorJpeg(color: string): Buffer {
  return execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `color=c=${color}:s=160x120:d=0.04`,
    '-frames:v',
    '1',
    '-f',
    'mjpeg',
    'pipe:1',
  ])
}

async function frameStore(t: Test, F: number): Promise<FrameStore> {
  const store = await FrameStore.open({ dir: await tempDir(t), maxBytes: 64 * 1024 * 1024, maxPendingFrames: 100 })
  t.teardown(() => store.close())
  const colors = ['red', 'green', 'blue', 'yellow', 'white', 'black', 'gray', 'cyan', 'magenta', 'orange']
  FRAMES_MS.forEach((ms, i) =>
    store.add({
      ts: F + ms * MS,
      target_id: 'PAGE',
      after_seq: 0,
      width: 160,
      height: 120,
      jpeg: colorJpeg(colors[i]!),
    }),
  )
  await store.flush()
  return store
}

interface Probed {
  chapters: { id: number; time_base: string; start: number; end: number; tags?: Record<string, string> }[]
  format: { tags?: Record<string, string>; duration: string }
}

async function probe(file: string): Promise<Probed> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_chapters', '-show_format', '-of', 'json', file], {
    maxBuffer: 16 * 1024 * 1024,
  })
  return JSON.parse(stdout) as Probed
}

/** The chapters as ms and titles, after checking the time base (ns) and that a title is the only tag. */
function chaptersIn(t: Test, p: Probed) {
  for (const c of p.chapters) {
    t.equal(c.time_base, '1/1000000000', `chapter ${c.id}: ns time base`)
    t.same(Object.keys(c.tags ?? {}), ['title'], `chapter ${c.id}: its title and nothing else`)
  }
  t.same(Object.keys(p.format.tags ?? {}), ['ENCODER'], 'no metadata but the encoder: nothing injected')
  return p.chapters.map(c => ({ start: c.start / 1e6, end: c.end / 1e6, title: c.tags?.title }))
}

t.test('recording export: a chapter per top-level step, over the API', async t => {
  const F = Date.now() * MS - 120_000_000
  let clock = F - 10_000_000
  const recording = new RecordingSwitch(true)
  const frames = await frameStore(t, F)
  const api = await startApi(t, {
    pipeOpts: { clock: () => clock },
    deps: {
      recording,
      routes: [
        r =>
          registerRecordingRoutes(r, {
            frames,
            recording,
            get log() {
              return api.log
            },
          }),
      ],
    },
  })
  await writeSteps(
    F,
    api.log,
    us => (clock = us),
    async input => {
      const r = api.pipeline.emit(input)
      t.equal(r.dropped, undefined, `${input.type} accepted`)
      if (r.dropped === undefined) await r.committed
    },
  )

  // The route: the top-level steps of the window, with their own times.
  const res = await api.get(`/browsers/${BROWSER_ID}/recording/chapters?since=1h`)
  t.equal(res.status, 200)
  const body = (await res.json()) as { chapters: StepSpan[]; omitted: number }
  t.same(
    body.chapters.map(s => [s.step_id, s.start_ts - F, s.end_ts === undefined ? null : s.end_ts - F]),
    [
      ['s-before', -3_000_000, -1_000_000],
      ['s-open', -500_000, 1_300_000],
      ['s-login', 1_400_000, 2_500_400],
      ['s-long', 2_600_000, 2_900_000],
      ['s-cart', 3_000_000, null],
      ['s-pay', 4_000_000, 5_000_000],
      ['s-review', 5_500_000, null],
      ['s-after', 7_500_000, 8_000_000],
    ],
    'every top-level step, µs from the first frame',
  )
  t.equal(body.omitted, 0)
  t.equal(body.chapters.find(s => s.step_id === 's-long')!.name, CHAPTERS[2]!.title, 'the long name cut')

  const out = join(await tempDir(t), 'steps.webm')
  let err = ''
  const io: CliIO = {
    stdout: { write: () => true },
    stderr: { write: c => ((err += String(c)), true), isTTY: false },
    env: { PATH: process.env.PATH },
  }
  const code = await clientCommands.recording!.run(
    ['export', '--url', api.url, '--token', TOKEN, '--browser-id', BROWSER_ID, '--since', '1h', '-o', out],
    io,
  )
  t.equal(code, 0, err)
  t.match(err, /^wrote 11 frames, 7\.0 s of video, 6 chapters \(.*\) to .*steps\.webm\n$/)
  const p = await probe(out)
  t.same(chaptersIn(t, p), CHAPTERS, 'chapters: ms from the first frame, exact titles')
  t.ok(Math.abs(Number(p.format.duration) * 1000 - VIDEO_MS) <= 50, `video ${p.format.duration} s ≈ 7 s (±50 ms)`)
})

t.test("the bundle's recording.webm has the chapters of its window", async t => {
  const F = T0_US + 60_000_000
  const frames = await frameStore(t, F)
  const api = await startBundleApi(t, { source: () => ({ frames, recordingEnabled: () => true }) })
  await writeSteps(
    F,
    api.log,
    us => api.setClock(us),
    input => api.emit(input),
  )
  api.setClock(F + 60_000_000)
  // The window starts 200 ms before the first frame: "open the page" started before it, so its
  // start is its finish minus its duration (still before the first frame: clamped to 0).
  const since = new Date((F - 200 * MS) / 1000).toISOString()
  const until = new Date((F + 20_000 * MS) / 1000).toISOString()
  const res = await api.get(
    `/browsers/${BROWSER_ID}/telemetry/bundle?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`,
  )
  t.equal(res.status, 200)
  const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
  const m = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  t.equal(m.recording.video, 'recording.webm', m.recording.video_note ?? '')
  t.equal(m.files['recording.webm']?.chapters, CHAPTERS.length)
  const file = join(await tempDir(t), 'r.webm')
  await writeFile(file, files.get('recording.webm')!)
  t.same(chaptersIn(t, await probe(file)), CHAPTERS)
})

t.test('frame times do not drift: each is its own ts from the first, rounded to the ms', async t => {
  // 30 fps as a screencast delivers it: 33.333 ms apart. Rounded one duration at a time (33 ms
  // each) the last of 61 frames would start 20 ms early; from the first frame it is at 2000 ms.
  const jpeg = colorJpeg('red')
  const T = 1_700_000_000_000_000
  const frames = Array.from({ length: 61 }, (_, i) => ({
    ts: T + Math.round((i * 100_000) / 3),
    width: 160,
    height: 120,
  }))
  const out = join(await tempDir(t), 'fps.webm')
  const r = await encodeWebm({ frames, jpeg: async () => jpeg, output: out })
  t.equal(r.durationMs, 3000, '2000 ms of frames and the last held 1 s')
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_entries', 'packet=pts_time', '-of', 'csv=p=0', out])
  const pts = stdout
    .trim()
    .split('\n')
    .map(s => Math.round(Number(s) * 1000))
  t.same(
    pts.slice(0, 61),
    frames.map((_, i) => Math.round((i * 100) / 3)),
    'frame i at round(i × 33.333) ms (the WebM time base is 1 ms: exact)',
  )
})
