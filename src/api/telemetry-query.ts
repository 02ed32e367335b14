// The query of GET /browsers/{id}/telemetry/events: its documented parameters (the route table and
// the OpenAPI document use these schemas; query-params.ts enforces them) and the rules between them,
// as pure functions: query -> a ReadQuery for EventLog.read, or an ApiError (400 naming the parameter).
import { Type } from '@sinclair/typebox'
import { CATEGORIES, type Category } from '../events/index.js'
import type { ReadQuery } from '../store/event-log.js'
import { parseDuration } from '../util/duration.js'
import { invalidInput } from './errors.js'
import { compileQuery, type QueryValues, type RawQuery } from './query-params.js'

export type { RawQuery }

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100
export const DEFAULT_SINCE_MS = 5 * 60_000

const timeParam = (what: string) => ({
  schema: Type.String(),
  description: `${what}: an RFC-3339 timestamp, or a duration such as 90s, 5m, 2h, 1h30m meaning that long ago.`,
})

/** The read parameters as the route table documents and enforces them. */
export const EVENTS_QUERY = {
  offset: {
    schema: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    description:
      'Opaque cursor: the X-Next-Offset of the previous response. When set, since is ignored; until still bounds.',
  },
  since: timeParam('Window start (default 5m); not allowed with order=desc'),
  until: timeParam('Window end, exclusive'),
  limit: {
    schema: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }),
    description: 'Events per page',
  },
  category: {
    schema: Type.Array(Type.Union(CATEGORIES.map(c => Type.Literal(c)))),
    description: 'Only these categories; repeat the parameter or comma-join the values',
  },
  order: {
    schema: Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'asc' }),
    description: 'asc: oldest first; desc: newest first',
  },
}
const checkEventsQuery = compileQuery(EVENTS_QUERY)

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/

/**
 * An RFC-3339 timestamp -> Unix microseconds (fractions kept to the microsecond), or undefined.
 * Rejects impossible dates (Feb 30, hour 24) that Date.parse would silently roll over.
 */
export function parseRfc3339Us(text: string): number | undefined {
  const m = RFC3339.exec(text)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, frac, zone] = m
  const month = Number(mo)
  const day = Number(d)
  if (month < 1 || month > 12 || day < 1 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 60) return undefined
  const daysInMonth = new Date(Date.UTC(Number(y), month, 0)).getUTCDate()
  if (day > daysInMonth) return undefined
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s === '60' ? '59' : s}${zone!.toUpperCase()}`)
  if (!Number.isFinite(ms)) return undefined
  const micros = frac ? Number((frac + '000000').slice(0, 6)) : 0
  return ms * 1000 + micros
}

/** `since`/`until` values: RFC-3339, or a duration meaning "that long before now". */
export function parseTimeBound(text: string, nowUs: number): number | undefined {
  const t = text.trim()
  const ms = parseDuration(t)
  if (ms !== undefined) return nowUs - Math.round(ms * 1000)
  return parseRfc3339Us(t)
}

/**
 * Parses the read parameters (raw query string values) into a ReadQuery. Rules:
 * - offset: the opaque cursor of a previous X-Next-Offset. 0 is the "no more" sentinel, never a
 *   position, so it reads as absent. When set, `since` is ignored; `until` still bounds.
 * - since/until: RFC-3339 or a duration ago; since defaults to 5m (asc without offset); until exclusive.
 * - order asc|desc; desc + since -> 400; since after until -> 400.
 * - limit 1..100, default 20. category: repeated and/or comma-joined. Unknown parameters are ignored.
 */
export function parseTelemetryQuery(q: RawQuery, nowUs: number): ReadQuery {
  return readQueryOf(checkEventsQuery(q), nowUs)
}

/** The rules between parameters, on values already checked against EVENTS_QUERY. */
export function readQueryOf(q: QueryValues, nowUs: number): ReadQuery {
  const order = q.order as 'asc' | 'desc'
  const limit = q.limit as number
  const cursor = typeof q.offset === 'number' && q.offset > 0 ? q.offset : undefined
  const sinceUs = timeBound('since', q.since as string | undefined, nowUs)
  if (sinceUs !== undefined && order === 'desc')
    throw invalidInput(
      'since',
      'cannot be combined with order=desc (desc pages end at offset, until or the newest event)',
    )
  const untilUs = timeBound('until', q.until as string | undefined, nowUs)
  if (sinceUs !== undefined && untilUs !== undefined && sinceUs > untilUs) throw invalidInput('since', 'is after until')

  const out: ReadQuery = { order, limit }
  if (cursor !== undefined) out.cursor = cursor
  else if (order === 'asc') out.sinceUs = sinceUs ?? nowUs - DEFAULT_SINCE_MS * 1000
  if (untilUs !== undefined) out.untilUs = untilUs
  if (q.category) out.categories = new Set(q.category as Category[])
  return out
}

function timeBound(name: string, text: string | undefined, nowUs: number): number | undefined {
  if (text === undefined) return undefined
  const us = parseTimeBound(text, nowUs)
  if (us === undefined)
    throw invalidInput(name, `expected an RFC-3339 time or a duration like 90s, 5m, 1h30m, got ${JSON.stringify(text)}`)
  return us
}
