// The agent's steps without a browser: the registry's rules (nesting, coverage, the innermost
// step, trace context, abandonment, limits) against a recording emit, and the HTTP routes through
// the real API app and store (201/200 bodies, every refusal as an error object, nothing stored on
// a refusal). The CDP side and Playwright are in agent-steps-browser.test.ts.
import t, { type Test } from 'tap'
import { createApiApp } from '../src/api/app.js'
import { TokenSet } from '../src/identity/tokens.js'
import { startApiServer } from '../src/api/server.js'
import { registerStepRoutes } from '../src/api/routes/steps.js'
import { StepRegistry, StepError, STEP_LIMITS, parseTraceparent } from '../src/agent/step-registry.js'
import { answerTelemetryCommand, isTelemetryCommand } from '../src/proxy/telemetry-domain.js'
import { Redactor } from '../src/events/redact.js'
import { validateData, type Envelope, type EventData, type TelemetryEvent } from '../src/events/index.js'
import type { Emit, EventInput } from '../src/pipeline/pipeline.js'
import { fakeAccepted, openStore } from './helpers/store.js'

type Started = EventData<'agent_step_started'>
type Finished = EventData<'agent_step_finished'>

const AGENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const AGENT_SPAN = '00f067aa0ba902b7'
const TRACEPARENT = `00-${AGENT_TRACE}-${AGENT_SPAN}-01`

function recorder() {
  const events: EventInput[] = []
  const emit: Emit = input => {
    const issues = validateData(input.type, input.data)
    if (issues.length) throw new Error(`invalid ${input.type}: ${JSON.stringify(issues)}`)
    events.push(input)
    return { ...fakeAccepted(input), accepted: events.length }
  }
  const of = <T>(type: string) => events.filter(e => e.type === type).map(e => e.data as T)
  return {
    events,
    emit,
    started: () => of<Started>('agent_step_started'),
    finished: () => of<Finished>('agent_step_finished'),
  }
}

function registry(tt: Test, opts: { maxOpen?: number; maxOpenMs?: number } = {}) {
  const rec = recorder()
  let now = 1000
  const steps = new StepRegistry({ emit: rec.emit, now: () => now, ...opts })
  tt.teardown(() => steps.close())
  return { steps, rec, advance: (ms: number) => (now += ms) }
}

function refusal(fn: () => unknown): { status: number; code: string; message: string } {
  try {
    fn()
  } catch (err) {
    if (err instanceof StepError) return { status: err.status, code: err.code, message: err.message }
    throw err
  }
  throw new Error('expected a refusal')
}

t.test('a step starts and finishes: both events, duration, outcome, error message', async t => {
  const { steps, rec, advance } = registry(t)
  const { stepId, seq } = steps.start('http', { name: 'log in', attributes: { user: 'ann', attempt: 2, fresh: true } })
  t.equal(seq, 1)
  advance(250.5)
  const end = steps.end(stepId, { outcome: 'error', errorMessage: 'wrong password' })
  t.equal(end.seq, 2)
  const [s] = rec.started()
  t.same(Object.keys(s!).sort(), ['attributes', 'name', 'step_id', 'trace_id', 'span_id', 'via'].sort())
  t.equal(s!.name, 'log in')
  t.equal(s!.via, 'http')
  t.same(s!.attributes, { user: 'ann', attempt: 2, fresh: true })
  t.match(s!.trace_id, /^[0-9a-f]{32}$/)
  t.match(s!.span_id, /^[0-9a-f]{16}$/)
  const [f] = rec.finished()
  t.equal(f!.step_id, stepId)
  t.equal(f!.outcome, 'error')
  t.equal(f!.error_message, 'wrong password')
  t.equal(f!.duration_ms, 250.5)
  t.equal(f!.abandoned_reason, undefined)
  t.equal(steps.openCount, 0)
  t.same(
    refusal(() => steps.end(stepId, {})),
    {
      status: 409,
      code: 'conflict',
      message: `step ${stepId} is already finished`,
    },
  )
  t.same(
    refusal(() => steps.end('nope', {})),
    { status: 404, code: 'not_found', message: 'no step nope' },
  )
})

t.test(
  'coverage: a connection step covers its connection, an unbound step every connection, innermost wins',
  async t => {
    const { steps } = registry(t)
    steps.connectionOpened('c1')
    steps.connectionOpened('c2', TRACEPARENT)
    t.equal(steps.stampFor('c1'), undefined, 'no step, no trace: nothing')
    t.same(
      steps.stampFor('c2'),
      { trace_id: AGENT_TRACE, parent_span_id: AGENT_SPAN },
      "outside steps: the agent's span",
    )
    const a = steps.start('cdp', { name: 'A', connectionId: 'c1' })
    t.equal(steps.stampFor('c1')?.step_id, a.stepId)
    t.equal(steps.stampFor('c2')?.step_id, undefined, "c1's step does not cover c2")
    const all = steps.start('http', { name: 'all' })
    t.equal(steps.stampFor('c1')?.step_id, all.stepId, 'the step started last is the innermost')
    t.equal(steps.stampFor('c2')?.step_id, all.stepId)
    const nested = steps.start('cdp', { name: 'A.1', parentStepId: a.stepId })
    t.equal(steps.stampFor('c1')?.step_id, nested.stepId)
    t.equal(steps.stampFor('c2')?.step_id, all.stepId, 'a nested step inherits its parent connection')
    steps.end(nested.stepId, {})
    steps.end(all.stepId, {})
    t.equal(steps.stampFor('c1')?.step_id, a.stepId, 'back to the outer step')
  },
)

t.test('trace context: body traceparent, parent, connection, or a new trace', async t => {
  const { steps, rec } = registry(t)
  steps.connectionOpened('c', TRACEPARENT)
  const top = steps.start('cdp', { name: 'top', connectionId: 'c' })
  const child = steps.start('cdp', { name: 'child', parentStepId: top.stepId })
  const other = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`
  const joined = steps.start('http', { name: 'joined', traceparent: other })
  const alone = steps.start('http', { name: 'alone' })
  const [sTop, sChild, sJoined, sAlone] = rec.started()
  t.equal(sTop!.trace_id, AGENT_TRACE)
  t.equal(sTop!.parent_span_id, AGENT_SPAN, "a top-level step of the connection is a child of the agent's span")
  t.equal(sChild!.trace_id, AGENT_TRACE)
  t.equal(sChild!.parent_span_id, sTop!.span_id, 'a nested step is a child of its parent step')
  t.equal(sChild!.parent_step_id, top.stepId)
  t.equal(sChild!.connection_id, 'c')
  t.equal(sJoined!.trace_id, 'a'.repeat(32))
  t.equal(sJoined!.parent_span_id, 'b'.repeat(16))
  t.not(sAlone!.trace_id, AGENT_TRACE)
  t.equal(sAlone!.parent_span_id, undefined, 'a step with no context starts its own trace')
  t.same(steps.stampFor('c'), { step_id: alone.stepId, trace_id: sAlone!.trace_id, parent_span_id: sAlone!.span_id })
  steps.end(alone.stepId, {})
  steps.end(joined.stepId, {})
  t.same(steps.stampFor('c'), { step_id: child.stepId, trace_id: AGENT_TRACE, parent_span_id: sChild!.span_id })
  t.equal(
    parseTraceparent('00-' + '0'.repeat(32) + '-' + AGENT_SPAN + '-01'),
    undefined,
    'all-zero trace id is invalid',
  )
  t.equal(parseTraceparent(TRACEPARENT.toUpperCase()), undefined, 'upper case hex is invalid')
})

t.test('abandonment: parent finished, connection closed, open too long, shutdown', async t => {
  const { steps, rec } = registry(t)
  steps.connectionOpened('c')
  const parent = steps.start('cdp', { name: 'p', connectionId: 'c' })
  const c1 = steps.start('cdp', { name: 'c1', parentStepId: parent.stepId })
  const c2 = steps.start('cdp', { name: 'c2', parentStepId: parent.stepId })
  steps.end(parent.stepId, {})
  t.same(
    rec.finished().map(f => [f.name, f.outcome, f.abandoned_reason]),
    [
      ['c2', 'abandoned', 'parent_finished'],
      ['c1', 'abandoned', 'parent_finished'],
      ['p', 'ok', undefined],
    ],
    'children end first, newest first',
  )
  t.equal(c1.stepId !== c2.stepId, true)
  const open = steps.start('cdp', { name: 'open', connectionId: 'c' })
  const unbound = steps.start('http', { name: 'unbound' })
  steps.connectionClosed('c')
  t.same(
    rec
      .finished()
      .slice(3)
      .map(f => [f.step_id, f.abandoned_reason]),
    [[open.stepId, 'connection_closed']],
  )
  t.equal(steps.openCount, 1, 'the unbound step stays open')
  t.same(
    refusal(() => steps.start('http', { name: 'x', connectionId: 'c' })),
    {
      status: 404,
      code: 'not_found',
      message: 'no open CDP proxy connection c',
    },
  )
  steps.close()
  t.same(
    rec
      .finished()
      .slice(4)
      .map(f => [f.step_id, f.abandoned_reason]),
    [[unbound.stepId, 'shutdown']],
  )
  t.equal(refusal(() => steps.start('http', { name: 'late' })).status, 503)
})

t.test('a step open past the bound is abandoned (open_too_long)', async t => {
  const rec = recorder()
  // The registry's timer does not hold the process open; this deadline does (and fails the wait).
  const finished = new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('no agent_step_finished within 5 s')), 5000)
    const emit: Emit = input => {
      const r = rec.emit(input)
      if (input.type === 'agent_step_finished') {
        clearTimeout(deadline)
        resolve()
      }
      return r
    }
    const steps = new StepRegistry({ emit, maxOpenMs: 20 })
    t.teardown(() => steps.close())
    steps.start('http', { name: 'forgotten' })
  })
  await finished
  t.same(
    rec.finished().map(f => [f.name, f.outcome, f.abandoned_reason]),
    [['forgotten', 'abandoned', 'open_too_long']],
  )
})

t.test('limits: name, attributes (bytes, keys, types), open steps, ids, error message', async t => {
  const { steps, rec } = registry(t, { maxOpen: 3 })
  const bad = (input: Parameters<StepRegistry['start']>[1]) => refusal(() => steps.start('http', input))
  t.equal(bad({ name: '' }).status, 400)
  t.equal(bad({ name: 7 }).status, 400)
  t.equal(bad({ name: 'x'.repeat(STEP_LIMITS.nameChars + 1) }).status, 400)
  t.equal(bad({ name: 'a', attributes: [] }).status, 400)
  t.equal(bad({ name: 'a', attributes: { n: Infinity } }).status, 400)
  t.equal(bad({ name: 'a', attributes: { o: { deep: 1 } } }).status, 400)
  t.equal(bad({ name: 'a', attributes: Object.fromEntries([...Array(65).keys()].map(i => [`k${i}`, i])) }).status, 400)
  // {"v":"..."} is 8 bytes of JSON around the value: 4088 characters make exactly 4096 bytes.
  const exact = { v: 'x'.repeat(STEP_LIMITS.attributesBytes - 8) }
  t.equal(Buffer.byteLength(JSON.stringify(exact)), 4096)
  const over = bad({ name: 'a', attributes: { v: 'x'.repeat(STEP_LIMITS.attributesBytes - 7) } })
  t.same(over, {
    status: 413,
    code: 'payload_too_large',
    message: 'invalid attributes: 4097 bytes as JSON, at most 4096',
  })
  t.equal(bad({ name: 'a', parentStepId: 'missing' }).status, 404)
  t.equal(bad({ name: 'a', traceparent: 'garbage' }).status, 400)
  t.equal(rec.events.length, 0, 'nothing stored for a refusal')
  const ok = steps.start('http', { name: 'a', attributes: exact })
  steps.start('http', { name: 'b' })
  steps.start('http', { name: 'c' })
  t.same(bad({ name: 'd' }), {
    status: 429,
    code: 'too_many_open_steps',
    message: 'at most 3 steps may be open at once; finish some first',
  })
  t.equal(refusal(() => steps.end(ok.stepId, { outcome: 'maybe' })).status, 400)
  t.equal(refusal(() => steps.end(ok.stepId, { errorMessage: 'e'.repeat(4097) })).status, 400)
  t.equal(steps.openCount, 3, 'a refused end leaves the step open')
})

t.test('BrowserTelemetry domain: answers, session echo, unknown method, refusals as protocol errors', async t => {
  const { steps, rec } = registry(t)
  steps.connectionOpened('conn')
  const ask = (frame: object) => {
    const data = Buffer.from(JSON.stringify(frame))
    t.equal(isTelemetryCommand(data), true)
    const answer = answerTelemetryCommand(data, 'conn', steps)
    return answer === undefined ? undefined : (JSON.parse(answer) as Record<string, unknown>)
  }
  const started = ask({ id: 3, method: 'BrowserTelemetry.startStep', params: { name: 'cdp step' }, sessionId: 'S1' })
  const stepId = (started!.result as { stepId: string }).stepId
  t.same(started, { id: 3, result: { stepId }, sessionId: 'S1' })
  t.equal(rec.started()[0]!.connection_id, 'conn')
  t.equal(rec.started()[0]!.via, 'cdp')
  t.same(
    ask({ id: 4, method: 'BrowserTelemetry.endStep', params: { stepId, outcome: 'error', errorMessage: 'boom' } }),
    {
      id: 4,
      result: {},
    },
  )
  t.equal(rec.finished()[0]!.error_message, 'boom')
  t.same(ask({ id: 5, method: 'BrowserTelemetry.nope' }), {
    id: 5,
    error: { code: -32601, message: "'BrowserTelemetry.nope' wasn't found" },
  })
  t.same(ask({ id: 6, method: 'BrowserTelemetry.startStep', params: { name: '' } }), {
    id: 6,
    error: { code: -32602, message: 'Invalid parameters', data: 'name: required: a non-empty string' },
  })
  t.same(ask({ id: 7, method: 'BrowserTelemetry.endStep', params: { stepId } }), {
    id: 7,
    error: { code: -32000, message: `step ${stepId} is already finished`, data: `step ${stepId} is already finished` },
  })
  t.same(ask({ id: 8, method: 'BrowserTelemetry.startStep', params: { name: 'x', parentStepId: 9 } }), {
    id: 8,
    error: {
      code: -32602,
      message: 'Invalid parameters',
      data: 'parentStepId: must be a non-empty string of at most 128 characters',
    },
  })
  const other = Buffer.from(
    JSON.stringify({ id: 9, method: 'Runtime.evaluate', params: { expression: '"BrowserTelemetry.x"' } }),
  )
  t.equal(isTelemetryCommand(other), true, 'the cheap check only looks for the name')
  t.equal(answerTelemetryCommand(other, 'conn', steps), undefined, 'another method is relayed')
  t.equal(isTelemetryCommand(Buffer.from('{"id":1,"method":"Page.enable"}')), false)
})

t.test('attributes are redacted like every event', async t => {
  const redactor = new Redactor()
  const event = {
    ts: 0,
    type: 'agent_step_started',
    category: 'control',
    source: { kind: 'local_process' },
    data: {
      step_id: 's',
      name: 'n',
      via: 'http',
      attributes: { password: 'hunter2', token: 12345678, url: 'https://u:p@x.test/?sig=abc&q=1', plain: 'keep' },
    },
  } as unknown as TelemetryEvent
  redactor.event(event)
  t.same((event.data as Started).attributes, {
    password: '[redacted:8]',
    token: '[redacted:8]',
    url: 'https://[redacted:8]@x.test/?sig=[redacted:8]&q=1',
    plain: 'keep',
  })
})

t.test('HTTP: start and end through the API app; refusals stored nothing', async t => {
  const { log, pipeline } = await openStore(t)
  const steps = new StepRegistry({ emit: pipeline.emit })
  t.teardown(() => steps.close())
  const tokens = new TokenSet()
  tokens.add('pub', ['publish'])
  tokens.add('read', ['read'])
  const app = createApiApp({ browserId: 'br', log, pipeline, tokens, routes: [r => registerStepRoutes(r, { steps })] })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close(500))
  const post = (path: string, body: unknown, token = 'pub', raw?: string) =>
    fetch(`${server.url}/browsers/br/telemetry/steps${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: raw ?? JSON.stringify(body),
    })
  // The routes answer before the group commit: a read flushes first.
  const stored = async () => {
    await log.flush()
    return (await log.read({ order: 'asc', limit: 100 })).records.map(r => JSON.parse(r.json) as Envelope)
  }

  const res = await post('', { name: 'checkout', attributes: { cart: 3 }, traceparent: TRACEPARENT })
  t.equal(res.status, 201)
  const body = (await res.json()) as { step_id: string; seq: number }
  t.same(Object.keys(body).sort(), ['seq', 'step_id'])
  const [env] = await stored()
  t.equal(env!.seq, body.seq, 'the seq answered is the stored event')
  t.equal(env!.event.type, 'agent_step_started')
  t.equal(env!.event.category, 'control')
  t.equal((env!.event.data as Started).parent_span_id, AGENT_SPAN)

  const end = await post(`/${body.step_id}/end`, { outcome: 'ok' })
  t.equal(end.status, 200)
  const ended = (await end.json()) as { seq: number }
  const all = await stored()
  t.equal(all.length, 2)
  t.equal(all[1]!.seq, ended.seq)
  t.equal((all[1]!.event.data as Finished).outcome, 'ok')

  const expectError = async (r: Response, status: number, code: string, message: RegExp) => {
    t.equal(r.status, status, `${status} ${code}`)
    const e = (await r.json()) as { code: string; message: string }
    t.equal(e.code, code)
    t.match(e.message, message)
  }
  await expectError(await post(`/${body.step_id}/end`, {}), 409, 'conflict', /already finished/)
  await expectError(await post('/nope/end', {}), 404, 'not_found', /no step nope/)
  await expectError(await post('', { name: 'x', extra: 1 }), 400, 'bad_request', /invalid extra: unknown field/)
  await expectError(await post('', {}), 400, 'bad_request', /invalid name/)
  await expectError(await post('', null, 'pub', '{"name":'), 400, 'bad_request', /not valid JSON/)
  await expectError(
    await post('', { name: 'x', connection_id: 'gone' }),
    404,
    'not_found',
    /no open CDP proxy connection gone/,
  )
  await expectError(
    await post('', { name: 'x', attributes: { v: 'x'.repeat(5000) } }),
    413,
    'payload_too_large',
    /5008 bytes/,
  )
  await expectError(await post('', { name: 'x' }, 'read'), 403, 'forbidden', /publish/)
  t.equal((await stored()).length, 2, 'no refusal stored anything')
  const noBody = await fetch(
    `${server.url}/browsers/br/telemetry/steps/${((await (await post('', { name: 'y' })).json()) as { step_id: string }).step_id}/end`,
    {
      method: 'POST',
      headers: { authorization: 'Bearer pub' },
    },
  )
  t.equal(noBody.status, 200, 'end without a body means ok')
  t.equal(((await stored()).at(-1)!.event.data as Finished).outcome, 'ok')
})

t.test('control off: steps still cover commands, nothing is stored, the answer has no seq', async t => {
  const { log, pipeline } = await openStore(t, {}, { categories: ['console'] })
  const steps = new StepRegistry({ emit: pipeline.emit })
  t.teardown(() => steps.close())
  const started = steps.start('http', { name: 'quiet' })
  t.equal(started.seq, undefined)
  t.equal(steps.stampFor('any')?.step_id, started.stepId, 'the step still covers commands')
  t.same(steps.end(started.stepId, {}), {})
  await log.flush()
  t.equal((await log.read({ order: 'asc', limit: 10 })).records.length, 0)
})

// Playwright's own message for a click that timed out, as err.message holds it (dim call log).
const PLAYWRIGHT_ERROR =
  'page.click: Timeout 1500ms exceeded.\nCall log:\n\u001b[2m  - waiting for locator(\'#b\')\u001b[22m\n\u001b[2m    - locator resolved to <button id="b">hidden</button>\u001b[22m\n'
const CLEAN_ERROR =
  'page.click: Timeout 1500ms exceeded.\nCall log:\n  - waiting for locator(\'#b\')\n    - locator resolved to <button id="b">hidden</button>\n'

t.test('error messages are stored without terminal escape codes, whichever door they came in by', async t => {
  const { stripAnsi } = await import('../src/util/ansi.js')
  t.equal(stripAnsi(PLAYWRIGHT_ERROR), CLEAN_ERROR)
  t.equal(
    stripAnsi('\u001b[31;1mred\u001b[0m \u001b]8;;http://x\u0007link\u001b]8;;\u0007 \u009b2Kc1 \u001bMrev'),
    'red link c1 rev',
  )
  const plain = 'no codes here'
  t.equal(stripAnsi(plain), plain)

  const { log, pipeline } = await openStore(t)
  const steps = new StepRegistry({ emit: pipeline.emit })
  t.teardown(() => steps.close())
  const tokens = new TokenSet()
  tokens.add('pub', ['publish'])
  const app = createApiApp({ browserId: 'br', log, pipeline, tokens, routes: [r => registerStepRoutes(r, { steps })] })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close(500))
  const post = (path: string, body: unknown) =>
    fetch(`${server.url}/browsers/br/telemetry/steps${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer pub' },
      body: JSON.stringify(body),
    })
  const { step_id: httpStep } = (await (await post('', { name: 'over http' })).json()) as { step_id: string }
  t.equal((await post(`/${httpStep}/end`, { outcome: 'error', error_message: PLAYWRIGHT_ERROR })).status, 200)
  const only = await post('', { name: 'codes only' })
  const { step_id: codesOnly } = (await only.json()) as { step_id: string }
  const refused = await post(`/${codesOnly}/end`, { outcome: 'error', error_message: '\u001b[2m\u001b[22m' })
  t.equal(refused.status, 400, 'a message of escape codes alone says nothing')
  t.match(await refused.json(), { code: 'bad_request', message: /error_message/ })

  steps.connectionOpened('conn')
  const frame = (o: object) => Buffer.from(JSON.stringify(o))
  const started = JSON.parse(
    answerTelemetryCommand(
      frame({ id: 1, method: 'BrowserTelemetry.startStep', params: { name: 'over cdp' } }),
      'conn',
      steps,
    )!,
  ) as { result: { stepId: string } }
  answerTelemetryCommand(
    frame({
      id: 2,
      method: 'BrowserTelemetry.endStep',
      params: { stepId: started.result.stepId, outcome: 'error', errorMessage: PLAYWRIGHT_ERROR },
    }),
    'conn',
    steps,
  )
  await log.flush()
  const finished = (await log.read({ order: 'asc', limit: 100 })).records
    .map(r => JSON.parse(r.json) as Envelope)
    .filter(e => e.event.type === 'agent_step_finished')
    .map(e => [(e.event.data as Finished).name, (e.event.data as Finished).error_message])
  t.same(finished, [
    ['over http', CLEAN_ERROR],
    ['over cdp', CLEAN_ERROR],
  ])
})
