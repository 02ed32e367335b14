// Interaction collector: clicks, keys, text put in without keys and settled scrolls, reported by a script injected into every
// document of a page or iframe target (interaction-script.ts) through a CDP binding.
//
// The script runs in an isolated world (the page cannot see the binding or patch what the script
// uses) and only reports trusted (real input) events. Whatever arrives through the binding is
// still treated as untrusted JSON: size-capped, parsed, reduced to the known keys, validated
// against the event schema and rate-limited per session; every context field comes from the
// monitor's session, never from the page.
import { randomBytes } from 'node:crypto'
import {
  DOCUMENT_TYPES,
  INTERACTION_BUDGET,
  maskValue,
  silentLogger,
  validateData,
  type Collector,
  type Context,
  type Detach,
  type Emit,
  type EventInput,
  type Logger,
  type TargetSession,
  type CaptureNeeds,
} from '../src/collector-kit.js'
import { buildInteractionScript } from './interaction-script.js'
import { injectCurrentDocuments, injectPageScript, parseBindingPayload } from './page-script.js'

export interface InteractionCollectorOptions {
  /** Quiet time before a scroll counts as settled (default 300 ms). */
  scrollQuietMs?: number
  /**
   * How long the binding stays removed from a target whose interaction budget is exhausted
   * (default: the time the default budget takes to refill half its burst, 1 s).
   */
  pauseMs?: number
  /**
   * Binding calls still arriving after the removal was sent and before Chromium answered it, at
   * which the page's running script is terminated (default 1000; see attach()).
   */
  terminateAfterCalls?: number
  logger?: Logger
  /**
   * Whether printable keys are stored without their value now (--mask-typed-keys, the capture
   * config's mask_typed_keys); read at every key, so a change applies to the next key.
   */
  maskTypedKeys?: () => boolean
}

export interface InteractionStats {
  /** Events the pipeline took. */
  accepted: number
  /** Binding payloads that failed parsing or validation. */
  invalid: number
  /** Reports the pipeline dropped over the target's interaction budget (each a seq gap). */
  rateLimited: number
  /** Times the binding was removed from a flooding target (stopped at the source). */
  paused: number
  /** Times it was added back (the agent then reports again). */
  resumed: number
  /** Times a flooding script was terminated because the removal could not take effect. */
  terminated: number
}

export interface InteractionCollector extends Collector {
  readonly stats: InteractionStats
  /** The binding and world names (one random pair per collector, so two daemons never share them). */
  readonly bindingName: string
  readonly worldName: string
}

/** Binding payloads longer than this are dropped unparsed (a real one is well under 4 KiB). */
export const MAX_PAYLOAD_CHARS = 16 * 1024
/** Half the interaction burst refilled at its rate: the binding comes back with room for a burst. */
export const DEFAULT_PAUSE_MS = Math.ceil((INTERACTION_BUDGET.eventsBurst / 2 / INTERACTION_BUDGET.eventsPerSec) * 1000)
export const DEFAULT_TERMINATE_AFTER_CALLS = 1000
const SOURCE = { kind: 'cdp', event: 'Runtime.bindingCalled' } as const
const TEXT_MAX = 100

const FIELDS = {
  click: { type: 'interaction_click', keys: ['x', 'y', 'selector', 'tag', 'text'] },
  key: { type: 'interaction_key', keys: ['key', 'selector', 'tag'] },
  input: { type: 'interaction_input', keys: ['input_type', 'selector', 'tag'] },
  scroll: { type: 'interaction_scroll_settled', keys: ['from_x', 'from_y', 'to_x', 'to_y', 'target_selector'] },
} as const

/**
 * Turns one binding payload into an event input, or undefined when it is not a well-formed report.
 * Only the known keys of the report's kind are kept, context comes from `context` alone, and the
 * result is validated against the event's data schema.
 */
export function parseInteractionPayload(
  payload: unknown,
  context: Context,
  opts: { maskTypedKeys?: boolean } = {},
): EventInput | undefined {
  const report = parseBindingPayload(payload, MAX_PAYLOAD_CHARS)
  if (!report) return undefined
  const kind = report.t
  if (kind !== 'click' && kind !== 'key' && kind !== 'input' && kind !== 'scroll') return undefined
  const spec = FIELDS[kind]
  const data: Record<string, unknown> = { ...context }
  for (const key of spec.keys) {
    if (Object.prototype.hasOwnProperty.call(report, key)) data[key] = report[key]
  }
  // A key that types a character is stored as pressed, not as what (a shortcut's key is a command).
  if (
    kind === 'key' &&
    opts.maskTypedKeys &&
    typeof data.key === 'string' &&
    isPrintableKey(data.key) &&
    report.c !== true
  )
    data.key = maskValue(data.key)
  if (validateData(spec.type, data).length > 0) return undefined
  return { type: spec.type, data, source: SOURCE } as EventInput
}

/**
 * A key value that is a character (a, A, 7, space, é, an emoji), not a named key (Enter, Tab,
 * Backspace, ArrowDown, Shift, F5, Dead, Unidentified): DOM key names are one capital and letters
 * or digits.
 */
export function isPrintableKey(key: string): boolean {
  return !(key.length > 1 && /^[A-Z][A-Za-z0-9]*$/.test(key))
}

/** Targets with a DOM: the script only makes sense there (workers have no Page domain). */
function hasDocuments(session: TargetSession): boolean {
  return DOCUMENT_TYPES.has(session.targetType)
}

/** Inputs on documents: a binding's calls arrive only while Runtime is enabled (Runtime.disable drops the binding). */
export const INTERACTION_CAPTURE: CaptureNeeds = {
  category: 'interaction',
  targets: ['page', 'iframe'],
  domains: ['Runtime'],
  pageScripts: ['interaction'],
}

export function createInteractionCollector(opts: InteractionCollectorOptions = {}): InteractionCollector {
  const logger = opts.logger ?? silentLogger
  const pauseMs = opts.pauseMs ?? DEFAULT_PAUSE_MS
  const terminateAfter = opts.terminateAfterCalls ?? DEFAULT_TERMINATE_AFTER_CALLS
  const maskTypedKeys = opts.maskTypedKeys ?? (() => false)
  const suffix = randomBytes(6).toString('hex')
  const bindingName = `__browserTelemetryInteraction_${suffix}`
  const worldName = `browser-telemetry-interaction-${suffix}`
  const source = buildInteractionScript(bindingName, { scrollQuietMs: opts.scrollQuietMs ?? 300, textMax: TEXT_MAX })
  const stats: InteractionStats = { accepted: 0, invalid: 0, rateLimited: 0, paused: 0, resumed: 0, terminated: 0 }

  async function attach(session: TargetSession, emit: Emit): Promise<Detach> {
    if (!hasDocuments(session)) return () => undefined
    let detached = false
    // A flood stopped at the source. The pipeline's interaction budget (per target) drops what is
    // over it, each drop a seq gap and a metric; but a page looping over the binding has Chromium
    // queue every call for us (200,000 calls: seconds of the daemon's CPU). So on the first drop
    // the binding is removed for pauseMs: Chromium stops sending calls (the function stays in the
    // world and does nothing; the agent needs no change). Chromium applies the removal between
    // tasks only, so calls that keep coming while it is unanswered come from one running task
    // calling the binding in a loop: code in our isolated world that is not our agent (which
    // reports one trusted input event per task). That script is terminated
    // (Runtime.terminateExecution is the command Chromium runs inside a busy task).
    let paused = false
    let removalPending = false
    let callsSinceRemoval = 0
    let resumeTimer: ReturnType<typeof setTimeout> | undefined
    const pause = (): void => {
      paused = true
      removalPending = true
      callsSinceRemoval = 0
      if (stats.paused++ < 20)
        logger.warn(
          { targetId: session.targetId, pauseMs },
          'interaction binding flooded; removed from this target for a while',
        )
      void session.sendMayFail('Runtime.removeBinding', { name: bindingName }).then(() => {
        removalPending = false
      })
      resumeTimer = setTimeout(resume, pauseMs)
    }
    const resume = (): void => {
      resumeTimer = undefined
      if (detached || session.signal.aborted) return
      void session
        .sendMayFail('Runtime.addBinding', { name: bindingName, executionContextName: worldName })
        .then(async added => {
          if (detached || !added) return
          paused = false
          stats.resumed++
          // Documents that started while the binding was gone skipped the agent (it waits for the binding).
          await injectCurrentDocuments(session, worldName, source)
        })
    }
    const off = session.on('Runtime.bindingCalled', p => {
      if (p.name !== bindingName) return
      if (removalPending && ++callsSinceRemoval === terminateAfter) {
        stats.terminated++
        logger.warn(
          { targetId: session.targetId },
          'interaction binding called in a loop; terminating the running script',
        )
        void session.sendMayFail('Runtime.terminateExecution')
      }
      const input = parseInteractionPayload(p.payload, session.context(), { maskTypedKeys: maskTypedKeys() })
      if (!input) {
        stats.invalid++
        return
      }
      const r = emit(input)
      if (r.dropped === 'over_budget') {
        stats.rateLimited++
        if (!paused) pause()
      } else if (r.dropped === undefined) stats.accepted++
    })
    const scriptId = await injectPageScript(session, bindingName, worldName, source)
    const detach: Detach = () => {
      if (detached) return
      detached = true
      off()
      if (resumeTimer) clearTimeout(resumeTimer)
      if (session.signal.aborted) return
      // Best effort (the session may be going away): stop injecting into future documents.
      if (scriptId) void session.sendMayFail('Page.removeScriptToEvaluateOnNewDocument', { identifier: scriptId })
      void session.sendMayFail('Runtime.removeBinding', { name: bindingName })
    }
    return detach
  }

  return { name: 'interaction', capture: INTERACTION_CAPTURE, attach, stats, bindingName, worldName }
}
