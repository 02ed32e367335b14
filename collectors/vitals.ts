// Web Vitals and long animation frames of page targets (category page): page_web_vital and
// page_long_animation_frame, reported by a script injected into every top-level document
// (vitals-script.ts) through a CDP binding in the collector's own isolated world.
//
// The page reports the latest values as they change (coalesced); the daemon keeps the latest value
// per document and metric and stores it when the document is left (a new document in the tab, the
// page hidden, the target gone, the collector detached: category off or daemon stopping), because a
// binding call made while a tab navigates away never reaches CDP. A metric that crosses into poor
// is stored at once too (while the page is still shown). FCP and TTFB are final when first reported
// and stored then. Payloads are untrusted: size-capped, parsed, reduced to the known keys, validated.
import { randomBytes } from 'node:crypto'
import {
  Bounds,
  Disposer,
  silentLogger,
  validateData,
  webVitalRating,
  type Context,
  type Detach,
  type Emit,
  type EventData,
  type Logger,
  type TargetSession,
  type WebVitalName,
  type Collector,
  type CaptureNeeds,
} from '../src/collector-kit.js'
import { injectPageScript, parseBindingPayload } from './page-script.js'
import { buildVitalsScript } from './vitals-script.js'

export interface VitalsCollectorOptions {
  /** The page's coalescing delay between a change and its report (default 250 ms). */
  flushMs?: number
  /** URL bound and its cut counter (default: the collector's own, at the default bounds). */
  bounds?: Bounds
  logger?: Logger
}

export interface VitalsStats {
  /** Binding reports taken. */
  reports: number
  /** Reports, vitals or frames that failed parsing or validation. */
  invalid: number
  /** Long animation frames over the per-report cap, not stored. */
  framesOverCap: number
}

export interface VitalsCollector extends Collector {
  readonly stats: VitalsStats
  /** The latest values the daemon holds for a target's current document (stored or not yet). */
  latest(targetId: string): Partial<Record<WebVitalName, number>>
  readonly bindingName: string
  readonly worldName: string
}

/** Binding payloads longer than this are dropped unparsed (20 frames of 5 scripts fit well under it). */
export const MAX_VITALS_PAYLOAD_CHARS = 256 * 1024
/** Long animation frames taken from one report (the page keeps no more between two reports). */
export const MAX_FRAMES_PER_REPORT = 20
/** Strings from the page (selectors, invokers, function names) are cut to this many characters. */
const TEXT_MAX = 1024
/** Documents of one target whose values are kept (the current one and a few left, for late reports). */
const MAX_DOCUMENTS = 4
/** Final as soon as reported: stored then. */
const FINAL_WHEN_REPORTED: ReadonlySet<string> = new Set(['FCP', 'TTFB'])
const SOURCE = { kind: 'cdp', event: 'Runtime.bindingCalled' } as const

type VitalData = Omit<EventData<'page_web_vital'>, 'rating' | 'delta'>
type FrameData = Omit<EventData<'page_long_animation_frame'>, keyof Context>
export interface VitalsReport {
  origin: number
  vitals: VitalData[]
  frames: FrameData[]
  hidden: boolean
  /** Frames beyond MAX_FRAMES_PER_REPORT and entries that failed validation. */
  overCap: number
  invalid: number
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Parses one binding payload, or undefined when it is not a well-formed report. */
export function parseVitalsPayload(payload: unknown, bounds: Bounds): VitalsReport | undefined {
  const raw = parseBindingPayload(payload, MAX_VITALS_PAYLOAD_CHARS)
  if (!raw || typeof raw.o !== 'number' || !Array.isArray(raw.v) || !Array.isArray(raw.f)) return undefined
  const out: VitalsReport = { origin: raw.o, vitals: [], frames: [], hidden: raw.h === 1, overCap: 0, invalid: 0 }
  for (const v of raw.v.slice(0, 5)) {
    const data = isRecord(v) ? vitalData(v, bounds) : undefined
    if (data) out.vitals.push(data)
    else out.invalid++
  }
  // Frames the page itself left out (over its cap) and frames beyond the cap here.
  const leftOut = typeof raw.d === 'number' && Number.isSafeInteger(raw.d) && raw.d > 0 ? raw.d : 0
  out.overCap = leftOut + Math.max(0, raw.f.length - MAX_FRAMES_PER_REPORT)
  for (const f of raw.f.slice(0, MAX_FRAMES_PER_REPORT)) {
    const data = isRecord(f) ? frameData(f, bounds) : undefined
    if (data) out.frames.push(data)
    else out.invalid++
  }
  return out
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v.slice(0, TEXT_MAX) : undefined)
const SCRIPT_KEYS = [
  'source_url',
  'source_function_name',
  'source_char_position',
  'invoker',
  'invoker_type',
  'duration',
  'forced_style_and_layout_duration',
  'pause_duration',
] as const
const ATTRIBUTION_KEYS = [
  'interaction_target',
  'interaction_type',
  'input_delay',
  'processing_duration',
  'presentation_delay',
  'longest_script_subpart',
  'element',
  'url',
  'time_to_first_byte',
  'resource_load_delay',
  'resource_load_duration',
  'element_render_delay',
  'largest_shift_target',
  'largest_shift_value',
  'largest_shift_time',
  'first_byte_to_fcp',
  'waiting_duration',
  'cache_duration',
  'dns_duration',
  'connection_duration',
  'request_duration',
] as const
const FRAME_KEYS = [
  'start_time',
  'duration',
  'blocking_duration',
  'render_start',
  'style_and_layout_start',
  'first_ui_event_timestamp',
] as const

/** The known keys of `from`, strings cut (URLs to the URL bound), everything else as sent. */
function pick(from: Record<string, unknown>, keys: readonly string[], bounds: Bounds): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k of keys) {
    const v = from[k]
    if (v === undefined || v === null) continue
    if (typeof v === 'string') {
      const s = k === 'url' || k === 'source_url' ? bounds.capUrl(v) : text(v)
      if (s !== undefined) out[k] = s
    } else out[k] = v
  }
  return out
}

function script(v: unknown, bounds: Bounds): Record<string, unknown> | undefined {
  return isRecord(v) ? pick(v, SCRIPT_KEYS, bounds) : undefined
}

function vitalData(v: Record<string, unknown>, bounds: Bounds): VitalData | undefined {
  const a = isRecord(v.a) ? v.a : {}
  const attribution = pick(a, ATTRIBUTION_KEYS, bounds)
  const longest = script(a.longest_script, bounds)
  if (longest) attribution.longest_script = longest
  const data: Record<string, unknown> = { name: v.n, value: v.v, id: v.i, attribution }
  const nav = text(v.t)
  if (nav) data.navigation_type = nav
  // Validated with a placeholder rating and delta; the daemon computes both.
  if (validateData('page_web_vital', { ...data, rating: 'good', delta: 0 }).length > 0) return undefined
  return data as VitalData
}

function frameData(f: Record<string, unknown>, bounds: Bounds): FrameData | undefined {
  const data = pick(f, FRAME_KEYS, bounds)
  const scripts = Array.isArray(f.scripts) ? f.scripts.slice(0, 5).map(s => script(s, bounds)) : []
  if (scripts.some(s => s === undefined)) return undefined
  data.scripts = scripts
  if (validateData('page_long_animation_frame', data).length > 0) return undefined
  return data as FrameData
}

interface MetricState {
  data: VitalData
  /** The value last stored (absent: never stored). */
  stored?: number
  poorStored: boolean
}
interface DocState {
  ctx: Context
  metrics: Map<string, MetricState>
  left: boolean
}

/** Web Vitals of top-level pages: the binding needs Runtime like the interaction one. */
export const VITALS_CAPTURE: CaptureNeeds = {
  category: 'page',
  targets: ['page'],
  domains: ['Runtime'],
  pageScripts: ['vitals'],
}

export function createVitalsCollector(opts: VitalsCollectorOptions = {}): VitalsCollector {
  const logger = opts.logger ?? silentLogger
  const bounds = opts.bounds ?? new Bounds()
  const suffix = randomBytes(6).toString('hex')
  const bindingName = `__browserTelemetryVitals_${suffix}`
  const worldName = `browser-telemetry-vitals-${suffix}`
  const source = buildVitalsScript(bindingName, {
    flushMs: opts.flushMs ?? 250,
    maxFrames: MAX_FRAMES_PER_REPORT,
    textMax: TEXT_MAX,
  })
  const stats: VitalsStats = { reports: 0, invalid: 0, framesOverCap: 0 }
  const current = new Map<string, () => DocState | undefined>()
  const latest = (targetId: string): Partial<Record<WebVitalName, number>> => {
    const doc = current.get(targetId)?.()
    const out: Partial<Record<WebVitalName, number>> = {}
    for (const m of doc?.metrics.values() ?? []) out[m.data.name] = m.data.value
    return out
  }

  async function attach(session: TargetSession, emit: Emit): Promise<Detach> {
    // Web Vitals are a property of the page: top-level documents of page targets only.
    if (session.targetType !== 'page') return () => undefined
    const docs = new Map<number, DocState>()

    const store = (doc: DocState, m: MetricState): void => {
      const { value } = m.data
      const data: EventData<'page_web_vital'> = {
        ...doc.ctx,
        ...m.data,
        rating: webVitalRating(m.data.name as WebVitalName, value),
        delta: value - (m.stored ?? 0),
      }
      m.stored = value
      emit({ type: 'page_web_vital', data, source: SOURCE })
    }
    const leave = (doc: DocState): void => {
      doc.left = true
      for (const m of doc.metrics.values()) if (m.stored !== m.data.value) store(doc, m)
    }
    const leaveAll = (): void => {
      for (const doc of docs.values()) if (!doc.left) leave(doc)
    }

    const onReport = (report: VitalsReport): void => {
      let doc = docs.get(report.origin)
      if (!doc) {
        if (docs.size >= MAX_DOCUMENTS) {
          const [oldest, state] = docs.entries().next().value!
          if (!state.left) leave(state)
          docs.delete(oldest)
        }
        doc = { ctx: session.context(), metrics: new Map(), left: false }
        docs.set(report.origin, doc)
      }
      for (const v of report.vitals) {
        const prev = doc.metrics.get(v.name)
        // A new id: the document came back from the back/forward cache and measures afresh.
        if (prev && prev.data.id !== v.id) {
          if (prev.stored !== prev.data.value) store(doc, prev)
          if (doc.left) {
            doc.left = false
            doc.ctx = session.context()
          }
        }
        const m: MetricState =
          prev && prev.data.id === v.id ? Object.assign(prev, { data: v }) : { data: v, poorStored: false }
        doc.metrics.set(v.name, m)
        if (doc.left || FINAL_WHEN_REPORTED.has(v.name)) {
          if (m.stored !== v.value) store(doc, m)
        } else if (!m.poorStored && webVitalRating(v.name, v.value) === 'poor') {
          m.poorStored = true
          store(doc, m)
        }
      }
      if (report.hidden && !doc.left) leave(doc)
      else if (report.hidden) doc.left = true
      for (const f of report.frames) {
        emit({ type: 'page_long_animation_frame', data: { ...session.context(), ...f }, source: SOURCE })
      }
    }

    const bag = new Disposer()
    current.set(session.targetId, () => [...docs.values()].find(d => !d.left))
    bag.add(() => current.delete(session.targetId))
    bag.add(
      session.on('Runtime.bindingCalled', p => {
        if (p.name !== bindingName) return
        const report = parseVitalsPayload(p.payload, bounds)
        if (!report) {
          stats.invalid++
          return
        }
        stats.reports++
        stats.invalid += report.invalid
        stats.framesOverCap += report.overCap
        onReport(report)
      }),
    )
    // A new document in the tab: the previous one was left.
    bag.add(
      session.on('Page.frameNavigated', p => {
        if (!p.frame.parentId) leaveAll()
      }),
    )
    const scriptId = await injectPageScript(session, bindingName, worldName, source)
    if (scriptId === undefined && !session.signal.aborted)
      logger.debug({ targetId: session.targetId }, 'vitals script not installed')
    return () => {
      leaveAll()
      docs.clear()
      bag.dispose()
      if (session.signal.aborted) return
      if (scriptId) void session.sendMayFail('Page.removeScriptToEvaluateOnNewDocument', { identifier: scriptId })
      void session.sendMayFail('Runtime.removeBinding', { name: bindingName })
    }
  }

  return { name: 'vitals', capture: VITALS_CAPTURE, attach, stats, latest, bindingName, worldName }
}
