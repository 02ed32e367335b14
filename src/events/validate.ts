// Compiled validators for the event model (TypeBox's compiler: microseconds per event).
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TSchema } from '@sinclair/typebox'
import { EVENT_DEFS, type EventType, isEventType, EnvelopeSchema } from './types.js'
import { SourceSchema } from './common.js'

type Check = (value: unknown) => boolean

/**
 * TypeBox's compiled check, with its closed-object test made cheap: the generated code tests every own
 * key of an object against a fresh array literal (`['url', 'text', ...].includes(key)`, one allocation
 * per key per event); here each list is a Set built once. Same answer for every value (SameValueZero on
 * strings, as includes); the rest of the code is TypeBox's, unchanged. Code that calls TypeBox's
 * registries (custom kinds, formats) keeps TypeBox's own checker.
 */
export function compileCheck(schema: TSchema): Check {
  const code = TypeCompiler.Code(schema)
  if (/\b(?:kind|format|hash)\(/.test(code)) {
    const c = TypeCompiler.Compile(schema)
    return v => c.Check(v)
  }
  const sets: string[] = []
  const fast = code.replace(/\[((?:'[\w$-]*', )*'[\w$-]*')\]\.includes\(key\)/g, (_m, list: string) => {
    sets.push(`const known_${sets.length} = new Set([${list}])`)
    return `known_${sets.length - 1}.has(key)`
  })
  return new Function(`${sets.join('\n')}\n${fast}`)() as Check
}

const eventChecks = new Map<EventType, Check>()
const dataChecks = new Map<EventType, Check>()
for (const [type, d] of Object.entries(EVENT_DEFS) as [EventType, (typeof EVENT_DEFS)[EventType]][]) {
  eventChecks.set(type, compileCheck(d.event as TSchema))
  dataChecks.set(type, compileCheck(d.data as TSchema))
}
/** TypeBox's own checkers, for their error lists: compiled when a value of that schema first fails. */
const errorCheckers = new Map<TSchema, TypeCheck<TSchema>>()
function errorChecker(schema: TSchema): TypeCheck<TSchema> {
  let c = errorCheckers.get(schema)
  if (!c) errorCheckers.set(schema, (c = TypeCompiler.Compile(schema)))
  return c
}
const envelopeChecker = TypeCompiler.Compile(EnvelopeSchema)
const sourceCheck = compileCheck(SourceSchema)

export interface ValidationIssue {
  path: string
  message: string
}

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
  return eventChecks.get(type)!(value) ? [] : issues(errorChecker(EVENT_DEFS[type].event as TSchema), value)
}

/**
 * validateEvent for an event the pipeline assembled itself: its keys, type, category and truncated
 * flag are right by construction, so only what a producer supplied (data, source) and ts are
 * checked; the top-level object check cost as much again. A failure is reported by the full
 * check, so the issues read exactly as validateEvent's.
 */
export function validateAssembledEvent(event: {
  ts: number
  type: EventType
  source: unknown
  data: unknown
}): ValidationIssue[] {
  if (Number.isInteger(event.ts) && sourceCheck(event.source) && dataChecks.get(event.type)!(event.data)) return []
  return validateEvent(event)
}

/** Validates only the data object of the given type. */
export function validateData(type: EventType, data: unknown): ValidationIssue[] {
  return dataChecks.get(type)!(data) ? [] : issues(errorChecker(EVENT_DEFS[type].data as TSchema), data, '/data')
}

export function isValidEnvelope(value: unknown): boolean {
  return envelopeChecker.Check(value)
}
export function envelopeIssues(value: unknown): ValidationIssue[] {
  return envelopeChecker.Check(value) ? [] : issues(envelopeChecker, value)
}
