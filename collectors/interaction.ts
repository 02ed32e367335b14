// Interaction collector: clicks, keys and settled scrolls, reported by a script injected into every
// document of a page or iframe target (interaction-script.ts) through a CDP binding.
//
// The script runs in an isolated world (the page cannot see the binding or patch what the script
// uses) and only reports trusted (real input) events. Whatever arrives through the binding is
// still treated as untrusted JSON: size-capped, parsed, reduced to the known keys, validated
// against the event schema and rate-limited per session; every context field comes from the
// monitor's session, never from the page.
import { randomBytes } from 'node:crypto'
import { validateData, type Context } from '../src/events/index.js'
import type { Emit, EventInput } from '../src/pipeline.js'
import { silentLogger, type Logger } from '../src/log.js'
import type { Collector, Detach, TargetSession } from '../src/monitor/types.js'
import { buildInteractionScript } from './interaction-script.js'

export interface InteractionCollectorOptions {
  /** Quiet time before a scroll counts as settled (default 300 ms). */
  scrollQuietMs?: number
  /** Per-session token bucket for binding calls: burst size and sustained rate (default 100, 50/s). */
  rateLimit?: { burst: number; perSecond: number }
  logger?: Logger
  /** Monotonic milliseconds (injectable for tests). */
  now?: () => number
}

export interface InteractionStats {
  /** Events emitted to the pipeline. */
  accepted: number
  /** Binding payloads that failed parsing or validation. */
  invalid: number
  /** Binding payloads dropped by the per-session rate limit. */
  rateLimited: number
}

export interface InteractionCollector extends Collector {
  readonly stats: InteractionStats
  /** The binding and world names (one random pair per collector, so two daemons never share them). */
  readonly bindingName: string
  readonly worldName: string
}

/** Binding payloads longer than this are dropped unparsed (a real one is well under 4 KiB). */
export const MAX_PAYLOAD_CHARS = 16 * 1024
export const DEFAULT_RATE_LIMIT = { burst: 100, perSecond: 50 }
const SOURCE = { kind: 'cdp', event: 'Runtime.bindingCalled' } as const
const TEXT_MAX = 100

/**
 * Classic token bucket: up to `burst` at once, refilled at `perSecond`. 50/s sustained with a
 * burst of 100 never drops human or agent typing (30 keys/s, key repeat) yet caps a flood.
 */
export class TokenBucket {
  private tokens: number
  private last: number
  constructor(private readonly burst: number, private readonly perSecond: number, private readonly now: () => number) {
    this.tokens = burst
    this.last = now()
  }

  take(): boolean {
    const t = this.now()
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.perSecond)
    this.last = t
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }
}

const FIELDS = {
  click: { type: 'interaction_click', keys: ['x', 'y', 'selector', 'tag', 'text'] },
  key: { type: 'interaction_key', keys: ['key', 'selector', 'tag'] },
  scroll: { type: 'interaction_scroll_settled', keys: ['from_x', 'from_y', 'to_x', 'to_y', 'target_selector'] },
} as const

/**
 * Turns one binding payload into an event input, or undefined when it is not a well-formed report.
 * Only the known keys of the report's kind are kept, context comes from `context` alone, and the
 * result is validated against the event's data schema.
 */
export function parseInteractionPayload(payload: unknown, context: Context): EventInput | undefined {
  if (typeof payload !== 'string' || payload.length > MAX_PAYLOAD_CHARS) return undefined
  let raw: unknown
  try { raw = JSON.parse(payload) } catch { return undefined }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined
  const report = raw as Record<string, unknown>
  const kind = report.t
  if (kind !== 'click' && kind !== 'key' && kind !== 'scroll') return undefined
  const spec = FIELDS[kind]
  const data: Record<string, unknown> = { ...context }
  for (const key of spec.keys) {
    if (Object.prototype.hasOwnProperty.call(report, key)) data[key] = report[key]
  }
  if (validateData(spec.type, data).length > 0) return undefined
  return { type: spec.type, data, source: SOURCE } as EventInput
}

/** Targets with a DOM: the script only makes sense there (workers have no Page domain). */
function hasDocuments(session: TargetSession): boolean {
  return session.targetType === 'page' || session.targetType === 'iframe'
}

export function createInteractionCollector(opts: InteractionCollectorOptions = {}): InteractionCollector {
  const logger = opts.logger ?? silentLogger
  const now = opts.now ?? (() => performance.now())
  const limit = opts.rateLimit ?? DEFAULT_RATE_LIMIT
  const suffix = randomBytes(6).toString('hex')
  const bindingName = `__browserTelemetryInteraction_${suffix}`
  const worldName = `browser-telemetry-interaction-${suffix}`
  const source = buildInteractionScript(bindingName, { scrollQuietMs: opts.scrollQuietMs ?? 300, textMax: TEXT_MAX })
  const stats: InteractionStats = { accepted: 0, invalid: 0, rateLimited: 0 }

  async function attach(session: TargetSession, emit: Emit): Promise<Detach> {
    if (!hasDocuments(session)) return () => undefined
    const bucket = new TokenBucket(limit.burst, limit.perSecond, now)
    let warnedLimit = false
    const off = session.on('Runtime.bindingCalled', (p) => {
      if (p.name !== bindingName) return
      if (!bucket.take()) {
        stats.rateLimited++
        if (!warnedLimit) { warnedLimit = true; logger.warn({ targetId: session.targetId }, 'interaction binding flooded; rate-limiting this target') }
        return
      }
      const input = parseInteractionPayload(p.payload, session.context())
      if (!input) { stats.invalid++; return }
      stats.accepted++
      emit(input)
    })
    let scriptId: string | undefined
    let detached = false
    const detach: Detach = () => {
      if (detached) return
      detached = true
      off()
      if (session.signal.aborted) return
      // Best effort (the session may be going away): stop injecting into future documents.
      if (scriptId) void session.sendMayFail('Page.removeScriptToEvaluateOnNewDocument', { identifier: scriptId })
      void session.sendMayFail('Runtime.removeBinding', { name: bindingName })
    }
    scriptId = await inject(session, bindingName, worldName, source)
    return detach
  }

  return { name: 'interaction', category: 'interaction', attach, stats, bindingName, worldName }
}

/**
 * Sets up the binding and the script for every current and future document of the target; returns
 * the new-document script's id. Each step is best effort: a failure (counted and logged by the
 * session, quietly when the tab went away) ends the injection, and detach() undoes what was done.
 */
async function inject(session: TargetSession, bindingName: string, worldName: string, source: string): Promise<string | undefined> {
  // Runtime must be enabled for bindingCalled to be delivered (and Runtime.disable drops the
  // binding), Page for the new-document script to run in later documents (verified against
  // Chromium 156): the monitor's capture plan keeps both on while interaction is.
  // Sent together, answered in order: one round trip to a paused target instead of two (with many
  // tabs opening at once, each round trip to a starting renderer costs seconds).
  const [binding, added] = await Promise.all([
    // The binding exists only in our world's contexts, present and future.
    session.sendMayFail('Runtime.addBinding', { name: bindingName, executionContextName: worldName }),
    // Every future document of every frame of this target. runImmediately also covers the
    // current documents where Chromium supports it; injectCurrentDocuments below does it
    // explicitly for older browsers (the agent's guard makes the second run a no-op).
    session.sendMayFail('Page.addScriptToEvaluateOnNewDocument', { source, worldName, runImmediately: true }),
  ])
  if (!binding || !added) return added?.identifier
  // Awaited: a tab created with a URL commits its first document while still paused, often before
  // the new-document script was registered; it must run there before the tab resumes.
  await injectCurrentDocuments(session, worldName, source)
  return added.identifier
}

/** Runs the script in our isolated world of every frame the target has now (loaded before we attached). */
async function injectCurrentDocuments(session: TargetSession, worldName: string, source: string): Promise<void> {
  const tree = await session.sendMayFail('Page.getFrameTree')
  if (!tree) return
  const frames: string[] = []
  const walk = (node: typeof tree.frameTree): void => {
    frames.push(node.frame.id)
    for (const child of node.childFrames ?? []) walk(child)
  }
  walk(tree.frameTree)
  await Promise.all(frames.map(async (frameId) => {
    // Same world name -> Chromium returns the world the new-document script already uses. A frame
    // that navigated or detached meanwhile gets the new-document script instead.
    const world = await session.sendMayFail('Page.createIsolatedWorld', { frameId, worldName })
    if (world) await session.sendMayFail('Runtime.evaluate', { expression: source, contextId: world.executionContextId })
  }))
}
