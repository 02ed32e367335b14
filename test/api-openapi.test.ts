// GET /openapi.json: a structurally valid OpenAPI 3.1 document that lists every registered route,
// whose schemas (from the event model) compile and accept what the server actually sends.
import t from 'tap'
// OpenAPI 3.1's schema dialect is JSON Schema 2020-12.
import { Ajv2020 } from 'ajv/dist/2020.js'
import { BROWSER_ID, startApi } from './helpers/api.js'
import { registerActionRoutes } from '../src/api/routes/actions.js'
import type { EventReader } from '../src/sse/telemetry-source.js'

const METHODS = ['get', 'put', 'post', 'patch', 'delete']

t.test('openapi.json lists every route and its schemas validate real responses', async t => {
  const reader: EventReader = { read: q => api.log.read(q) }
  const api = await startApi(t, {
    deps: {
      routes: [
        r => registerActionRoutes(r, { reader }),
        r =>
          r.add({
            method: 'POST',
            path: '/extra/:name',
            operationId: 'extraThing',
            summary: 'a route added by another group',
            scope: 'write',
            responses: { 204: { description: 'done' } },
            handler: async ctx => {
              ctx.status = 204
            },
          }),
      ],
    },
  })
  const res = await api.get('/openapi.json')
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  const doc = JSON.parse(await res.text())

  // Structure (OpenAPI 3.1 required fields).
  t.equal(doc.openapi, '3.1.0')
  t.type(doc.info.title, 'string')
  t.type(doc.info.version, 'string')
  t.type(doc.paths, 'object')
  t.same(doc.components.securitySchemes.bearerAuth, {
    type: 'http',
    scheme: 'bearer',
    description: doc.components.securitySchemes.bearerAuth.description,
  })

  // Every registered route is in it, with its operation id; nothing else is.
  const registered = api.app.router.routes
    .map(r => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, '{$1}')} ${r.operationId}`)
    .sort()
  const documented: string[] = []
  const opIds = new Set<string>()
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    t.ok(path.startsWith('/'), path)
    for (const [method, op] of Object.entries<any>(item)) {
      t.ok(METHODS.includes(method), `${path}: ${method} is an HTTP method`)
      documented.push(`${method} ${path} ${op.operationId}`)
      t.notOk(opIds.has(op.operationId), `${op.operationId} unique`)
      opIds.add(op.operationId)
      t.ok(Object.keys(op.responses).length > 0, `${op.operationId}: responses`)
      for (const [status, r] of Object.entries<any>(op.responses)) {
        t.match(status, /^[1-5]\d\d$/, `${op.operationId}: status key`)
        t.type(r.description, 'string', `${op.operationId} ${status}: description`)
      }
      // Path templates and path parameters agree.
      const templ = [...path.matchAll(/\{(\w+)\}/g)].map(m => m[1]).sort()
      const params = (op.parameters ?? [])
        .filter((p: any) => p.in === 'path')
        .map((p: any) => p.name)
        .sort()
      t.same(params, templ, `${op.operationId}: path parameters`)
      for (const p of op.parameters ?? []) {
        t.ok(['path', 'query', 'header'].includes(p.in), `${op.operationId}: ${p.name} location`)
        t.ok(p.schema && typeof p.schema === 'object', `${op.operationId}: ${p.name} schema`)
      }
      if (op.operationId === 'getHealth') t.same(op.security, [], 'healthz needs no auth')
      else t.same(op.security, [{ bearerAuth: [] }], `${op.operationId}: bearer auth`)
    }
  }
  t.same(documented.sort(), registered, 'documented routes == registered routes (including other groups)')
  t.ok(registered.some(r => r.includes('extraThing')))
  for (const op of [
    'readBrowserTelemetryEvents',
    'readBrowserTelemetryActions',
    'streamBrowserTelemetryEvents',
    'getBrowserTelemetryConfig',
    'replaceBrowserTelemetryConfig',
    'updateBrowserTelemetryConfig',
    'getHealth',
    'getOpenApiDocument',
  ]) {
    t.ok(opIds.has(op), `${op} documented`)
  }
  const read = doc.paths['/browsers/{id}/telemetry/events'].get
  t.same(Object.keys(read.responses['200'].headers).sort(), ['X-Has-More', 'X-Next-Offset'])
  t.same(read.parameters.map((p: any) => p.name).sort(), [
    'category',
    'id',
    'limit',
    'offset',
    'order',
    'since',
    'until',
  ])
  t.same(Object.keys(read.responses).sort(), ['200', '400', '401', '403', '404', '500'])

  // Every $ref resolves inside the document.
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? []
  t.ok(refs.length > 30)
  for (const ref of new Set(refs)) {
    const name = /"\$ref":"#\/components\/schemas\/([^"]+)"/.exec(ref)?.[1]
    t.ok(name && doc.components.schemas[name], `${ref} resolves`)
  }
  t.notMatch(JSON.stringify(doc), /"\$id"/, 'no TypeBox $id left behind')

  // The component schemas compile, and accept what the server really sends.
  // strict off: the document around the schemas (openapi, info, paths) is not itself a schema.
  const ajv = new Ajv2020({ allErrors: true, strict: false })
  ajv.addSchema({ ...doc, $id: 'openapi.json' })
  const validate = (name: string) => ajv.compile({ $ref: `openapi.json#/components/schemas/${name}` })
  t.ok(doc.components.schemas.TelemetryEventEnvelope, 'envelope schema from the event model')
  t.ok(doc.components.schemas.Event_console_log, 'one component per event type')
  const envelope = validate('TelemetryEventEnvelope')
  api.pipeline.emit({
    type: 'console_log',
    data: {
      level: 'log',
      text: 'hi',
      args: ['hi'],
      stack_trace: {
        callFrames: [{ functionName: 'f', scriptId: '1', url: 'u', lineNumber: 1, columnNumber: 2 }],
        parent: { callFrames: [] },
      },
    },
  })
  api.pipeline.emit({
    type: 'network_request',
    data: { request_id: 'r1', method: 'GET', headers: { a: 'b' }, url: 'http://x/' },
  })
  await api.log.flush()
  const page = JSON.parse(await (await api.get(`/browsers/${BROWSER_ID}/telemetry/events`)).text())
  t.same(
    page.map((e: any) => e.event.type),
    ['api_call', 'console_log', 'network_request'],
    'the openapi.json call itself emitted api_call',
  )
  for (const e of page) t.ok(envelope(e), `served envelope valid: ${ajv.errorsText(envelope.errors)}`)
  t.notOk(envelope({ seq: 0, event: page[0].event }), 'seq minimum 1 enforced')
  t.notOk(envelope({ ...page[0], extra: 1 }), 'no extra envelope properties')
  const error = validate('Error')
  const bad = JSON.parse(await (await api.get(`/browsers/${BROWSER_ID}/telemetry/events?limit=0`)).text())
  t.ok(error(bad), 'a served error object is valid')
  t.notOk(error({ message: 'no code' }))
  const action = validate('TelemetryAction')
  api.pipeline.emit({
    type: 'cdp_command',
    data: {
      connection_id: 'c',
      id: 1,
      method: 'Page.navigate',
      target_id: 'T',
      duration_ms: 2,
      outcome: 'ok',
      request_bytes: 9,
    },
  })
  await api.log.flush()
  const actions = JSON.parse(await (await api.get(`/browsers/${BROWSER_ID}/telemetry/actions`)).text())
  t.same(
    actions.map((a: any) => [a.kind, a.title]),
    [['navigate', 'navigate']],
  )
  for (const a of actions) t.ok(action(a), `served action valid: ${ajv.errorsText(action.errors)}`)
  t.notOk(action({ ...actions[0], kind: 'dance' }), 'kinds are a closed list')
  const config = validate('BrowserTelemetryConfig')
  t.ok(config(JSON.parse(await (await api.get(`/browsers/${BROWSER_ID}/telemetry`)).text())), 'served config valid')
  t.notOk(config({ browser: { monitor: { enabled: true } } }), 'monitor key not in the config schema')
})
