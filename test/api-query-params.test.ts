// Query parameters are checked against the route table's documented TypeBox schemas, nothing else.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { ApiError } from '../src/api/errors.js'
import { compileQuery, type RawQuery } from '../src/api/query-params.js'

const check = compileQuery({
  limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) },
  offset: { schema: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }) },
  order: { schema: Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'asc' }) },
  replay: { schema: Type.Literal('all') },
  tag: { schema: Type.Array(Type.Union([Type.Literal('a'), Type.Literal('b'), Type.Literal('c')])) },
  id: { schema: Type.String({ pattern: '^\\d+$' }) },
  name: { schema: Type.String() },
})

function message(q: RawQuery): string {
  try {
    check(q)
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    if (err.status !== 400 || err.code !== 'bad_request' || err.details?.[0]?.code !== 'invalid_input') throw err
    return err.details[0]!.message
  }
  return 'accepted'
}

t.test('defaults from the schemas; absent without a default stays absent; undocumented ignored', async t => {
  t.same(check({}), { limit: 20, order: 'asc' })
  t.same(check({ other: 'x', limit: '7', name: 'n x', id: '12' }), { limit: 7, order: 'asc', name: 'n x', id: '12' })
})

t.test('integers: digits only, within the schema bounds', async t => {
  t.same(check({ offset: '0' }).offset, 0)
  t.same(check({ offset: String(Number.MAX_SAFE_INTEGER) }).offset, Number.MAX_SAFE_INTEGER)
  t.equal(message({ limit: '0' }), 'limit: expected an integer from 1 to 100, got "0"')
  t.equal(message({ limit: '101' }), 'limit: expected an integer from 1 to 100, got "101"')
  for (const v of ['abc', '', ' 5', '1e2', '1.5', '+5', '0x10'])
    t.equal(message({ limit: v }), `limit: expected an integer from 1 to 100, got ${JSON.stringify(v)}`)
  t.equal(message({ offset: '-1' }), 'offset: expected an integer >= 0, got "-1"')
  t.equal(message({ offset: '99999999999999999' }), 'offset: expected an integer >= 0, got "99999999999999999"')
})

t.test('literals and patterns', async t => {
  t.equal(message({ order: 'ASC' }), 'order: expected asc or desc, got "ASC"')
  t.equal(message({ replay: 'some' }), 'replay: the only value is "all", got "some"')
  t.equal(check({ replay: 'all' }).replay, 'all')
  t.equal(message({ id: '12a' }), 'id: expected a value matching ^\\d+$, got "12a"')
})

t.test('scalars once; arrays repeated and comma-joined, trimmed, deduplicated, none empty', async t => {
  t.equal(message({ limit: ['5', '6'] }), 'limit: given more than once')
  t.equal(check({ limit: ['5'] }).limit, 5, 'one value in array form is one value')
  t.same(check({ tag: ['a, b', 'a', 'c'] }).tag, ['a', 'b', 'c'])
  t.equal(message({ tag: 'a,' }), 'tag: empty value')
  t.equal(message({ tag: ['a', 'd'] }), 'tag: unknown value "d" (allowed: a, b, c)')
})
