// The digest without a browser: what the collector keeps from records in seq order (gaps across
// every category, a 500 and a failed fetch told after the action whose window holds them, vitals on
// their navigation), the budget (least important lines out first, counted, never past max_chars),
// and the route's refusals (bad query, an unknown step, a window over the bound).
import t from 'tap'
import { DigestCollector, renderDigest, type Digest, type DigestRecord } from '../src/digest/index.js'
import { registerDigestRoutes } from '../src/api/routes/digest.js'
import { BROWSER_ID, TOKEN, startApi } from './helpers/api.js'
import { clientCommands, type CliIO } from '../src/cli/index.js'
import type { EventLog } from '../src/store/event-log.js'

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5) * 1000
const CTX = { target_id: 'T1', target_type: 'page', session_id: 'S1', nav_seq: 1 }

function record(seq: number, ms: number, type: string, category: string, data: object): DigestRecord {
  return {
    seq,
    category,
    json: JSON.stringify({ seq, event: { ts: T0 + ms * 1000, type, category, source: { kind: 'cdp' }, data } }),
  }
}

function cdp(seq: number, ms: number, method: string, extra: object = {}): DigestRecord {
  return record(seq, ms, 'cdp_command', 'control', {
    connection_id: 'c1',
    method,
    session_id: 'S1',
    target_id: 'T1',
    duration_ms: 1,
    step_id: 'st1',
    ...extra,
  })
}

function session(): DigestRecord[] {
  return [
    record(1, 0, 'agent_step_started', 'control', { step_id: 'st1', name: 'buy tea' }),
    record(2, 10, 'page_navigation', 'page', {
      ...CTX,
      nav_seq: undefined,
      url: 'http://shop.test/',
      frame_id: 'T1',
      loader_id: 'L1',
    }),
    record(3, 20, 'page_web_vital', 'page', {
      ...CTX,
      url: 'http://shop.test/',
      name: 'LCP',
      value: 812.4,
      rating: 'good',
      delta: 812.4,
      id: 'v1',
    }),
    cdp(4, 100, 'Input.dispatchMouseEvent', { params: { type: 'mousePressed', x: 5, y: 5 } }),
    cdp(5, 101, 'Input.dispatchMouseEvent', { params: { type: 'mouseReleased', x: 5, y: 5 } }),
    record(6, 110, 'network_request', 'network', {
      ...CTX,
      url: 'http://shop.test/api/cart?key=s3cret',
      request_id: 'r1',
      method: 'POST',
      headers: {},
    }),
    // seq 7 and 8 were shed: a gap the digest counts.
    record(9, 150, 'network_response', 'network', {
      ...CTX,
      url: 'http://shop.test/api/cart',
      request_id: 'r1',
      status: 500,
      status_text: 'x',
      headers: {},
      mime_type: 'application/json',
      body: '{"error":\n"out of stock"}',
    }),
    record(10, 160, 'console_error', 'console', {
      ...CTX,
      text: 'TypeError: cart is undefined',
      stack_trace: {
        callFrames: [
          {
            functionName: 'a',
            scriptId: '3',
            url: 'http://shop.test/app.js',
            lineNumber: 0,
            columnNumber: 99,
            original: { source: 'src/cart.ts', line: 42, column: 5, name: 'addToCart' },
          },
          { functionName: 'b', scriptId: '3', url: 'http://shop.test/app.js', lineNumber: 0, columnNumber: 7 },
        ],
      },
    }),
    record(11, 170, 'network_request', 'network', {
      ...CTX,
      url: 'http://shop.test/api/stock',
      request_id: 'r2',
      method: 'GET',
      headers: {},
    }),
    record(12, 180, 'network_loading_failed', 'network', {
      ...CTX,
      request_id: 'r2',
      error_text: 'net::ERR_CONNECTION_REFUSED',
      canceled: false,
    }),
    record(13, 190, 'monitor_screenshot', 'screenshot', { png: 'AAAA' }),
    record(14, 300, 'agent_step_finished', 'control', {
      step_id: 'st1',
      name: 'buy tea',
      outcome: 'error',
      error_message: 'no cart',
      duration_ms: 300,
    }),
  ]
}

function digestOf(records: DigestRecord[], stepId?: string): Digest | undefined {
  const c = new DigestCollector()
  for (const r of records) c.add(r)
  return c.finish({ since_ts: T0, until_ts: T0 + 60_000_000 }, stepId)
}

t.test(
  'collector: steps with their actions and effects, requests at their send time, gaps over all categories',
  async t => {
    const d = digestOf(session())!
    t.equal(d.events, 12, 'every record counted, the screenshot too')
    t.same(d.dropped, { events: 2, gaps: 1 })
    t.same(d.navigations, [
      { ts: T0 + 10_000, url: 'http://shop.test/', vitals: [{ name: 'LCP', value: 812.4, rating: 'good' }] },
    ])
    t.same(
      d.failed_requests.map(f => [f.ts - T0, f.method, f.url, f.status, f.error, f.body]),
      [
        [110_000, 'POST', 'http://shop.test/api/cart?key=s3cret', 500, undefined, '{"error": "out of stock"}'],
        [170_000, 'GET', 'http://shop.test/api/stock', undefined, 'net::ERR_CONNECTION_REFUSED', undefined],
      ],
    )
    t.same(
      d.console_errors.map(e => e.frames),
      [['addToCart (src/cart.ts:42:5)', 'b (http://shop.test/app.js:1:8)']],
    )
    t.equal(d.steps.length, 1)
    const step = d.steps[0]!
    t.same([step.name, step.outcome, step.duration_ms, step.error_message], ['buy tea', 'error', 300, 'no cart'])
    t.same(
      step.actions.map(a => [a.title, a.effects.map(e => e.text)]),
      [
        [
          step.actions[0]!.title,
          [
            step.actions[0]!.effects[0]!.text,
            'console error TypeError: cart is undefined at addToCart (src/cart.ts:42:5)',
            'GET /api/stock failed (net::ERR_CONNECTION_REFUSED)',
          ],
        ],
      ],
    )
    t.match(
      step.actions[0]!.effects[0]!.text,
      /^POST \/api\/cart\?key=\[redacted:\d+\] 500$/,
      'effect URLs: path and query, secrets masked again',
    )
    t.match(step.actions[0]!.title, /^click/)
    t.equal(digestOf(session(), 'nope'), undefined, 'an unknown step: nothing (the route answers 404)')
  },
)

t.test('budget: the most important lines stay, each section counts what it left out, never past max_chars', async t => {
  const d = digestOf(session())!
  const whole = renderDigest(d, 8000)
  t.equal(whole.digest.omitted, undefined, 'everything fits')
  t.match(
    whole.markdown,
    /\n## Steps\n### 03:04:05\.000 step "buy tea": error in 0\.30 s — no cart\n- 03:04:05\.099 click/,
  )
  t.match(whole.markdown, /\n## Navigations\n- 03:04:05\.010 http:\/\/shop\.test\/ \(LCP 812 good\)\n/)
  t.match(whole.markdown, /\nDropped: 2 events in 1 gaps/)
  // Many quiet navigations and one failure: at a small budget the failure stays, navigations go.
  const many: DigestRecord[] = [...session()]
  for (let i = 0; i < 200; i++)
    many.push(
      record(100 + i, 1000 + i, 'page_navigation', 'page', {
        ...CTX,
        nav_seq: undefined,
        url: `http://shop.test/page/${i}`,
        frame_id: 'T1',
        loader_id: `L${i}`,
      }),
    )
  const small = renderDigest(digestOf(many)!, 1200)
  t.ok(small.markdown.length <= 1200, `${small.markdown.length} characters ≤ 1200`)
  t.match(small.markdown, /## Failed requests\n- 03:04:05\.110 POST http:\/\/shop\.test\/api\/cart\?key=s3cret 500/)
  t.match(
    small.markdown,
    /## Console errors\n- 03:04:05\.160 TypeError: cart is undefined\n {2}at addToCart \(src\/cart\.ts:42:5\)/,
  )
  const left = small.digest.omitted!.navigations!
  t.ok(left > 150, `${left} navigations left out`)
  t.match(
    small.markdown,
    new RegExp(`\\n\\nLeft out: ${left} navigations \\(raise max_chars or narrow the window\\)\\.\\n$`),
  )
  t.equal(small.digest.navigations.length, 201 - left, 'the JSON form keeps the same navigations')
  t.same(renderDigest(digestOf(many)!, 1200).markdown, small.markdown, 'deterministic')
  for (const max of [500, 501, 777, 2000, 5000, 20_000]) {
    const r = renderDigest(digestOf(many)!, max)
    t.ok(r.markdown.length <= max, `max_chars ${max}: ${r.markdown.length} characters`)
  }
})

t.test('route: bad query values, an unknown step, a window over the bound', async t => {
  const holder: { log?: EventLog } = {}
  const api = await startApi(t, {
    deps: {
      routes: [r => registerDigestRoutes(r, { reader: { read: q => holder.log!.read(q) }, maxEvents: 5 })],
    },
  })
  holder.log = api.log
  const path = `/browsers/${BROWSER_ID}/telemetry/digest`
  const refused = async (query: string, status: number) => {
    const res = await api.get(`${path}${query}`)
    t.equal(res.status, status, query)
    return (await res.json()) as { code: string; message: string; details?: { code: string }[] }
  }
  t.match(await refused('?format=html', 400), { code: 'bad_request' })
  t.match(await refused('?max_chars=10', 400), { code: 'bad_request' })
  t.match(await refused('?max_chars=999999999', 400), { code: 'bad_request' })
  t.same(await refused('?step_id=nope', 404), { code: 'not_found', message: 'no agent step "nope" in the window' })
  for (let i = 0; i < 6; i++)
    api.pipeline.emit({ type: 'console_log', data: { level: 'log', text: `line ${i}`, args: [] } as never })
  await api.log.flush()
  const big = await refused('', 400)
  t.same(
    big.details?.map(x => x.code),
    ['window_too_large'],
  )
  t.equal(big.message, 'the window holds more than 5 events; narrow since/until')
  const ok = await api.get(`${path}?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)
  t.equal(ok.status, 200, 'an empty window is a digest too')
  t.match(await ok.text(), /^# Session digest .*\n0 events; 0 steps, 0 failed requests, 0 console errors\.\n$/)
})

t.test('the digest command prints what the route answers; bad --max-chars is a usage error', async t => {
  const holder: { log?: EventLog } = {}
  const api = await startApi(t, {
    deps: { routes: [r => registerDigestRoutes(r, { reader: { read: q => holder.log!.read(q) } })] },
  })
  holder.log = api.log
  const started = api.pipeline.emit({
    type: 'agent_step_started',
    data: { step_id: 'st9', name: 'check out', via: 'http' },
  })
  t.equal(started.dropped, undefined)
  await api.log.flush()
  const run = async (args: string[]) => {
    let out = ''
    let err = ''
    const io: CliIO = {
      stdout: { write: c => ((out += String(c)), true) },
      stderr: { write: c => ((err += String(c)), true) },
      env: { BROWSER_TELEMETRY_URL: api.url, BROWSER_TELEMETRY_TOKEN: TOKEN },
    }
    const code = await clientCommands.digest!.run(args, io)
    return { code, out, err }
  }
  const md = await run(['--since', '5m'])
  t.equal(md.code, 0)
  t.match(
    md.out,
    /^# Session digest .*\n1 event; 1 step, 0 failed requests, 0 console errors\.\n\n## Steps\n### \d\d:\d\d:\d\d\.\d{3} step "check out": open\n$/,
  )
  const json = await run(['--json', '--step', 'st9', '--max-chars', '600'])
  t.equal(json.code, 0)
  t.same(
    (JSON.parse(json.out) as Digest).steps.map(s => [s.step_id, s.name]),
    [['st9', 'check out']],
  )
  const bad = await run(['--max-chars', 'lots'])
  t.not(bad.code, 0)
  t.match(bad.err, /--max-chars: expected a whole number, got "lots"/)
  const unknown = await run(['--step', 'nope'])
  t.not(unknown.code, 0)
  t.match(unknown.err, /no agent step "nope" in the window/)
})
