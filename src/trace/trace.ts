// A Playwright trace of a window, streamed: the zip the trace viewer opens (trace.trace,
// trace.network, resources/), built from the stored envelopes and the recording's frames in passes
// over the log a page at a time, like the debug bundle. Everything comes from the stored envelopes,
// which the pipeline masked before storing them.
import type { Readable } from 'node:stream'
import { ACTION_CATEGORIES, ActionBuilder, stepsOf, type Action } from '../actions/index.js'
import { bundleFileName, DEFAULT_BUNDLE_LIMITS, type BundleLimits } from '../bundle/bundle.js'
import { ZipStream, type ZipStreamStats } from '../bundle/zip-stream.js'
import type { Envelope } from '../events/index.js'
import { HarBuilder, HAR_CATEGORIES } from '../har/index.js'
import type { FrameMeta, FrameStore } from '../recording/frame-store.js'
import type { EventLog, StoredRecord } from '../store/event-log.js'
import { actionLines } from './actions.js'
import {
  consoleLineOf,
  pageEventOf,
  pageIdOf,
  TRACE_FORMAT_VERSION,
  type ContextOptionsLine,
  type ScreencastFrameLine,
  type TraceClock,
} from './format.js'
import { bodyName, resourceLineOf } from './resources.js'

/** Where a trace's contents come from (the daemon's parts, or a test's). */
export interface TraceSource {
  browserId: string
  log: EventLog
  /** The recording's frame store; without one (or without frames in the window) the screenshots are the film strip. */
  frames?: Pick<FrameStore, 'list' | 'read'>
  /** Console stacks mapped as the events API maps them (src/symbols). */
  mapRecords?: (records: readonly StoredRecord[]) => Promise<StoredRecord[]>
  /** `process.platform` of the daemon's machine (the context line). */
  platform?: string
}

export interface TraceWindow {
  /** Unix microseconds, inclusive. */
  sinceUs: number
  /** Unix microseconds, exclusive; undefined: up to the last event committed when the export began. */
  untilUs?: number
  /** Only this target's pages, requests, console and frames (steps and browser-wide events stay). */
  targetId?: string
}

/** As the bundle's: log page size, HAR bounds, film strip frames, action records. */
export type TraceLimits = Omit<BundleLimits, 'maxListedGaps'>

const { maxListedGaps: _gaps, ...bundleLimits } = DEFAULT_BUNDLE_LIMITS
export const DEFAULT_TRACE_LIMITS: TraceLimits = {
  ...bundleLimits,
  // Finished exchanges wait for the ones begun before them: past 8 MiB they go out of order, which
  // the viewer does not mind (it sorts by time), and memory stays low.
  har: { ...bundleLimits.har, maxHeldBytes: 8 * 1024 * 1024 },
}

/** What the export wrote (counts; tests and the CLI read them). */
export interface TraceSummary {
  actions: number
  steps: number
  resources: number
  bodies: number
  console: number
  page_errors: number
  events: number
  frames: number
  frames_from: 'recording' | 'screenshots' | 'none'
  /** Screenshot lines written: an action's "Before"/"After" as the recording frame on screen. */
  screenshots: number
  pages: number
  /** Actions past maxActionRecords were not derived from here on. */
  actions_cut_at_seq?: number
}

export interface TraceBuild {
  readonly output: Readable
  readonly stats: ZipStreamStats
  readonly done: Promise<TraceSummary>
  abort(reason?: Error): void
}

/** `browser-telemetry-<browser id>-<UTC time>.trace.zip`. */
export function traceFileName(browserId: string, at: Date): string {
  return bundleFileName(browserId, at, '.trace.zip')
}

/** Lines as NDJSON text, 500 at a time (one chunk each). */
function* ndjson(lines: readonly object[]): Generator<string> {
  for (let i = 0; i < lines.length; i += 500)
    yield lines
      .slice(i, i + 500)
      .map(l => JSON.stringify(l) + '\n')
      .join('')
}

/** A PNG's pixel size from its IHDR chunk (screenshots become film strip frames). */
function pngSize(b: Buffer): { width: number; height: number } | undefined {
  if (b.length < 24 || b.readUInt32BE(0) !== 0x89504e47) return undefined
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) }
}

/**
 * The UTF-8 bytes of a page's bodies as views of one buffer of their own. A small Buffer.from()
 * would share an 8 KiB slab with the zip's small headers, which live to the end of the export (and
 * keep the slab, body and all); one allocation per body would churn the allocator; one per page is
 * freed whole when the page is done.
 */
function pageArena(texts: readonly string[]): Buffer[] {
  let total = 0
  for (const t of texts) total += Buffer.byteLength(t, 'utf8')
  const arena = Buffer.allocUnsafeSlow(total)
  const views: Buffer[] = []
  let at = 0
  for (const t of texts) {
    const n = arena.write(t, at, 'utf8')
    views.push(arena.subarray(at, at + n))
    at += n
  }
  return views
}

const targetOf = (e: Envelope): string | undefined => (e.event.data as { target_id?: string }).target_id

export function buildTrace(
  source: TraceSource,
  window: TraceWindow,
  limits: TraceLimits = DEFAULT_TRACE_LIMITS,
  now: () => Date = () => new Date(),
): TraceBuild {
  const createdAt = now()
  const createdUs = createdAt.getTime() * 1000
  const zs = new ZipStream(
    source.log,
    window,
    { events: limits.readPageEvents, bytes: limits.readPageBytes },
    createdAt,
    'trace',
  )
  const signal = zs.signal
  const summary: TraceSummary = {
    actions: 0,
    steps: 0,
    resources: 0,
    bodies: 0,
    console: 0,
    page_errors: 0,
    events: 0,
    frames: 0,
    frames_from: 'none',
    screenshots: 0,
    pages: 0,
  }
  const keep = (e: Envelope): boolean => {
    if (window.targetId === undefined) return true
    const t = targetOf(e)
    return t === undefined || t === window.targetId
  }
  const pages = new Set<string>()
  const seePage = (id: string | undefined) => {
    if (id !== undefined) pages.add(id)
  }

  /** Envelopes of the window with their stored size, a page at a time, parsed and filtered to the target. */
  async function* sized(categories?: readonly string[], map = false): AsyncGenerator<[Envelope, number][]> {
    for await (const stored of zs.records(categories)) {
      const page = map && source.mapRecords ? await source.mapRecords(stored) : stored
      const out: [Envelope, number][] = []
      for (const r of page) {
        const e = JSON.parse(r.json) as Envelope
        if (keep(e)) out.push([e, r.json.length])
      }
      yield out
    }
  }
  async function* envelopes(categories?: readonly string[], map = false): AsyncGenerator<Envelope[]> {
    for await (const page of sized(categories, map)) yield page.map(p => p[0])
  }

  /** The clock's origin: the first stored event of the window (else the window's start). */
  async function origin(): Promise<TraceClock> {
    for await (const page of zs.records()) return { originUs: page[0]!.ts }
    return { originUs: window.sinceUs }
  }

  /** Frames of the window still stored, oldest first. */
  function* frameMetas(): Generator<FrameMeta> {
    const store = source.frames
    if (!store) return
    const untilUs = window.untilUs ?? createdUs
    let cursor: number | undefined
    let n = 0
    for (;;) {
      signal.throwIfAborted()
      const page = store.list({ sinceUs: window.sinceUs, untilUs, limit: 100, ...(cursor ? { cursor } : {}) })
      for (const meta of page.items) {
        if (meta.after_seq > zs.lastSeq || n >= limits.maxFrames) return
        if (window.targetId !== undefined && meta.target_id !== window.targetId) continue
        n++
        yield meta
      }
      if (!page.hasMore || page.nextCursor === 0 || page.items.length === 0) return
      cursor = page.nextCursor
    }
  }

  /** resources/<sha1>: each captured body once. */
  async function bodies(): Promise<void> {
    const seen = new Set<string>()
    for await (const stored of zs.records(['network'])) {
      const fresh: [string, string][] = []
      for (const r of stored) {
        // Only responses carry bodies; the rest need not be parsed (the pipeline writes the type first).
        if (!r.json.includes('"type":"network_response","') || !r.json.includes('"body":"')) continue
        const e = JSON.parse(r.json) as Envelope
        if (e.event.type !== 'network_response' || e.event.data.body === undefined || !keep(e)) continue
        const name = bodyName(e.event.data.body)
        if (seen.has(name)) continue
        seen.add(name)
        fresh.push([name, e.event.data.body])
      }
      // One allocation for the page's bodies, gone with the page (see pageArena).
      const views = pageArena(fresh.map(f => f[1]))
      for (let i = 0; i < fresh.length; i++) {
        // Stored: a deflate stream per small body costs more time and memory than it saves.
        await zs.entry(`resources/${fresh[i]![0]}`, [views[i]!], false)
        summary.bodies++
      }
    }
  }

  /** The film strip: the recording's frames, else the periodic screenshots (on the page last navigated). */
  async function filmStrip(clock: TraceClock): Promise<ScreencastFrameLine[]> {
    const lines: ScreencastFrameLine[] = []
    for (const meta of frameMetas()) {
      const bytes = await source.frames!.read(meta.frame_id)
      signal.throwIfAborted()
      if (!bytes) continue // removed by retention since it was listed
      const name = `frame-${meta.frame_id}.jpeg`
      await zs.entry(`resources/${name}`, [bytes], false)
      const pageId = pageIdOf(meta.target_id)!
      seePage(pageId)
      lines.push({
        type: 'screencast-frame',
        pageId,
        sha1: name,
        width: meta.width,
        height: meta.height,
        timestamp: (meta.ts - clock.originUs) / 1000,
      })
    }
    if (lines.length > 0) {
      summary.frames_from = 'recording'
      return lines
    }
    let current: string | undefined
    for await (const page of envelopes(['screenshot', 'page'])) {
      for (const e of page) {
        const ev = e.event
        // A page's main frame (an OOPIF's root frame has no parent in its own session either).
        if (ev.type === 'page_navigation' && ev.data.parent_frame_id === undefined && ev.data.target_type !== 'iframe')
          current = ev.data.target_id
        if (ev.type !== 'monitor_screenshot' || lines.length >= limits.maxFrames) continue
        const bytes = Buffer.from(ev.data.png, 'base64')
        const size = pngSize(bytes)
        if (!size) continue
        const name = `screenshot-${e.seq}.png`
        await zs.entry(`resources/${name}`, [bytes], false)
        const pageId = pageIdOf(current) ?? 'page@browser'
        seePage(pageId)
        lines.push({
          type: 'screencast-frame',
          pageId,
          sha1: name,
          ...size,
          timestamp: (ev.ts - clock.originUs) / 1000,
        })
      }
    }
    if (lines.length > 0) summary.frames_from = 'screenshots'
    return lines
  }

  /** trace.network: one resource-snapshot per HAR entry, written as its exchange ends. */
  async function* networkFile(clock: TraceClock): AsyncGenerator<string> {
    const har = new HarBuilder(limits.har)
    const targetOfSession = new Map<string, string>()
    const write = (entries: ReturnType<HarBuilder['ready']>) => {
      let s = ''
      for (const entry of entries) {
        const target = entry._sessionId !== undefined ? targetOfSession.get(entry._sessionId) : undefined
        const pageId = pageIdOf(target)
        seePage(pageId)
        s += JSON.stringify(resourceLineOf(clock, entry, pageId, Date.parse(entry.startedDateTime) * 1000)) + '\n'
        summary.resources++
      }
      return s
    }
    for await (const page of sized(HAR_CATEGORIES)) {
      for (const [e, bytes] of page) {
        const d = e.event.data as { session_id?: string; target_id?: string }
        if (d.session_id !== undefined && d.target_id !== undefined && targetOfSession.size < 100_000)
          targetOfSession.set(d.session_id, d.target_id)
        har.add(e, bytes)
      }
      const s = write(har.ready())
      if (s) yield s
    }
    yield write(har.finish().entries)
  }

  /** trace.trace: the context line, console, errors, page events, the film strip, the steps and actions. */
  async function* traceFile(clock: TraceClock, frames: ScreencastFrameLine[]): AsyncGenerator<string> {
    const first = frames.find(f => f.width > 0)
    const context: ContextOptionsLine = {
      version: TRACE_FORMAT_VERSION,
      type: 'context-options',
      origin: 'library',
      browserName: 'chromium',
      platform: source.platform ?? process.platform,
      wallTime: clock.originUs / 1000,
      monotonicTime: 0,
      title: `browser-telemetry ${source.browserId}`,
      options: {
        ...(viewport ? { viewport } : first ? { viewport: { width: first.width, height: first.height } } : {}),
        deviceScaleFactor: 1,
        isMobile: false,
      },
      sdkLanguage: 'javascript',
    }
    yield JSON.stringify(context) + '\n'
    yield* ndjson(frames)
    summary.frames = frames.length
    const builder = new ActionBuilder()
    const stepEvents: Envelope[] = []
    let lastUs = clock.originUs
    let cut = false
    for await (const page of envelopes(ACTION_CATEGORIES, true)) {
      let chunk = ''
      for (const e of page) {
        lastUs = e.event.ts
        if (!cut && builder.size >= limits.maxActionRecords) {
          cut = true
          summary.actions_cut_at_seq = e.seq
        }
        if (!cut) builder.add(e)
        const t = e.event.type
        if (t === 'agent_step_started' || t === 'agent_step_finished') stepEvents.push(e)
        const line = consoleLineOf(clock, e) ?? pageEventOf(clock, e)
        if (!line) continue
        seePage(line.pageId)
        if (line.type === 'console') summary.console++
        else if (line.method === 'pageError') summary.page_errors++
        else summary.events++
        chunk += JSON.stringify(line) + '\n'
      }
      if (chunk) yield chunk
    }
    const steps = stepsOf(stepEvents)
    const actions: Action[] = builder
      .finish()
      .filter(a => window.targetId === undefined || a.target_id === undefined || a.target_id === window.targetId)
    const lines = actionLines(clock, steps, actions, lastUs, summary.frames_from === 'recording' ? frames : [])
    summary.steps = steps.length
    summary.actions = actions.filter(a => a.kind !== 'setup').length
    for (const l of lines) if (l.type === 'before') seePage(l.pageId)
    summary.screenshots = lines.filter(l => l.type === 'screenshot').length
    yield* ndjson(lines)
    summary.pages = pages.size
  }

  let viewport: { width: number; height: number } | undefined
  const done = (async () => {
    try {
      const clock = await origin()
      for (const meta of frameMetas()) {
        if (meta.viewport_width && meta.viewport_height)
          viewport = { width: meta.viewport_width, height: meta.viewport_height }
        break
      }
      await bodies()
      const frames = await filmStrip(clock)
      await zs.entry('trace.network', networkFile(clock))
      await zs.entry('trace.trace', traceFile(clock, frames))
      await zs.end()
      return summary
    } catch (err) {
      // After the headers went out the only honest signal is a broken stream (as the bundle's).
      zs.abort(err as Error)
      throw err
    }
  })()
  done.catch(() => {})
  return { output: zs.output, stats: zs.stats, done, abort: (reason?: Error) => zs.abort(reason) }
}
