// The read-parameter rules as a pure function: every documented rule, no HTTP.
import t, { type Test } from 'tap'
import { ApiError } from '../src/api/errors.js'
import { parseRfc3339Us, parseTelemetryQuery, parseTimeBound, type RawQuery } from '../src/api/telemetry-query.js'

const NOW = Date.parse('2026-01-02T03:04:05Z') * 1000
const parse = (q: RawQuery) => parseTelemetryQuery(q, NOW)

function rejects(t: Test, q: RawQuery, param: string, what = JSON.stringify(q)) {
  try {
    parse(q)
    t.fail(`${what} should be rejected`)
  } catch (err) {
    t.ok(err instanceof ApiError, `${what}: ApiError`)
    const e = err as ApiError
    t.equal(e.status, 400, `${what}: 400`)
    t.equal(e.code, 'bad_request', `${what}: bad_request`)
    t.equal(e.details?.length, 1, `${what}: one detail`)
    t.equal(e.details?.[0]?.code, 'invalid_input', `${what}: invalid_input detail`)
    t.match(e.details?.[0]?.message, new RegExp(`^${param.replace('.', '\\.')}: `), `${what}: names ${param}`)
  }
}

t.test('defaults: asc, limit 20, since 5m ago, no filter', async t => {
  t.same(parse({}), { order: 'asc', limit: 20, sinceUs: NOW - 300_000_000 })
})

t.test('durations and RFC-3339 for since/until', async t => {
  t.equal(parse({ since: '90s' }).sinceUs, NOW - 90_000_000)
  t.equal(parse({ since: '2h' }).sinceUs, NOW - 7_200_000_000)
  t.equal(parse({ since: '1h30m' }).sinceUs, NOW - 5_400_000_000)
  t.equal(parse({ since: '2026-01-02T03:00:00Z' }).sinceUs, Date.parse('2026-01-02T03:00:00Z') * 1000)
  t.equal(
    parse({ since: '2026-01-02T04:00:00.123456+01:00' }).sinceUs,
    Date.parse('2026-01-02T03:00:00Z') * 1000 + 123_456,
  )
  t.equal(parse({ until: '1m' }).untilUs, NOW - 60_000_000)
  t.equal(parseTimeBound('2026-01-02t03:04:05z', NOW), NOW, 'lowercase t/z allowed by RFC 3339')
  t.equal(parseRfc3339Us('2024-02-29T00:00:00Z'), Date.parse('2024-02-29T00:00:00Z') * 1000, 'leap day')
  t.equal(parseRfc3339Us('2023-02-29T00:00:00Z'), undefined, 'not a leap year')
  t.equal(parseRfc3339Us('2024-02-30T00:00:00Z'), undefined, 'Feb 30 is not rolled over')
  t.equal(parseRfc3339Us('2024-01-01T24:00:00Z'), undefined)
  t.equal(parseRfc3339Us('2024-01-01T00:00:00'), undefined, 'a zone is required')
  t.equal(parseRfc3339Us('2024-01-01'), undefined)
})

t.test('offset: cursor, since ignored, until still bounds, 0 means absent', async t => {
  t.same(parse({ offset: '42' }), { order: 'asc', limit: 20, cursor: 42 })
  t.same(parse({ offset: '42', since: '1m' }), { order: 'asc', limit: 20, cursor: 42 }, 'since ignored')
  t.same(parse({ offset: '42', until: '1m' }), { order: 'asc', limit: 20, cursor: 42, untilUs: NOW - 60_000_000 })
  t.same(parse({ offset: '0' }), { order: 'asc', limit: 20, sinceUs: NOW - 300_000_000 })
  t.same(parse({ offset: '7', order: 'desc' }), { order: 'desc', limit: 20, cursor: 7 })
})

t.test('desc: no default since, until and offset bound the page', async t => {
  t.same(parse({ order: 'desc' }), { order: 'desc', limit: 20 })
  t.same(parse({ order: 'desc', until: '5m', limit: '100' }), { order: 'desc', limit: 100, untilUs: NOW - 300_000_000 })
})

t.test('categories: repeated, comma-joined and any mix; monitor allowed', async t => {
  const cats = (q: RawQuery) => [...(parse(q).categories ?? [])].sort()
  t.same(cats({ category: 'console' }), ['console'])
  t.same(cats({ category: ['console', 'network'] }), ['console', 'network'])
  t.same(cats({ category: 'console,network' }), ['console', 'network'])
  t.same(cats({ category: ['console,network', 'page', 'monitor'] }), ['console', 'monitor', 'network', 'page'])
  t.same(cats({ category: ' console , page ' }), ['console', 'page'], 'spaces around names are trimmed')
  t.same(cats({ category: ['console', 'console'] }), ['console'])
})

t.test('limit 1..100', async t => {
  t.equal(parse({ limit: '1' }).limit, 1)
  t.equal(parse({ limit: '100' }).limit, 100)
  for (const v of ['0', '101', 'abc', '-1', '1.5', '', ' 5', '1e2']) rejects(t, { limit: v }, 'limit')
})

t.test('every invalid value is a 400 naming the parameter', async t => {
  rejects(t, { offset: '-1' }, 'offset')
  rejects(t, { offset: 'abc' }, 'offset')
  rejects(t, { offset: '1.5' }, 'offset')
  rejects(t, { offset: '99999999999999999' }, 'offset')
  rejects(t, { category: 'bogus' }, 'category')
  rejects(t, { category: ['console', 'nope'] }, 'category')
  rejects(t, { category: 'console,' }, 'category')
  rejects(t, { category: '' }, 'category')
  rejects(t, { order: 'up' }, 'order')
  rejects(t, { order: 'ASC' }, 'order')
  rejects(t, { since: 'yesterday' }, 'since')
  rejects(t, { since: '5x' }, 'since')
  rejects(t, { until: '2024-13-01T00:00:00Z' }, 'until')
  rejects(t, { until: 'soon' }, 'until')
  rejects(t, { order: 'desc', since: '5m' }, 'since', 'desc + since')
  rejects(t, { order: 'desc', since: '5m', offset: '9' }, 'since', 'desc + since even with offset')
  rejects(t, { since: '1m', until: '5m' }, 'since', 'since after until')
  rejects(t, { since: '2026-01-02T03:00:00Z', until: '2026-01-02T02:00:00Z' }, 'since', 'since after until (RFC-3339)')
  rejects(t, { limit: ['5', '6'] }, 'limit', 'repeated scalar')
  rejects(t, { order: ['asc', 'desc'] }, 'order', 'repeated order')
})

t.test('since == until is an empty window, not an error', async t => {
  const q = parse({ since: '5m', until: '5m' })
  t.equal(q.sinceUs, q.untilUs)
})

t.test('unknown parameters are ignored', async t => {
  t.same(parse({ foo: 'bar', page: '3', category_x: 'nope' }), parse({}))
})
