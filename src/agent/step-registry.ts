// The agent's own steps ("log in", "open the cart"): started and finished over HTTP or over the
// agent's CDP socket, stored as agent_step_started / agent_step_finished, and asked by the CDP
// proxy, for every command, which step it belongs to and which trace it joins.
//
// Which commands a step covers: a step started over a CDP connection (or naming one) covers that
// connection's commands; a step naming no connection covers every connection. The innermost is
// the open covering step started last. Every step has a trace context: the agent's (a traceparent
// in the step's body or on its connection's upgrade), its parent step's, or a new trace.
import { randomBytes, randomUUID } from 'node:crypto'
import type { Emit } from '../pipeline/pipeline.js'
import { ServiceError } from '../errors.js'
import { stripAnsi } from '../util/ansi.js'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { STEP_ABANDON_REASONS, TRACEPARENT_PATTERN } from '../events/index.js'

export type StepVia = 'http' | 'cdp'
export type StepOutcome = 'ok' | 'error'
export type AbandonReason = (typeof STEP_ABANDON_REASONS)[number]
export type StepAttributes = Record<string, string | number | boolean>

export interface StepStart {
  name: unknown
  attributes?: unknown
  parentStepId?: unknown
  connectionId?: unknown
  traceparent?: unknown
}
export interface StepEnd {
  outcome?: unknown
  errorMessage?: unknown
}

/** What a command sent while steps are open carries. */
export interface CommandStamp {
  step_id?: string
  trace_id?: string
  parent_span_id?: string
}

export interface StepRegistryOptions {
  emit: Emit
  maxOpen?: number
  maxOpenMs?: number
  /** Monotonic milliseconds (tests). */
  now?: () => number
}

/** Limits on what an agent may put in a step (docs/limits.md). */
export const STEP_LIMITS = {
  nameChars: 256,
  attributeKeys: 64,
  attributeKeyChars: 128,
  attributesBytes: 4096,
  errorMessageChars: 4096,
  /** Finished step ids remembered, so ending one twice is a 409 rather than a 404. */
  finishedRemembered: 10_000,
} as const

/** A refused step operation: the API answers it as is; the CDP proxy as a protocol error. */
export class StepError extends ServiceError {
  constructor(status: number, code: string, message: string, field?: string) {
    super(
      status,
      code,
      field ? `invalid ${field}: ${message}` : message,
      field ? [{ code: 'invalid_input', message: `${field}: ${message}` }] : undefined,
    )
    this.name = 'StepError'
  }
}

interface OpenStep {
  id: string
  name: string
  parentId?: string
  connectionId?: string
  via: StepVia
  attributes?: StepAttributes
  traceId: string
  spanId: string
  parentSpanId?: string
  startedAt: number
  timer: NodeJS.Timeout
}

interface Connection {
  traceId?: string
  agentSpanId?: string
}

const traceRe = new RegExp(TRACEPARENT_PATTERN)

/** `00-<trace>-<span>-<flags>` → its ids; undefined when not a valid W3C traceparent. */
export function parseTraceparent(value: unknown): { traceId: string; spanId: string } | undefined {
  if (typeof value !== 'string' || !traceRe.test(value)) return undefined
  return { traceId: value.slice(3, 35), spanId: value.slice(36, 52) }
}

export class StepRegistry {
  /** Open steps in start order (the innermost covering step is found from the end). */
  private readonly open: OpenStep[] = []
  private readonly byId = new Map<string, OpenStep>()
  private readonly finished = new Set<string>()
  private readonly connections = new Map<string, Connection>()
  private readonly maxOpen: number
  private readonly maxOpenMs: number
  private readonly now: () => number
  private closed = false

  constructor(private readonly opts: StepRegistryOptions) {
    this.maxOpen = opts.maxOpen ?? DEFAULT_SETTINGS.stepMaxOpen
    this.maxOpenMs = opts.maxOpenMs ?? DEFAULT_SETTINGS.stepMaxOpenMs
    this.now = opts.now ?? (() => performance.now())
  }

  get openCount(): number {
    return this.open.length
  }

  /** A proxy connection opened; its traceparent (the agent's span) becomes the trace of its steps and commands. */
  connectionOpened(connectionId: string, traceparent?: string): void {
    const tp = parseTraceparent(traceparent)
    this.connections.set(connectionId, tp ? { traceId: tp.traceId, agentSpanId: tp.spanId } : {})
  }

  /** A proxy connection ended: its steps (and the steps nested in them) are abandoned. */
  connectionClosed(connectionId: string): void {
    if (!this.connections.delete(connectionId)) return
    for (const s of [...this.open]) if (s.connectionId === connectionId) this.abandon(s, 'connection_closed')
  }

  /** Starts a step; returns its id and the seq of its agent_step_started (absent when control is off). */
  start(via: StepVia, input: StepStart): { stepId: string; seq?: number; committed?: Promise<boolean> } {
    if (this.closed) throw new StepError(503, 'unavailable', 'the daemon is shutting down')
    const name = checkName(input.name)
    const attributes = checkAttributes(input.attributes)
    const parent = this.parentOf(input.parentStepId)
    let connectionId = optionalId(input.connectionId, 'connection_id')
    if (connectionId !== undefined && !this.connections.has(connectionId))
      throw new StepError(404, 'not_found', `no open CDP proxy connection ${connectionId}`)
    if (parent?.connectionId !== undefined) {
      if (connectionId !== undefined && connectionId !== parent.connectionId)
        throw new StepError(
          400,
          'bad_request',
          `the parent step belongs to connection ${parent.connectionId}, not ${connectionId}`,
          'connection_id',
        )
      connectionId = parent.connectionId
    }
    let agent: { traceId: string; spanId: string } | undefined
    if (input.traceparent !== undefined) {
      agent = parseTraceparent(input.traceparent)
      if (!agent)
        throw new StepError(400, 'bad_request', 'not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)', 'traceparent')
    }
    if (this.open.length >= this.maxOpen)
      throw new StepError(
        429,
        'too_many_open_steps',
        `at most ${this.maxOpen} steps may be open at once; finish some first`,
      )
    const conn = connectionId !== undefined ? this.connections.get(connectionId) : undefined
    // The trace: the agent's span named with the step, else the parent step's, else the connection's agent span.
    const traceId = agent?.traceId ?? parent?.traceId ?? conn?.traceId ?? randomHex(16)
    const parentSpanId = agent?.spanId ?? parent?.spanId ?? conn?.agentSpanId
    const step: OpenStep = {
      id: randomUUID(),
      name,
      parentId: parent?.id,
      connectionId,
      via,
      attributes,
      traceId,
      spanId: randomHex(8),
      parentSpanId,
      startedAt: this.now(),
      timer: setTimeout(() => {
        const s = this.byId.get(step.id)
        if (s) this.abandon(s, 'open_too_long')
      }, this.maxOpenMs).unref(),
    }
    this.open.push(step)
    this.byId.set(step.id, step)
    const r = this.opts.emit({ type: 'agent_step_started', data: stepData(step), source: SOURCE })
    return r.dropped === undefined ? { stepId: step.id, seq: r.accepted, committed: r.committed } : { stepId: step.id }
  }

  /** Finishes an open step (its open children first, as abandoned); returns the finish's seq. */
  end(stepId: unknown, input: StepEnd, connectionId?: string): { seq?: number; committed?: Promise<boolean> } {
    if (typeof stepId !== 'string' || stepId === '') throw new StepError(400, 'bad_request', 'required', 'step_id')
    const outcome = input.outcome ?? 'ok'
    if (outcome !== 'ok' && outcome !== 'error')
      throw new StepError(400, 'bad_request', 'must be "ok" or "error"', 'outcome')
    let errorMessage: string | undefined
    if (input.errorMessage !== undefined) {
      if (typeof input.errorMessage !== 'string' || input.errorMessage === '')
        throw new StepError(400, 'bad_request', 'must be a non-empty string', 'error_message')
      if (input.errorMessage.length > STEP_LIMITS.errorMessageChars)
        throw new StepError(400, 'bad_request', `at most ${STEP_LIMITS.errorMessageChars} characters`, 'error_message')
      // Both doors (HTTP, BrowserTelemetry.endStep) come here: the message is stored as people read it.
      errorMessage = stripAnsi(input.errorMessage)
      if (errorMessage.trim() === '')
        throw new StepError(400, 'bad_request', 'must hold text besides terminal escape codes', 'error_message')
    }
    const step = this.byId.get(stepId)
    if (!step) {
      if (this.finished.has(stepId)) throw new StepError(409, 'conflict', `step ${stepId} is already finished`)
      throw new StepError(404, 'not_found', `no step ${stepId}`)
    }
    if (connectionId !== undefined && step.connectionId !== undefined && step.connectionId !== connectionId)
      throw new StepError(409, 'conflict', `step ${stepId} belongs to another connection`)
    return this.finish(step, outcome, errorMessage)
  }

  /** The step and trace a command sent now on this connection belongs to (undefined: none). */
  stampFor(connectionId: string): CommandStamp | undefined {
    for (let i = this.open.length - 1; i >= 0; i--) {
      const s = this.open[i]!
      if (s.connectionId === undefined || s.connectionId === connectionId)
        return { step_id: s.id, trace_id: s.traceId, parent_span_id: s.spanId }
    }
    const conn = this.connections.get(connectionId)
    return conn?.traceId ? { trace_id: conn.traceId, parent_span_id: conn.agentSpanId } : undefined
  }

  /** Shutdown: every open step is finished as abandoned (reason shutdown) while the log still takes events. */
  close(): void {
    if (this.closed) return
    for (const s of [...this.open].reverse()) this.abandon(s, 'shutdown')
    this.closed = true
  }

  private parentOf(value: unknown): OpenStep | undefined {
    const id = optionalId(value, 'parent_step_id')
    if (id === undefined) return undefined
    const parent = this.byId.get(id)
    if (parent) return parent
    if (this.finished.has(id)) throw new StepError(409, 'conflict', `parent step ${id} is already finished`)
    throw new StepError(404, 'not_found', `no parent step ${id}`)
  }

  private abandon(step: OpenStep, reason: AbandonReason): void {
    this.finish(step, 'abandoned', undefined, reason)
  }

  private finish(
    step: OpenStep,
    outcome: StepOutcome | 'abandoned',
    errorMessage?: string,
    reason?: AbandonReason,
  ): { seq?: number; committed?: Promise<boolean> } {
    // Children end before their parent (newest first), so the log reads as properly nested spans.
    const children = this.open.filter(s => s.parentId === step.id).reverse()
    for (const child of children) this.finish(child, 'abandoned', undefined, 'parent_finished')
    const i = this.open.indexOf(step)
    if (i === -1) return {}
    this.open.splice(i, 1)
    this.byId.delete(step.id)
    clearTimeout(step.timer)
    if (this.finished.size >= STEP_LIMITS.finishedRemembered) {
      const oldest = this.finished.values().next().value
      if (oldest !== undefined) this.finished.delete(oldest)
    }
    this.finished.add(step.id)
    const durationMs = Math.max(0, Math.round((this.now() - step.startedAt) * 1000) / 1000)
    const r = this.opts.emit({
      type: 'agent_step_finished',
      data: {
        ...stepData(step),
        outcome,
        ...(errorMessage !== undefined ? { error_message: errorMessage } : {}),
        ...(reason !== undefined ? { abandoned_reason: reason } : {}),
        duration_ms: durationMs,
      },
      source: SOURCE,
    })
    return r.dropped === undefined ? { seq: r.accepted, committed: r.committed } : {}
  }
}

const SOURCE = { kind: 'local_process' } as const

function stepData(s: OpenStep) {
  return {
    step_id: s.id,
    name: s.name,
    ...(s.parentId !== undefined ? { parent_step_id: s.parentId } : {}),
    ...(s.connectionId !== undefined ? { connection_id: s.connectionId } : {}),
    via: s.via,
    ...(s.attributes !== undefined ? { attributes: s.attributes } : {}),
    trace_id: s.traceId,
    span_id: s.spanId,
    ...(s.parentSpanId !== undefined ? { parent_span_id: s.parentSpanId } : {}),
  }
}

function randomHex(bytes: number): string {
  for (;;) {
    const hex = randomBytes(bytes).toString('hex')
    if (!/^0+$/.test(hex)) return hex
  }
}

function checkName(v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '')
    throw new StepError(400, 'bad_request', 'required: a non-empty string', 'name')
  if (v.length > STEP_LIMITS.nameChars)
    throw new StepError(400, 'bad_request', `at most ${STEP_LIMITS.nameChars} characters`, 'name')
  return v
}

function optionalId(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined
  if (typeof v !== 'string' || v === '' || v.length > 128)
    throw new StepError(400, 'bad_request', 'must be a non-empty string of at most 128 characters', field)
  return v
}

function checkAttributes(v: unknown): StepAttributes | undefined {
  if (v === undefined) return undefined
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new StepError(400, 'bad_request', 'must be an object of strings, numbers and booleans', 'attributes')
  const entries = Object.entries(v as Record<string, unknown>)
  if (entries.length > STEP_LIMITS.attributeKeys)
    throw new StepError(400, 'bad_request', `at most ${STEP_LIMITS.attributeKeys} keys`, 'attributes')
  for (const [k, x] of entries) {
    if (k === '' || k.length > STEP_LIMITS.attributeKeyChars)
      throw new StepError(400, 'bad_request', `keys are 1 to ${STEP_LIMITS.attributeKeyChars} characters`, 'attributes')
    const ok = typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x))
    if (!ok)
      throw new StepError(
        400,
        'bad_request',
        `${JSON.stringify(k).slice(0, 140)} must be a string, a finite number or a boolean`,
        'attributes',
      )
  }
  const bytes = Buffer.byteLength(JSON.stringify(v))
  if (bytes > STEP_LIMITS.attributesBytes)
    throw new StepError(
      413,
      'payload_too_large',
      `${bytes} bytes as JSON, at most ${STEP_LIMITS.attributesBytes}`,
      'attributes',
    )
  return { ...(v as StepAttributes) }
}
