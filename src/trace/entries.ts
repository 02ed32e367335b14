// The entries of a Playwright trace: resources/ (bodies, then the film strip's images),
// trace.network and trace.trace, each written by passes over the log a page at a time.
import { ACTION_CATEGORIES, ActionBuilder, stepsOf, type Action } from '../actions/index.js'
import type { Envelope } from '../events/index.js'
import { HarBuilder, HAR_CATEGORIES } from '../har/index.js'
import { actionLines } from './actions.js'
import { envelopes, frameMetas, keep, seePage, sized, type TraceContext } from './context.js'
import {
  consoleLineOf,
  pageEventOf,
  pageIdOf,
  TRACE_FORMAT_VERSION,
  type ContextOptionsLine,
  type ScreencastFrameLine,
} from './format.js'
import { bodyName, resourceLineOf } from './resources.js'

/** resources/<sha1>: each captured body once. */
export async function bodyFiles(ctx: TraceContext): Promise<void> {
  const { summary } = ctx
  const seen = new Set<string>()
  for await (const stored of ctx.zip.records(['network'])) {
    const fresh: [string, string][] = []
    for (const r of stored) {
      // Only responses carry bodies; the rest need not be parsed (the pipeline writes the type first).
      if (!r.json.includes('"type":"network_response","') || !r.json.includes('"body":"')) continue
      const e = JSON.parse(r.json) as Envelope
      if (e.event.type !== 'network_response' || e.event.data.body === undefined || !keep(ctx, e)) continue
      const name = bodyName(e.event.data.body)
      if (seen.has(name)) continue
      seen.add(name)
      fresh.push([name, e.event.data.body])
    }
    // One allocation for the page's bodies, gone with the page (see pageArena).
    const views = pageArena(fresh.map(f => f[1]))
    for (let i = 0; i < fresh.length; i++) {
      // Stored: a deflate stream per small body costs more time and memory than it saves.
      await ctx.zip.entry(`resources/${fresh[i]![0]}`, [views[i]!], false)
      summary.bodies++
    }
  }
}

/** The film strip: the recording's frames, else the periodic screenshots (on the page last navigated). */
export async function filmStrip(ctx: TraceContext): Promise<void> {
  const { summary, clock, limits } = ctx
  const signal = ctx.zip.signal
  const lines: ScreencastFrameLine[] = []
  for (const meta of frameMetas(ctx)) {
    const bytes = await ctx.source.frames!.read(meta.frame_id)
    signal.throwIfAborted()
    if (!bytes) continue // removed by retention since it was listed
    const name = `frame-${meta.frame_id}.jpeg`
    await ctx.zip.entry(`resources/${name}`, [bytes], false)
    const pageId = pageIdOf(meta.target_id)!
    seePage(ctx, pageId)
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
    ctx.frames = lines
    return
  }
  let current: string | undefined
  for await (const page of envelopes(ctx, ['screenshot', 'page'])) {
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
      await ctx.zip.entry(`resources/${name}`, [bytes], false)
      const pageId = pageIdOf(current) ?? 'page@browser'
      seePage(ctx, pageId)
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
  ctx.frames = lines
}

/** trace.network: one resource-snapshot per HAR entry, written as its exchange ends. */
export async function* networkFile(ctx: TraceContext): AsyncGenerator<string> {
  const { summary, clock } = ctx
  const har = new HarBuilder(ctx.limits.har)
  const targetOfSession = new Map<string, string>()
  const write = (entries: ReturnType<HarBuilder['ready']>) => {
    let s = ''
    for (const entry of entries) {
      const target = entry._sessionId !== undefined ? targetOfSession.get(entry._sessionId) : undefined
      const pageId = pageIdOf(target)
      seePage(ctx, pageId)
      s += JSON.stringify(resourceLineOf(clock, entry, pageId, Date.parse(entry.startedDateTime) * 1000)) + '\n'
      summary.resources++
    }
    return s
  }
  for await (const page of sized(ctx, HAR_CATEGORIES)) {
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
export async function* traceFile(ctx: TraceContext): AsyncGenerator<string> {
  const { summary, clock, frames, source, window, limits, viewport } = ctx
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
  for await (const page of envelopes(ctx, ACTION_CATEGORIES, true)) {
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
      seePage(ctx, line.pageId)
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
  for (const l of lines) if (l.type === 'before') seePage(ctx, l.pageId)
  summary.screenshots = lines.filter(l => l.type === 'screenshot').length
  yield* ndjson(lines)
  summary.pages = ctx.pages.size
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
