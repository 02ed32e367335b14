// Query parameters validated from the route table's own TypeBox schemas (the ones the OpenAPI
// document publishes), so what is documented is exactly what is enforced. A query string only
// carries text: integers are read from digits, literal unions by exact value, arrays from repeated
// and comma-joined values. Any mismatch is a 400 naming the parameter (invalidInput).
import { Kind, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { invalidInput } from './errors.js'

/** A query as Koa (querystring) gives it: repeated parameters become arrays. */
export type RawQuery = Record<string, string | string[] | undefined>
/** Validated values: numbers for integer schemas, strings for the rest, arrays for array schemas. */
export type QueryValues = Record<string, number | string | string[] | undefined>

/** The schema side of a documented parameter (route-table ParamDoc). */
export interface QueryParamSchema {
  schema: TSchema
}

/** The literal values of a Literal or a Union of Literals, else undefined. */
function literals(schema: TSchema): string[] | undefined {
  if (schema[Kind] === 'Literal') return [String(schema.const)]
  if (schema[Kind] === 'Union') {
    const parts = (schema.anyOf as TSchema[]).map(literals)
    return parts.every(p => p !== undefined) ? (parts.flat() as string[]) : undefined
  }
  return undefined
}

/** "an integer from 1 to 100", "asc or desc": what a value must look like, for the error message. */
function expected(schema: TSchema): string {
  const values = literals(schema)
  if (values)
    return values.length === 1
      ? `the only value is ${JSON.stringify(values[0])}`
      : `expected ${values.slice(0, -1).join(', ')} or ${values.at(-1)}`
  if (schema[Kind] === 'Integer') {
    const { minimum: min, maximum: max } = schema as { minimum?: number; maximum?: number }
    if (min !== undefined && max !== undefined && max !== Number.MAX_SAFE_INTEGER)
      return `expected an integer from ${min} to ${max}`
    return min !== undefined ? `expected an integer >= ${min}` : 'expected an integer'
  }
  if (typeof schema.pattern === 'string') return `expected a value matching ${schema.pattern}`
  return 'expected a valid value'
}

/** One text value against a scalar schema: the converted value, or a 400 naming the parameter. */
function scalar(name: string, schema: TSchema, text: string): number | string {
  let value: number | string = text
  if (schema[Kind] === 'Integer' || schema[Kind] === 'Number') {
    // Digits only: no sign, spaces, exponent or fraction that Number() would quietly accept.
    if (!/^-?\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text)))
      throw invalidInput(name, `${expected(schema)}, got ${JSON.stringify(text)}`)
    value = Number(text)
  }
  if (!Value.Check(schema, value)) throw invalidInput(name, `${expected(schema)}, got ${JSON.stringify(text)}`)
  return value
}

/**
 * Compiles a route's documented query parameters into one validator. Rules: scalars may be given
 * once; arrays take repeated and comma-joined values (trimmed, deduplicated, none empty); an absent
 * parameter takes its schema's default; parameters that are not documented are ignored.
 */
export function compileQuery(params: Record<string, QueryParamSchema>): (raw: RawQuery) => QueryValues {
  // Per parameter, once: an array's allowed literal values (for the "unknown value" message).
  const entries = Object.entries(params).map(([name, { schema }]) => ({
    name,
    schema,
    allowed: schema[Kind] === 'Array' ? literals(schema.items as TSchema) : undefined,
  }))
  return raw => {
    const out: QueryValues = {}
    for (const { name, schema, allowed } of entries) {
      const given = raw[name]
      if (given === undefined) {
        if (schema.default !== undefined) out[name] = schema.default as number | string
        continue
      }
      if (schema[Kind] === 'Array') {
        const items = schema.items as TSchema
        const values = new Set<string>()
        for (const part of (Array.isArray(given) ? given : [given]).flatMap(v => v.split(','))) {
          const text = part.trim()
          if (text === '') throw invalidInput(name, 'empty value')
          if (allowed && !allowed.includes(text))
            throw invalidInput(name, `unknown value ${JSON.stringify(text)} (allowed: ${allowed.join(', ')})`)
          values.add(String(scalar(name, items, text)))
        }
        out[name] = [...values]
        continue
      }
      if (Array.isArray(given) && given.length > 1) throw invalidInput(name, 'given more than once')
      out[name] = scalar(name, schema, Array.isArray(given) ? given[0]! : given)
    }
    return out
  }
}
