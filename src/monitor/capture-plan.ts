// The capture plan: from the enabled categories and the collectors' own declarations (each
// collector states its category, target types, CDP domains and page scripts: `capture` in
// types.ts), exactly which CDP domains each kind of target gets, which collectors run on it, and
// which targets are auto-attached at all. Pure; the monitor applies it (capture.ts), at attach and
// live whenever the categories change. A collector the plan cannot place is refused at startup
// (checkCollectors), never silently left unattached.
//
// What the monitor itself needs, whatever the collectors declare: Page on every frame-bearing
// target (page, iframe, background_page). Its own context (url, frame_id, loader_id, nav_seq)
// comes from Page.frameNavigated and the frame tree, and every context-bearing event carries it;
// a navigation missed while off would leave nav_seq wrong for good.
//
// Auto-attach follows from the targets the enabled collectors declare: OOPIFs while one of them
// reports from iframes, dedicated/shared/service workers while one reports from workers.
import { CATEGORIES, type Category, type TargetType } from '../events/index.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { FRAME_TYPES, WORKER_TYPES } from './target-types.js'

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

/** What a collector needs from the plan; it is attached to a target only while its category is on. */
export interface CaptureNeeds {
  /** The category it reports (or the screen recording); the collector runs while it is on. */
  category: Category | typeof RECORDING
  /** The target types it attaches to ('all': every attached target, unknown types included). */
  targets: readonly TargetType[] | 'all'
  /** CDP domains it needs on those targets, beyond the monitor's own Page on frame targets. */
  domains: readonly PlanDomain[]
  /** Page scripts it installs on those targets (binding and new-document script in an isolated world). */
  pageScripts?: readonly string[]
  /** It reads request and response bodies (Network.getResponseBody, post data up to the body cap). */
  bodies?: boolean
}

/** A collector as the plan sees it: its name and, when the plan places it, its needs (absent: always attached). */
export interface PlannedCollector {
  readonly name: string
  readonly capture?: CaptureNeeds
}

export interface TargetPlan {
  /** Domains enabled on the target, in PLAN_DOMAINS order. */
  domains: PlanDomain[]
  /** Names of the planned collectors attached to the target, in list order. */
  collectors: string[]
  /** Page scripts installed on the target, in list order. */
  pageScripts: string[]
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

const PLACEABLE: ReadonlySet<string> = new Set([...CATEGORIES, RECORDING])

/**
 * Refuses a collector list the plan cannot place: a category that is no event category (nor the
 * recording), no target types, an unknown domain, a name used twice. Run at startup, so a collector
 * added without a usable declaration stops the daemon with this message instead of never attaching.
 */
export function checkCollectors(collectors: readonly PlannedCollector[]): void {
  const names = new Set<string>()
  for (const c of collectors) {
    if (names.has(c.name)) throw new Error(`collector '${c.name}' is listed twice`)
    names.add(c.name)
    const need = c.capture
    if (!need) continue
    const where = `collector '${c.name}'`
    if (!PLACEABLE.has(need.category))
      throw new Error(`${where}: category '${String(need.category)}' is not one of ${[...PLACEABLE].join(', ')}`)
    if (need.targets !== 'all' && need.targets.length === 0) throw new Error(`${where}: declares no target types`)
    for (const d of need.domains)
      if (!(PLAN_DOMAINS as readonly string[]).includes(d))
        throw new Error(`${where}: domain '${String(d)}' is not one of ${PLAN_DOMAINS.join(', ')}`)
  }
}

function reaches(need: CaptureNeeds, type: TargetType): boolean {
  return need.targets === 'all' || need.targets.includes(type)
}

/** The capture plan of an enabled-category set over the collectors' declarations (monitor, control, connection, system, captcha need nothing from targets). */
export function capturePlan(
  enabled: Iterable<Category | string>,
  collectors: readonly PlannedCollector[],
  opts: CapturePlanOptions = {},
): CapturePlan {
  const on = new Set(enabled)
  const active = collectors.flatMap(c =>
    c.capture && on.has(c.capture.category) ? [{ name: c.name, need: c.capture }] : [],
  )
  const byType = new Map<TargetType, TargetPlan>()
  const byTarget = (type: TargetType): TargetPlan => {
    let p = byType.get(type)
    if (!p) byType.set(type, (p = targetPlan(active, type)))
    return p
  }
  const bodyMaxBytes = Math.max(0, opts.bodyMaxBytes ?? DEFAULT_BODY_MAX_BYTES)
  const bodies = active.some(a => a.need.bodies) && bodyMaxBytes > 0
  return {
    categories: CAPTURE_CATEGORIES.filter(c => on.has(c)),
    recording: on.has(RECORDING),
    attachIframes: active.some(a => reaches(a.need, 'iframe')),
    attachWorkers: active.some(a => [...WORKER_TYPES].some(w => reaches(a.need, w))),
    bodies,
    maxPostDataSize: bodies ? bodyMaxBytes : 0,
    byTarget,
  }
}

function targetPlan(active: readonly { name: string; need: CaptureNeeds }[], type: TargetType): TargetPlan {
  const here = active.filter(a => reaches(a.need, type))
  const want = new Set<PlanDomain>(here.flatMap(a => a.need.domains))
  if (FRAME_TYPES.has(type)) want.add('Page')
  return {
    domains: PLAN_DOMAINS.filter(d => want.has(d)),
    collectors: here.map(a => a.name),
    pageScripts: here.flatMap(a => a.need.pageScripts ?? []),
  }
}

/** Whether the plan auto-attaches a target of this CDP type (pages and anything unknown always). */
export function planAttaches(plan: CapturePlan, type: TargetType): boolean {
  if (type === 'iframe') return plan.attachIframes
  if (WORKER_TYPES.has(type)) return plan.attachWorkers
  return true
}
