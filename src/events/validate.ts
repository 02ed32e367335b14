// Compiled validators for the event model (TypeBox's compiler: microseconds per event).
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TSchema } from '@sinclair/typebox'
import { EVENT_DEFS, type EventType, isEventType, EnvelopeSchema } from './types.js'
import { SourceSchema } from './common.js'

const eventCheckers = new Map<EventType, TypeCheck<TSchema>>()
const dataCheckers = new Map<EventType, TypeCheck<TSchema>>()
for (const [type, d] of Object.entries(EVENT_DEFS) as [EventType, (typeof EVENT_DEFS)[EventType]][]) {
  eventCheckers.set(type, TypeCompiler.Compile(d.event as TSchema))
  dataCheckers.set(type, TypeCompiler.Compile(d.data as TSchema))
}
const envelopeChecker = TypeCompiler.Compile(EnvelopeSchema)
const sourceChecker = TypeCompiler.Compile(SourceSchema)

export interface ValidationIssue { path: string; message: string }

function issues(check: TypeCheck<TSchema>, value: unknown, prefix = ''): ValidationIssue[] {
  const out: ValidationIssue[] = []
  for (const e of check.Errors(value)) {
    out.push({ path: prefix + (e.path || '/'), message: e.message })
    if (out.length >= 10) break
  }
  return out
}

/** Validates a whole event (ts, type, category, source, data). Empty array = valid. */
export function validateEvent(value: unknown): ValidationIssue[] {
  const type = (value as { type?: unknown } | null)?.type
  if (!isEventType(type)) return [{ path: '/type', message: `unknown event type ${JSON.stringify(type)}` }]
  const check = eventCheckers.get(type)!
  return check.Check(value) ? [] : issues(check, value)
}

/**
 * validateEvent for an event the pipeline assembled itself: its keys, type, category and truncated
 * flag are right by construction, so only what a producer supplied (data, source) and ts are
 * checked; the top-level object check cost as much again. A failure is reported by the full
 * check, so the issues read exactly as validateEvent's.
 */
export function validateAssembledEvent(event: { ts: number; type: EventType; source: unknown; data: unknown }): ValidationIssue[] {
  if (Number.isInteger(event.ts) && sourceChecker.Check(event.source) && dataCheckers.get(event.type)!.Check(event.data)) return []
  return validateEvent(event)
}

/** Validates only the data object of the given type. */
export function validateData(type: EventType, data: unknown): ValidationIssue[] {
  const check = dataCheckers.get(type)!
  return check.Check(data) ? [] : issues(check, data, '/data')
}

export function isValidEnvelope(value: unknown): boolean {
  return envelopeChecker.Check(value)
}
export function envelopeIssues(value: unknown): ValidationIssue[] {
  return envelopeChecker.Check(value) ? [] : issues(envelopeChecker, value)
}
