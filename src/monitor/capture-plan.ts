// The capture plan: from the enabled categories, exactly which CDP domains each kind of
// target gets, which collectors run on it (and so which scripts, bindings and body fetches), and
// which targets are auto-attached at all. Pure; the monitor applies it (capture.ts), at attach and
// live whenever the categories change. One place, so the cost table of docs/configuration.md and
// the tests read it.
//
// What each category truly needs (derived from the collectors and the event model):
// - Page on every frame-bearing target (page, iframe, background_page) whatever is on: the monitor's
//   own context (url, frame_id, loader_id, nav_seq) comes from Page.frameNavigated and the frame
//   tree, and every context-bearing event carries it; the screenshot collector's active page and
//   its capture-after-load come from Page events too. Never disabled while a target is attached
//   (a navigation missed while off would leave nav_seq wrong for good).
// - console: Runtime (consoleAPICalled, exceptionThrown) on every target that runs script.
// - network: Network (requests, responses, post data up to the body cap; network_idle is computed
//   from the page session's own requests) on every target; response/post-data bodies are fetched.
// - page: PerformanceTimeline (layout-shift for page_layout_shift and the layout-settled rule, LCP)
//   on pages and OOPIFs; on pages also Runtime, the Web Vitals binding and its new-document script
//   in an isolated world (page_web_vital, page_long_animation_frame). page_navigation, DCL, load and the settle rules use Page (always on);
//   page_navigation_settled is independent of network_idle, so page never needs Network.
// - interaction: Runtime (a binding's calls are delivered only while Runtime is enabled, and
//   Runtime.disable drops the binding: verified against Chromium), the binding, the new-document
//   script in an isolated world, on pages and OOPIFs (workers have no DOM).
// - screenshot: nothing per target beyond Page (captures go to the active page).
// - recording (not a category: frames are not events; on while the capture config's recording is,
//   the name 'recording' in the enabled set): the screencast collector on page targets, Page only.
// - Auto-attach: OOPIFs only when a category reports from them (console, network, page,
//   interaction); dedicated/shared/service workers only for console or network.
import type { Category, TargetType } from '../events/index.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { DOCUMENT_TYPES, FRAME_TYPES, WORKER_TYPES } from './target-types.js'

/** Categories whose capture needs CDP work on targets. */
export const CAPTURE_CATEGORIES = ['console', 'network', 'page', 'interaction', 'screenshot'] as const
export type CaptureCategory = (typeof CAPTURE_CATEGORIES)[number]
/** Screen recording: in the enabled set while on (not a category); attaches the screencast collector to pages. */
export const RECORDING = 'recording'
/** What a collector is attached for: a capture category, or the screen recording. */
export type PlanCollector = CaptureCategory | typeof RECORDING

/** The CDP domains a plan switches (in the order they are enabled). */
export const PLAN_DOMAINS = ['Page', 'Runtime', 'Network', 'PerformanceTimeline'] as const
export type PlanDomain = (typeof PLAN_DOMAINS)[number]

/** PerformanceTimeline event types the page collector reads. */
export const TIMELINE_EVENT_TYPES = ['layout-shift', 'largest-contentful-paint']

/** The network collector's default body cap. */
export const DEFAULT_BODY_MAX_BYTES = DEFAULT_SETTINGS.networkBodyMaxBytes

export interface TargetPlan {
  /** Domains enabled on the target, in PLAN_DOMAINS order. */
  domains: PlanDomain[]
  /** Collector categories attached to the target (their listeners, state, scripts, bindings), and the recording. */
  collectors: PlanCollector[]
  /** The interaction binding + new-document script (isolated world) are installed. */
  interactionScript: boolean
}

export interface CapturePlan {
  /** The capture categories that are on, in CAPTURE_CATEGORIES order. */
  categories: CaptureCategory[]
  /** Screen recording is on (pages get the screencast collector). */
  recording: boolean
  /** Auto-attach OOPIF targets (type iframe). Pages (and background pages) are always attached. */
  attachIframes: boolean
  /** Auto-attach dedicated, shared and service workers. */
  attachWorkers: boolean
  /** Response bodies (Network.getResponseBody) and request bodies (inline up to the cap, or Network.getRequestPostData) are read. */
  bodies: boolean
  /** Network.enable's maxPostDataSize: request bodies Chromium inlines (the body cap; 0 without bodies). */
  maxPostDataSize: number
  /** Per target type; what a target of that type gets. */
  byTarget: (type: TargetType) => TargetPlan
}

export interface CapturePlanOptions {
  /** The body cap in bytes (--network-body-max-bytes; default 64 KiB); 0 = no bodies at all. */
  bodyMaxBytes?: number
}

/** The capture plan of an enabled-category set (monitor, control, connection, system, captcha need nothing from targets). */
export function capturePlan(enabled: Iterable<Category | string>, opts: CapturePlanOptions = {}): CapturePlan {
  const on = new Set(enabled)
  const categories = CAPTURE_CATEGORIES.filter(c => on.has(c))
  const has = (c: PlanCollector) => on.has(c)
  const attachIframes = has('console') || has('network') || has('page') || has('interaction')
  const attachWorkers = has('console') || has('network')
  const byType = new Map<TargetType, TargetPlan>()
  const byTarget = (type: TargetType): TargetPlan => {
    let p = byType.get(type)
    if (!p) byType.set(type, (p = targetPlan(has, type)))
    return p
  }
  const bodyMaxBytes = Math.max(0, opts.bodyMaxBytes ?? DEFAULT_BODY_MAX_BYTES)
  const bodies = has('network') && bodyMaxBytes > 0
  return {
    categories,
    recording: has(RECORDING),
    attachIframes,
    attachWorkers,
    bodies,
    maxPostDataSize: bodies ? bodyMaxBytes : 0,
    byTarget,
  }
}

function targetPlan(has: (c: PlanCollector) => boolean, type: TargetType): TargetPlan {
  const frames = FRAME_TYPES.has(type)
  const documents = DOCUMENT_TYPES.has(type)
  const interaction = documents && has('interaction')
  const want: Record<PlanDomain, boolean> = {
    Page: frames,
    // The Web Vitals binding on pages (page category) needs Runtime like the interaction one.
    Runtime: has('console') || interaction || (type === 'page' && has('page')),
    Network: has('network'),
    PerformanceTimeline: documents && has('page'),
  }
  const collectors: PlanCollector[] = []
  if (has('console')) collectors.push('console')
  if (has('network')) collectors.push('network')
  if (documents && has('page')) collectors.push('page')
  if (interaction) collectors.push('interaction')
  if (type === 'page' && has(RECORDING)) collectors.push(RECORDING)
  // The screenshot collector follows pages itself (always attached; it captures only while on).
  return { domains: PLAN_DOMAINS.filter(d => want[d]), collectors, interactionScript: interaction }
}

/** Whether the plan auto-attaches a target of this CDP type (pages and anything unknown always). */
export function planAttaches(plan: CapturePlan, type: TargetType): boolean {
  if (type === 'iframe') return plan.attachIframes
  if (WORKER_TYPES.has(type)) return plan.attachWorkers
  return true
}
