// The entries of a debug bundle made by passes over the log: events.ndjson, network.har,
// console.txt, actions.json and screenshots/. Each text file is a generator the zip pulls, so the
// log is read a page at a time only as the reader takes bytes.
import { ACTION_CATEGORIES, ActionBuilder, stepsOf } from '../actions/index.js'
import { storedEventType, type Envelope } from '../events/index.js'
import { HarBuilder, HAR_CATEGORIES } from '../har/index.js'
import { served, type BundleContext } from './context.js'
import { consoleLine } from './console-text.js'
import { GapTracker } from './manifest.js'

/** events.ndjson: each stored envelope exactly as the events API serves it, one per line. */
export async function* eventsFile(ctx: BundleContext): AsyncGenerator<string> {
  const { manifest, limits } = ctx
  const gaps = new GapTracker(limits.maxListedGaps)
  for await (const stored of ctx.zip.records()) {
    const page = await served(ctx, stored)
    let chunk = ''
    for (const r of page) {
      gaps.see(r.seq)
      manifest.seq.first ??= r.seq
      manifest.seq.last = r.seq
      manifest.seq.events++
      chunk += r.json + '\n'
      const type = storedEventType(r.json)
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
export async function* harFile(ctx: BundleContext): AsyncGenerator<string> {
  const { manifest, source } = ctx
  const har = new HarBuilder(ctx.limits.har)
  const creator = { name: 'browser-telemetry', version: source.daemonVersion }
  const comment = `browser ${source.browserId}, ${manifest.window.since} to ${manifest.window.until ?? `seq ${ctx.lastSeq}`}, debug bundle`
  yield `{"log":{"version":"1.2","creator":${JSON.stringify(creator)},"comment":${JSON.stringify(comment)},"entries":[`
  let n = 0
  const write = (entries: readonly object[]) => {
    let s = ''
    for (const e of entries) s += (n++ === 0 ? '\n' : ',\n') + JSON.stringify(e)
    return s
  }
  for await (const page of ctx.zip.records(HAR_CATEGORIES)) {
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

/** console.txt: one line per console message. */
export async function* consoleFile(ctx: BundleContext): AsyncGenerator<string> {
  for await (const stored of ctx.zip.records(['console'])) {
    const page = await served(ctx, stored)
    let chunk = ''
    for (const r of page) {
      const line = consoleLine(JSON.parse(r.json) as Envelope)
      if (line === undefined) continue
      chunk += line + '\n'
      ctx.manifest.files['console.txt'].lines++
    }
    if (chunk) yield chunk
  }
}

/** actions.json: the agent's actions of the window (src/actions), one per line; the steps go to the manifest. */
export async function* actionsFile(ctx: BundleContext): AsyncGenerator<string> {
  const { manifest } = ctx
  const builder = new ActionBuilder()
  const stepEvents: Envelope[] = []
  read: for await (const page of ctx.zip.records(ACTION_CATEGORIES)) {
    for (const r of page) {
      if (builder.size >= ctx.limits.maxActionRecords) {
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

/** screenshots/<seq>.<png|jpeg>: the images of monitor_screenshot events, one entry each. */
export async function screenshots(ctx: BundleContext): Promise<void> {
  for await (const page of ctx.zip.records(['screenshot'])) {
    for (const r of page) {
      const e = JSON.parse(r.json) as Envelope
      if (e.event.type !== 'monitor_screenshot') continue
      const bytes = Buffer.from(e.event.data.png, 'base64')
      await ctx.entry(`screenshots/${e.seq}.${imageExt(bytes)}`, [bytes], false)
      ctx.manifest.files.screenshots.files++
    }
  }
}

/** Screenshot bytes are PNG or JPEG; the entry name says which. */
function imageExt(b: Buffer): 'png' | 'jpeg' | 'bin' {
  if (b.length >= 4 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png'
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg'
  return 'bin'
}
