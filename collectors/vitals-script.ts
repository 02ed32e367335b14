// The script the Web Vitals collector injects into every top-level document (in its own isolated
// world): the web-vitals library's attribution build, pinned in package.json and read from its
// package as shipped, plus an agent that keeps the latest value of each metric and the long
// animation frames seen, and hands them to the daemon in one binding call per flush.
//
// installVitalsAgent and its parts run in the page and are serialised with
// Function.prototype.toString, so a body may only use its parameters, its own locals and browser
// globals; the parts reach the agent as parameters (see buildVitalsScript).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { cssSelectorFor } from './selector.js'

export interface VitalsAgentOptions {
  /** Changes are coalesced: one report at most this long after the first change. */
  flushMs: number
  /** Long animation frames kept between two reports (the rest are not reported). */
  maxFrames: number
  /** Strings (selectors, URLs, invokers) are cut to this many UTF-16 units in the page. */
  textMax: number
}

/** What the page sends through the binding (untrusted on arrival: see parseVitalsPayload). */
export interface VitalsPayload {
  /** performance.timeOrigin of the reporting document: which document the values belong to. */
  o: number
  /** Metrics that changed since the last report: name, value, id, navigation type, attribution. */
  v: { n: string; v: number; i: string; t?: string; a?: Record<string, unknown> }[]
  /** Long animation frames since the last report. */
  f: Record<string, unknown>[]
  /** Sent because the page was hidden or is being left. */
  h?: 1
  /** Long animation frames seen since the last report and not sent (over maxFrames). */
  d?: number
}

/** The subset of the web-vitals attribution build the agent calls. */
interface WebVitals {
  onTTFB: OnMetric
  onFCP: OnMetric
  onLCP: OnMetric
  onCLS: OnMetric
  onINP: OnMetric
}
type OnMetric = (cb: (m: Metric) => void, opts: { reportAllChanges: boolean; generateTarget: Target }) => void
type Target = (node: Node | null) => string | undefined
interface Metric {
  name: string
  value: number
  id: string
  navigationType?: string
  attribution?: Record<string, unknown>
}
interface ScriptTiming {
  sourceURL?: string
  sourceFunctionName?: string
  sourceCharPosition?: number
  invoker?: string
  invokerType?: string
  duration: number
  forcedStyleAndLayoutDuration?: number
  pauseDuration?: number
}
interface FrameTiming extends PerformanceEntry {
  blockingDuration?: number
  renderStart?: number
  styleAndLayoutStart?: number
  firstUIEventTimestamp?: number
  scripts?: ScriptTiming[]
}

/** The agent's self-contained parts, serialised apart and passed in (each uses only its parameters). */
export interface VitalsAgentParts {
  attributionOf: typeof attributionOf
  installIdleShim: typeof installIdleShim
}

/**
 * Runs once per top-level document (a subframe or a second run returns at once). Reports are
 * coalesced (at most one binding call per flushMs) and also sent when the page is hidden or left,
 * though Chromium may drop that last call while the tab navigates away: the daemon keeps the latest
 * values it has and stores them when the page is left, whatever arrives last.
 */
export function installVitalsAgent(
  bindingName: string,
  options: VitalsAgentOptions,
  loadWebVitals: () => WebVitals,
  selectorFor: (el: Element) => string,
  parts: VitalsAgentParts,
): void {
  if (window !== window.top) return
  const guard = '__browserTelemetryVitals'
  if (Reflect.get(window, guard)) return
  if (typeof Reflect.get(window, bindingName) !== 'function') return
  Reflect.set(window, guard, true)
  const origin = performance.timeOrigin
  const max = options.textMax
  const cut = (s: unknown): string | undefined =>
    typeof s === 'string' && s !== '' ? (s.length > max ? s.slice(0, max) : s) : undefined
  const abs = (t: number | undefined): number | undefined => (t ? origin + t : undefined)

  let vitals: Record<string, VitalsPayload['v'][number]> = {}
  let frames: VitalsPayload['f'] = []
  let dropped = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = (hidden: boolean): void => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    const v = Object.values(vitals)
    if (v.length === 0 && frames.length === 0 && dropped === 0 && !hidden) return
    const payload: VitalsPayload = { o: origin, v, f: frames }
    if (hidden) payload.h = 1
    if (dropped > 0) payload.d = dropped
    vitals = {}
    frames = []
    dropped = 0
    // Looked up at each call: a binding added back later (category switched on again) is a new function.
    const binding: unknown = Reflect.get(window, bindingName)
    if (typeof binding !== 'function') return
    try {
      ;(binding as (s: string) => void)(JSON.stringify(payload))
    } catch {
      /* binding gone with the session */
    }
  }
  const schedule = (): void => {
    if (timer === undefined) timer = setTimeout(() => flush(false), options.flushMs)
  }

  const target = (node: Node | null): string | undefined => {
    const el = node && node.nodeType === 3 ? node.parentElement : node
    if (!el || el.nodeType !== 1 || !el.isConnected) return undefined
    try {
      return cut(selectorFor(el as Element))
    } catch {
      return undefined
    }
  }
  const script = (s: ScriptTiming): Record<string, unknown> => ({
    source_url: cut(s.sourceURL),
    source_function_name: cut(s.sourceFunctionName),
    source_char_position: (s.sourceCharPosition ?? -1) >= 0 ? s.sourceCharPosition : undefined,
    invoker: cut(s.invoker),
    invoker_type: cut(s.invokerType),
    duration: s.duration,
    forced_style_and_layout_duration: s.forcedStyleAndLayoutDuration,
    pause_duration: s.pauseDuration,
  })
  // The elements of the last few trusted inputs by event time: web-vitals may report an INP before
  // it resolved the interaction's target (or Chromium gives its entries none); the input's own
  // target, found by the interaction's start time (the event's timeStamp), stands in.
  const inputs: { time: number; el: Element }[] = []
  const noteInput = (e: Event): void => {
    if (!e.isTrusted || !(e.target instanceof Element)) return
    if (inputs.length >= 8) inputs.shift()
    inputs.push({ time: e.timeStamp, el: e.target })
  }
  for (const type of ['pointerdown', 'pointerup', 'click', 'keydown', 'keyup'])
    addEventListener(type, noteInput, { capture: true, passive: true })
  const inputTarget = (time: unknown): string | undefined => {
    const hit = inputs.find(i => i.time === time)
    return hit ? target(hit.el) : undefined
  }

  const report = (m: Metric): void => {
    vitals[m.name] = {
      n: m.name,
      v: m.value,
      i: m.id,
      t: m.navigationType,
      a: parts.attributionOf(m, cut, inputTarget, script),
    }
    // An interaction is often followed at once by a navigation (the agent's next step): no coalescing.
    if (m.name === 'INP') flush(false)
    else schedule()
  }

  // web-vitals computes INP in an idle callback, which would come too late: see installIdleShim.
  const idle = parts.installIdleShim()
  const wv = loadWebVitals()
  const opts = { reportAllChanges: true, generateTarget: target }
  wv.onTTFB(report, opts)
  wv.onFCP(report, opts)
  wv.onLCP(report, opts)
  wv.onCLS(report, opts)
  wv.onINP(report, opts)

  try {
    new PerformanceObserver(list => {
      idle.framesDelivered()
      for (const entry of list.getEntries()) {
        if (frames.length >= options.maxFrames) {
          dropped++
          continue
        }
        const e = entry as FrameTiming
        const scripts = [...(e.scripts ?? [])].sort((x, y) => y.duration - x.duration).slice(0, 5)
        frames.push({
          start_time: origin + e.startTime,
          duration: e.duration,
          blocking_duration: e.blockingDuration ?? 0,
          render_start: abs(e.renderStart),
          style_and_layout_start: abs(e.styleAndLayoutStart),
          first_ui_event_timestamp: abs(e.firstUIEventTimestamp),
          scripts: scripts.map(script),
        })
      }
      schedule()
    }).observe({ type: 'long-animation-frame', buffered: true })
  } catch {
    /* no Long Animation Frames API in this browser */
  }

  // After web-vitals' own listeners (registered above), which report their final values first.
  addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && flush(true), true)
  addEventListener('pagehide', () => flush(true), true)
}

/** A metric's attribution as the event's fields (strings cut in the page). */
export function attributionOf(
  m: Metric,
  cut: (s: unknown) => string | undefined,
  inputTarget: (time: unknown) => string | undefined,
  script: (s: ScriptTiming) => Record<string, unknown>,
): Record<string, unknown> {
  const a = m.attribution ?? {}
  switch (m.name) {
    case 'INP': {
      const out: Record<string, unknown> = {
        interaction_target: cut(a.interactionTarget) ?? inputTarget(a.interactionTime),
        interaction_type: cut(a.interactionType),
        input_delay: a.inputDelay,
        processing_duration: a.processingDuration,
        presentation_delay: a.presentationDelay,
      }
      const longest = a.longestScript as { entry?: ScriptTiming; subpart?: string } | undefined
      if (longest?.entry) {
        out.longest_script = script(longest.entry)
        out.longest_script_subpart = cut(longest.subpart)
      }
      return out
    }
    case 'LCP':
      return {
        element: cut(a.target),
        url: cut(a.url),
        time_to_first_byte: a.timeToFirstByte,
        resource_load_delay: a.resourceLoadDelay,
        resource_load_duration: a.resourceLoadDuration,
        element_render_delay: a.elementRenderDelay,
      }
    case 'CLS':
      return {
        largest_shift_target: cut(a.largestShiftTarget),
        largest_shift_value: a.largestShiftValue,
        largest_shift_time: a.largestShiftTime,
      }
    case 'FCP':
      return { time_to_first_byte: a.timeToFirstByte, first_byte_to_fcp: a.firstByteToFCP }
    default:
      return {
        waiting_duration: a.waitingDuration,
        cache_duration: a.cacheDuration,
        dns_duration: a.dnsDuration,
        connection_duration: a.connectionDuration,
        request_duration: a.requestDuration,
      }
  }
}

/**
 * web-vitals computes INP in an idle callback, up to 1 s after the interaction, or when the page
 * is hidden, whose report is lost when the tab navigates away: an agent that clicks and then
 * navigates would never get one. This world's globals are the agent's own (the page's are not):
 * here an idle callback runs once the long animation frames of the interaction (which its
 * attribution names) are delivered, else 150 ms after the next frame, at the latest after 1 s.
 * Returns what the long animation frame observer calls as frames are delivered.
 */
export function installIdleShim(): { framesDelivered: () => void } {
  const idle: (() => void)[] = []
  let loafAt = -Infinity
  const releaseIdle = (): void => {
    for (const run of idle.splice(0)) setTimeout(run, 0)
  }
  Reflect.set(globalThis, 'requestIdleCallback', (cb: () => void) => {
    let done = false
    const run = (): void => {
      if (done) return
      done = true
      cb()
    }
    if (performance.now() - loafAt < 100) setTimeout(run, 0)
    else idle.push(run)
    requestAnimationFrame(() => setTimeout(run, 150))
    setTimeout(run, 1000)
    return 0
  })
  Reflect.set(globalThis, 'cancelIdleCallback', () => undefined)
  return {
    framesDelivered: () => {
      loafAt = performance.now()
      releaseIdle()
    },
  }
}

let webVitalsSource: string | undefined
/** The web-vitals attribution build as its package ships it (an IIFE defining `webVitals`). */
function webVitalsIife(): string {
  if (webVitalsSource === undefined) {
    const entry = createRequire(import.meta.url).resolve('web-vitals/attribution')
    // Its source map comment would point the page's DevTools at a file that is not served.
    webVitalsSource = readFileSync(join(dirname(entry), 'web-vitals.attribution.iife.js'), 'utf8').replace(
      /^\/\/# sourceMappingURL=.*$/m,
      '',
    )
  }
  return webVitalsSource
}

/**
 * The complete injected source. The library is wrapped in a function the agent calls only in a
 * top-level document, so a subframe never runs it. `__name`: see buildInteractionScript.
 */
export function buildVitalsScript(bindingName: string, options: VitalsAgentOptions): string {
  return `(() => {
const __name = (fn) => fn;
const loadWebVitals = () => {
${webVitalsIife()}
return webVitals;
};
const parts = {
  attributionOf: (${attributionOf.toString()}),
  installIdleShim: (${installIdleShim.toString()}),
};
(${installVitalsAgent.toString()})(${JSON.stringify(bindingName)}, ${JSON.stringify(options)}, loadWebVitals, (${cssSelectorFor.toString()}), parts);
})()`
}
