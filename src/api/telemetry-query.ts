// The query rules of GET /browsers/{id}/telemetry/events as one pure function: raw query -> a
// ReadQuery for EventLog.read, or an ApiError (400 bad_request naming the parameter). No HTTP here.
import { CATEGORIES, type Category } from '../events/index.js'
import type { ReadQuery } from '../store/event-log.js'
import { parseDuration } from '../util/duration.js'
import { invalidInput } from './errors.js'

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100
export const DEFAULT_SINCE_MS = 5 * 60_000

/** A query as Koa (querystring) gives it: repeated parameters become arrays. */
export type RawQuery = Record<string, string | string[] | undefined>

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/

/**
 * An RFC-3339 timestamp -> Unix microseconds (fractions kept to the microsecond), or undefined.
 * Rejects impossible dates (Feb 30, hour 24) that Date.parse would silently roll over.
 */
export function parseRfc3339Us(text: string): number | undefined {
  const m = RFC3339.exec(text)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, frac, zone] = m
  const month = Number(mo); const day = Number(d)
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

/** The single value of a scalar parameter; repeating it is ambiguous, so it is an error. */
function single(q: RawQuery, name: string): string | undefined {
  const v = q[name]
  if (Array.isArray(v)) {
    if (v.length > 1) throw invalidInput(name, 'given more than once')
    return v[0]
  }
  return v
}

/** Categories from any mix of repeated (`category=a&category=b`) and comma-joined (`category=a,b`). */
export function parseCategoryParam(value: string | string[] | undefined): Set<Category> | undefined {
  if (value === undefined) return undefined
  const out = new Set<Category>()
  for (const part of (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(','))) {
    const c = part.trim()
    if (c === '') throw invalidInput('category', 'empty category name')
    if (!(CATEGORIES as readonly string[]).includes(c)) {
      throw invalidInput('category', `unknown category ${JSON.stringify(c)} (allowed: ${CATEGORIES.join(', ')})`)
    }
    out.add(c as Category)
  }
  return out
}

/**
 * Parses the read parameters. Rules (spec + issue 3):
 * - offset: integer >= 0, the opaque cursor of a previous X-Next-Offset. 0 is the "no more" sentinel,
 *   never a position, so it reads as absent. When set, `since` is ignored; `until` still bounds.
 * - since/until: RFC-3339 or a duration ago; since defaults to 5m (asc without offset); until exclusive.
 * - order asc|desc; desc + since -> 400; since after until -> 400.
 * - limit 1..100, default 20. category: see parseCategoryParam. Unknown parameters are ignored.
 */
export function parseTelemetryQuery(q: RawQuery, nowUs: number): ReadQuery {
  const orderText = single(q, 'order')
  if (orderText !== undefined && orderText !== 'asc' && orderText !== 'desc') {
    throw invalidInput('order', `expected asc or desc, got ${JSON.stringify(orderText)}`)
  }
  const order = orderText ?? 'asc'

  let limit = DEFAULT_LIMIT
  const limitText = single(q, 'limit')
  if (limitText !== undefined) {
    if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_LIMIT) {
      throw invalidInput('limit', `expected an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(limitText)}`)
    }
    limit = Number(limitText)
  }

  let cursor: number | undefined
  const offsetText = single(q, 'offset')
  if (offsetText !== undefined) {
    if (!/^\d{1,16}$/.test(offsetText) || !Number.isSafeInteger(Number(offsetText))) {
      throw invalidInput('offset', `expected an integer >= 0 (the previous X-Next-Offset), got ${JSON.stringify(offsetText)}`)
    }
    if (Number(offsetText) > 0) cursor = Number(offsetText)
  }

  const sinceText = single(q, 'since')
  let sinceUs: number | undefined
  if (sinceText !== undefined) {
    sinceUs = parseTimeBound(sinceText, nowUs)
    if (sinceUs === undefined) throw invalidInput('since', `expected an RFC-3339 time or a duration like 90s, 5m, 1h30m, got ${JSON.stringify(sinceText)}`)
    if (order === 'desc') throw invalidInput('since', 'cannot be combined with order=desc (desc pages end at offset, until or the newest event)')
  }
  const untilText = single(q, 'until')
  let untilUs: number | undefined
  if (untilText !== undefined) {
    untilUs = parseTimeBound(untilText, nowUs)
    if (untilUs === undefined) throw invalidInput('until', `expected an RFC-3339 time or a duration like 90s, 5m, 1h30m, got ${JSON.stringify(untilText)}`)
  }
  if (sinceUs !== undefined && untilUs !== undefined && sinceUs > untilUs) {
    throw invalidInput('since', 'is after until')
  }

  const categories = parseCategoryParam(q.category)

  const out: ReadQuery = { order, limit }
  if (cursor !== undefined) out.cursor = cursor
  else if (order === 'asc') out.sinceUs = sinceUs ?? nowUs - DEFAULT_SINCE_MS * 1000
  if (untilUs !== undefined) out.untilUs = untilUs
  if (categories) out.categories = categories
  return out
}
