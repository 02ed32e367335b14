// OpenAPI 3.1 document generated from the route table and the TypeBox schemas (event model + API
// bodies). Subschemas with a TypeBox `$id` become components and are referenced, so each event
// type appears once.
import type { TSchema } from '@sinclair/typebox'
import { ErrorBodySchema } from './schemas.js'
import type { RouteDef } from './route-table.js'
import { REFUSALS, type WithRefusals } from './json-body.js'

type Json = Record<string, unknown>
export interface OpenApiDocument extends Json {
  openapi: string
  info: { title: string; version: string; description?: string }
  paths: Record<string, Record<string, Json>>
  components: { schemas: Record<string, Json>; securitySchemes: Record<string, Json> }
}

const REF = '#/components/schemas/'

/** Replaces every `$id`-named subschema by a $ref and stores it once under components.schemas. */
function hoist(schema: TSchema | Json, components: Record<string, Json>): Json {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit)
    if (!node || typeof node !== 'object') return node
    const obj = node as Json
    const out: Json = {}
    for (const [k, v] of Object.entries(obj)) {
      if (k === '$id') continue
      // TypeBox recursive schemas refer to themselves by bare $id.
      if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) {
        out.$ref = REF + v
        continue
      }
      out[k] = visit(v)
    }
    const id = obj.$id
    if (typeof id === 'string') {
      if (!components[id]) components[id] = out
      return { $ref: REF + id }
    }
    return out
  }
  // JSON round trip drops TypeBox's symbol keys.
  return visit(JSON.parse(JSON.stringify(schema))) as Json
}

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

const ERRORS: Record<number, string> = {
  400: 'Bad parameters (code bad_request, with invalid_input details naming the parameter)',
  401: 'Missing or invalid bearer token (code unauthorized; WWW-Authenticate: Bearer)',
  403: 'The token lacks the scope this operation needs (code forbidden)',
  404: 'Not found, e.g. an unknown browser id (code not_found)',
  500: 'Internal error (code internal)',
}

const READ_ONLY = 'The data disk is full: the daemon is read-only until space is freed (code insufficient_storage)'

export function buildOpenApi(
  routes: readonly RouteDef[],
  info: { title: string; version: string; description?: string },
): OpenApiDocument {
  const schemas: Record<string, Json> = {}
  const errorRef = hoist(ErrorBodySchema, schemas)
  const paths: OpenApiDocument['paths'] = {}
  for (const r of routes) {
    const parameters: Json[] = []
    for (const m of r.path.matchAll(/:([A-Za-z0-9_]+)/g)) {
      parameters.push({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
        description: m[1] === 'id' ? 'Browser session id' : undefined,
      })
    }
    for (const [name, p] of Object.entries(r.query ?? {})) {
      const param: Json = { name, in: 'query', required: p.required ?? false, schema: hoist(p.schema, schemas) }
      if (p.description) param.description = p.description
      if ((p.schema as Json).type === 'array') {
        param.style = 'form'
        param.explode = true
      }
      parameters.push(param)
    }
    for (const [name, p] of Object.entries(r.headers ?? {})) {
      parameters.push({
        name,
        in: 'header',
        required: p.required ?? false,
        schema: hoist(p.schema, schemas),
        description: p.description,
      })
    }
    const responses: Json = {}
    for (const [status, resp] of Object.entries(r.responses)) {
      const out: Json = { description: resp.description }
      if (resp.schema)
        out.content = { [resp.contentType ?? 'application/json']: { schema: hoist(resp.schema, schemas) } }
      if (resp.headers) {
        out.headers = Object.fromEntries(
          Object.entries(resp.headers).map(([h, d]) => [
            h,
            { schema: hoist(d.schema, schemas), description: d.description, required: true },
          ]),
        )
      }
      responses[status] = out
    }
    const errorStatuses = [
      400,
      ...(r.public ? [] : [401]),
      ...(r.public || r.scope === null ? [] : [403]),
      ...(r.path.includes(':') ? [404] : []),
      500,
    ]
    const error = (description: string) => ({ description, content: { 'application/json': { schema: errorRef } } })
    for (const s of errorStatuses) responses[s] = error(ERRORS[s]!)
    // What the route's middleware refuses on its own (a JSON body too large, of the wrong type), and
    // the write guard's 507 on routes that write: statuses the route answers without its handler.
    for (const mw of r.middleware ?? [])
      for (const [s, d] of Object.entries((mw as WithRefusals)[REFUSALS] ?? {})) responses[s] ??= error(d)
    if (r.scope === 'write' || r.scope === 'publish') responses[507] ??= error(READ_ONLY)
    const op: Json = {
      operationId: r.operationId,
      summary: r.summary,
      parameters: parameters.map(p => JSON.parse(JSON.stringify(p)) as Json),
      responses,
      security: r.public ? [] : [{ bearerAuth: [] }],
    }
    if (r.description) op.description = r.description
    if (!r.public) op['x-required-scope'] = r.scope
    if (r.requestBody) {
      op.requestBody = {
        required: r.requestBody.required ?? true,
        description: r.requestBody.description,
        content: { [r.requestBody.contentType]: { schema: hoist(r.requestBody.schema, schemas) } },
      }
    }
    ;(paths[toOpenApiPath(r.path)] ??= {})[r.method.toLowerCase()] = JSON.parse(JSON.stringify(op)) as Json
  }
  return {
    openapi: '3.1.0',
    info,
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Token scopes: read (telemetry reads and streams), write (uploads, extensions, config), publish, cdp',
        },
      },
    },
  }
}
