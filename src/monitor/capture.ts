// Applies the capture plan (capture-plan.ts) to one attached target: enables the plan's domains and
// attaches the collectors the plan places there at attach time, and on a category change
// detaches the collectors switched off, disables / enables the domains that changed and attaches
// the collectors switched on, on the same session (no reattach; other categories' state untouched).
import type { Protocol } from 'devtools-protocol'
import type { Emit } from '../pipeline/pipeline.js'
import type { Logger } from '../log.js'
import {
  TIMELINE_EVENT_TYPES,
  capturePlan,
  CAPTURE_CATEGORIES,
  type CapturePlan,
  type PlanDomain,
  type PlannedCollector,
} from './capture-plan.js'
import type { AttachedTarget } from './target-session.js'
import { IGNORED_CDP_TYPES, WORKER_TYPES } from './target-types.js'
import type { Collector, Detach } from './types.js'

/** What the plan is built from: the enabled set ('recording' in it while the recording is on) and the body cap. */
export interface CaptureSwitches {
  enabled: Iterable<string>
  /** The body cap in bytes (absent: the default). */
  bodyMaxBytes?: number
}

/** Where the monitor reads the switches and hears about changes (src/daemon/stages.ts: from the pipeline's categories). */
export interface CaptureSource {
  current(): CaptureSwitches
  /** Returns the unsubscribe. */
  onChange(listener: (switches: CaptureSwitches) => void): () => void
}

/** The plans of a source's switches over one collector list (the monitor's), in force and on change. */
export interface PlanSource {
  current(): CapturePlan
  /** Returns the unsubscribe. */
  onChange(listener: (plan: CapturePlan) => void): () => void
}

/** Fixed switches: what a monitor without a source does (tests, tools), every capture category on by default. */
export function fixedCapture(enabled: Iterable<string> = CAPTURE_CATEGORIES, bodyMaxBytes?: number): CaptureSource {
  const switches = { enabled: [...enabled], bodyMaxBytes }
  return { current: () => switches, onChange: () => () => undefined }
}

/** The plan source of a switch source over the collectors the monitor attaches. */
export function planSource(source: CaptureSource, collectors: readonly PlannedCollector[]): PlanSource {
  const planOf = (s: CaptureSwitches) => capturePlan(s.enabled, collectors, { bodyMaxBytes: s.bodyMaxBytes })
  return {
    current: () => planOf(source.current()),
    onChange: l => source.onChange(s => l(planOf(s))),
  }
}

/** Target.setAutoAttach parameters of a plan: paused until set up, flattened, filtered to what the plan watches. */
export function autoAttachParams(plan: CapturePlan): Protocol.Target.SetAutoAttachRequest {
  const excluded: string[] = [...IGNORED_CDP_TYPES]
  if (!plan.attachIframes) excluded.push('iframe')
  if (!plan.attachWorkers) excluded.push(...WORKER_TYPES)
  return {
    autoAttach: true,
    waitForDebuggerOnStart: true,
    flatten: true,
    filter: [...excluded.map(type => ({ type, exclude: true })), {}],
  }
}

/** Whether two plans auto-attach the same target types. */
export function sameAttachFilter(a: CapturePlan, b: CapturePlan): boolean {
  return a.attachIframes === b.attachIframes && a.attachWorkers === b.attachWorkers
}

export interface TargetCaptureOptions {
  collectors: readonly Collector[]
  emit: Emit
  logger: Logger
}

export class TargetCapture {
  /** Domains enabled (commands sent) on the target. */
  private readonly domains = new Set<PlanDomain>()
  /** Category collectors attached now, with their detach (undefined while attach is running). */
  private readonly attached = new Map<Collector, Detach | undefined>()
  /** Plan changes run one after the other per target. */
  private chain: Promise<void> = Promise.resolve()
  private closed = false

  constructor(
    private readonly target: AttachedTarget,
    private readonly opts: TargetCaptureOptions,
  ) {
    target.addDetach(() => this.close())
  }

  /**
   * At attach (target paused), first on the wire: the plan's domains for this target. The answers
   * are awaited by the monitor's bounded setup.
   */
  enableDomains(plan: CapturePlan): Promise<unknown> {
    const tp = plan.byTarget(this.target.targetType)
    return Promise.all(tp.domains.map(d => this.enable(d, plan)))
  }

  /**
   * At attach, right after enableDomains in the same tick: every collector's attach starts, so its
   * listeners are in place before any answer (a pre-existing tab's console history, replayed on
   * Runtime.enable, is captured as before).
   */
  attachCollectors(plan: CapturePlan): Promise<unknown> {
    const tp = plan.byTarget(this.target.targetType)
    const collectors = Promise.all(
      this.opts.collectors.map(c => {
        if (c.capture !== undefined && !tp.collectors.includes(c.name)) return undefined
        return this.attachCollector(c)
      }),
    )
    this.chain = collectors.then(() => undefined)
    return collectors
  }

  /** A category change: applied after whatever is still being applied to this target. */
  apply(plan: CapturePlan): Promise<void> {
    const next = this.chain.then(() => this.applyNow(plan))
    this.chain = next
    return next
  }

  counts(): { domains: number; collectors: number } {
    return { domains: this.domains.size, collectors: this.attached.size }
  }

  private async applyNow(plan: CapturePlan): Promise<void> {
    if (this.closed || this.target.closed) return
    const tp = plan.byTarget(this.target.targetType)
    const wanted = (c: Collector) => c.capture === undefined || tp.collectors.includes(c.name)
    // Off first: a collector stops (listeners, scripts, bindings) before its domain goes.
    for (const [c, detach] of [...this.attached]) {
      if (wanted(c)) continue
      this.attached.delete(c)
      this.runDetach(c, detach)
    }
    const disabled = [...this.domains].filter(d => !tp.domains.includes(d)).map(d => this.disable(d))
    // Enabled before the collectors attach: events Chromium replays on enable (stored console
    // messages of the session) arrive before the answer and reach no collector, so nothing
    // emitted while the category was off, or already captured before it was switched off, comes now.
    // Disables are awaited too: once apply() resolves, Chromium has stopped sending those events.
    await Promise.all([...disabled, ...tp.domains.filter(d => !this.domains.has(d)).map(d => this.enable(d, plan))])
    if (this.closed || this.target.closed) return
    await Promise.all(
      this.opts.collectors
        .filter(c => c.capture !== undefined && wanted(c) && !this.attached.has(c))
        .map(c => this.attachCollector(c)),
    )
  }

  private async attachCollector(c: Collector): Promise<void> {
    if (!c.attach) return
    this.attached.set(c, undefined)
    try {
      const d = await c.attach(this.target, this.opts.emit)
      const detach = typeof d === 'function' ? d : undefined
      // Switched off (or the target closed) while attach was running: undo at once.
      if (!this.attached.has(c) || this.closed) {
        this.runDetach(c, detach)
        return
      }
      this.attached.set(c, detach)
    } catch (err) {
      this.attached.delete(c)
      if (!this.target.closed)
        this.opts.logger.warn({ err, collector: c.name, targetId: this.target.targetId }, 'collector attach failed')
    }
  }

  private runDetach(c: Collector, detach: Detach | undefined): void {
    try {
      detach?.()
    } catch (err) {
      this.opts.logger.warn({ err, collector: c.name }, 'collector detach threw')
    }
  }

  private enable(d: PlanDomain, plan: CapturePlan): Promise<unknown> {
    this.domains.add(d)
    const t = this.target
    switch (d) {
      case 'Page':
        return t.sendMayFail('Page.enable')
      case 'Runtime':
        return t.sendMayFail('Runtime.enable')
      case 'Network':
        return t.sendMayFail('Network.enable', { maxPostDataSize: plan.maxPostDataSize })
      case 'PerformanceTimeline':
        return t.sendMayFail('PerformanceTimeline.enable', { eventTypes: TIMELINE_EVENT_TYPES })
    }
  }

  private disable(d: PlanDomain): Promise<unknown> {
    this.domains.delete(d)
    const t = this.target
    switch (d) {
      case 'Page':
        return t.sendMayFail('Page.disable')
      case 'Runtime':
        return t.sendMayFail('Runtime.disable')
      case 'Network':
        return t.sendMayFail('Network.disable')
      // No disable command: an empty list stops the events.
      case 'PerformanceTimeline':
        return t.sendMayFail('PerformanceTimeline.enable', { eventTypes: [] })
    }
  }

  /** The target went away: every attached collector detaches (its session is closed; no commands). */
  private close(): void {
    if (this.closed) return
    this.closed = true
    const attached = [...this.attached]
    this.attached.clear()
    for (const [c, detach] of attached.reverse()) this.runDetach(c, detach)
  }
}
