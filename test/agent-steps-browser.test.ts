// The agent's steps against real headless Chromium: Playwright (playwright-core, /usr/bin/chromium
// under the daemon) connects through the CDP proxy with a traceparent the test chose, marks steps
// over its own CDP socket (nested, one abandoned when it disconnects) and over HTTP (one that fails),
// and the test reads back the step events, the step_id and input facts on the commands, and the
// OTLP spans: steps under the agent's span, nested steps under their parent, commands under their
// innermost step or, outside steps, under the agent's span; the bundle's recording.webm has one
// chapter per top-level step (real ffmpeg and ffprobe).
import t from 'tap'
import { chromium, type CDPSession } from 'playwright-core'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import type { Envelope, EventData } from '../src/events/index.js'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startServer } from './helpers/http.js'
import { unzipAll } from './helpers/bundle.js'
import { tempDir } from './helpers/store.js'
import { startReceiver } from './helpers/otlp-receiver.js'
import { ackedBy } from './helpers/ship.js'

const AGENT_TRACE = '5e1f0c2b9a8d47e6b3c2a1f0e9d8c7b6'
const AGENT_SPAN = 'a1b2c3d4e5f60718'
const TOKEN = 'steps-browser-token-0123456789'
const EMAIL = 'ann@example.com'

type Started = EventData<'agent_step_started'>
type Finished = EventData<'agent_step_finished'>
type Command = EventData<'cdp_command'>

const SHOP = `<!doctype html><title>shop</title><body>
<input id="email"><button id="buy" onclick="console.error('buy failed'); fetch('/missing')">buy</button>
<a id="next" href="/next">next</a></body>`

/** The BrowserTelemetry domain is not in Playwright's protocol types; the session sends it all the same. */
function send(session: CDPSession, method: string, params: object = {}): Promise<Record<string, unknown>> {
  return (session.send as unknown as (m: string, p: object) => Promise<Record<string, unknown>>)(method, params)
}

t.test('Playwright through the proxy: steps over CDP and HTTP, stamped commands, OTLP parentage', async t => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const site = await startServer(t, {
    '/': SHOP,
    '/next': '<!doctype html><title>next</title><p>next</p>',
    '/missing': (_req, res) => {
      res.writeHead(404)
      res.end()
    },
  })
  const dir = await tempDir(t)
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dir,
      '--proxy-listen',
      '127.0.0.1:0',
      '--token',
      TOKEN,
      '--otlp-endpoint',
      receiver.url,
      '--recording',
    ],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
  t.teardown(() => d.close())
  const proxyUrl = `http://127.0.0.1:${d.proxy!.address().port}`
  const http = async (path: string, body: object) => {
    const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/steps${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const stored = async () =>
    (await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })).records.map(r => JSON.parse(r.json) as Envelope)

  const pw = await chromium.connectOverCDP(proxyUrl, { headers: { traceparent: `00-${AGENT_TRACE}-${AGENT_SPAN}-01` } })
  const connect = (await stored()).find(e => e.event.type === 'cdp_connect')!.event.data as EventData<'cdp_connect'>
  t.equal(connect.traceparent, `00-${AGENT_TRACE}-${AGENT_SPAN}-01`, 'cdp_connect keeps the agent span')
  const connectionId = connect.connection_id!
  const cdp = await pw.newBrowserCDPSession()
  const page = await pw.contexts()[0]!.newPage()

  // Step 1 (CDP) with a nested step 2 (CDP): go to the shop, type an email, press Enter.
  const login = (await send(cdp, 'BrowserTelemetry.startStep', { name: 'log in', attributes: { user: 'ann' } }))
    .stepId as string
  t.match(login, /^[0-9a-f-]{36}$/)
  await page.goto(site.url)
  const form = (await send(cdp, 'BrowserTelemetry.startStep', { name: 'fill form', parentStepId: login }))
    .stepId as string
  await page.fill('#email', EMAIL)
  await page.press('#email', 'Enter')
  t.same(await send(cdp, 'BrowserTelemetry.endStep', { stepId: form }), {})
  t.same(await send(cdp, 'BrowserTelemetry.endStep', { stepId: login }), {})
  await t.rejects(send(cdp, 'BrowserTelemetry.explode'), /'BrowserTelemetry\.explode' wasn't found/)

  // Step 3 (HTTP, bound to this connection): click buy, which fails; the agent says so.
  const buy = await http('', { name: 'buy', connection_id: connectionId })
  t.equal(buy.status, 201)
  await page.click('#buy')
  const buyEnd = await http(`/${buy.body.step_id as string}/end`, { outcome: 'error', error_message: 'cart rejected' })
  t.equal(buyEnd.status, 200)

  // Step 4 (CDP) is never ended: the connection closes under it.
  const leave = (await send(cdp, 'BrowserTelemetry.startStep', { name: 'leave' })).stepId
  await Promise.all([page.waitForURL(/\/next$/), page.click('#next')])
  const disconnected = new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('no cdp_disconnect committed within 30 s')), 30_000)
    const off = d.log.onCommit(records => {
      if (!records.some(r => r.json.includes('"type":"cdp_disconnect"'))) return
      clearTimeout(deadline)
      off()
      resolve()
    })
  })
  await pw.close()
  await disconnected

  const all = await stored()
  const started = all.filter(e => e.event.type === 'agent_step_started').map(e => e.event.data as Started)
  const finished = all.filter(e => e.event.type === 'agent_step_finished').map(e => e.event.data as Finished)
  t.same(
    started.map(s => [s.name, s.via, s.parent_step_id, s.connection_id]),
    [
      ['log in', 'cdp', undefined, connectionId],
      ['fill form', 'cdp', login, connectionId],
      ['buy', 'http', undefined, connectionId],
      ['leave', 'cdp', undefined, connectionId],
    ],
  )
  t.same(started[0]!.attributes, { user: 'ann' })
  t.equal(started[3]!.step_id, leave, 'the id the CDP answer gave')
  t.same(
    finished.map(f => [f.name, f.outcome, f.abandoned_reason ?? null, f.error_message ?? null]),
    [
      ['fill form', 'ok', null, null],
      ['log in', 'ok', null, null],
      ['buy', 'error', null, 'cart rejected'],
      ['leave', 'abandoned', 'connection_closed', null],
    ],
  )
  for (const s of started) {
    t.equal(s.trace_id, AGENT_TRACE, `${s.name} is in the agent's trace`)
  }
  const span = (name: string) => started.find(s => s.name === name)!.span_id
  t.equal(started[0]!.parent_span_id, AGENT_SPAN, "a top-level step is a child of the agent's span")
  t.equal(started[1]!.parent_span_id, span('log in'), 'a nested step is a child of its parent')

  const commands = all.filter(e => e.event.type === 'cdp_command').map(e => e.event.data as Command)
  const stepOf = (c: Command) => started.find(s => s.step_id === c.step_id)?.name ?? null
  const navigate = commands.find(c => c.method === 'Page.navigate')!
  t.equal(stepOf(navigate), 'log in', 'goto belongs to "log in"')
  const insert = commands.find(c => c.method === 'Input.insertText')!
  t.equal(stepOf(insert), 'fill form', 'fill belongs to the innermost step')
  t.equal(insert.input_chars, EMAIL.length, 'the character count, never the text')
  t.notOk(JSON.stringify(all).includes(EMAIL), 'the typed text is stored nowhere')
  const enter = commands.filter(c => c.method === 'Input.dispatchKeyEvent' && c.input_key === 'Enter')
  t.same(
    enter.map(c => [c.input_type, stepOf(c)]),
    [
      ['keyDown', 'fill form'],
      ['keyUp', 'fill form'],
    ],
  )
  const mouse = commands.filter(c => c.method === 'Input.dispatchMouseEvent' && c.input_type === 'mousePressed')
  t.same(
    mouse.map(c => stepOf(c)),
    ['buy', 'leave'],
    'each click in its step',
  )
  const before = commands.filter(c => c.method === 'Browser.getVersion')
  t.ok(before.length >= 1, 'setup ran before any step')
  t.same(
    before.map(c => [c.step_id, c.trace_id, c.parent_span_id]),
    before.map(() => [undefined, AGENT_TRACE, AGENT_SPAN]),
    "commands outside steps are in the agent's trace under its span",
  )
  t.notOk(
    commands.some(c => c.method.startsWith('BrowserTelemetry.')),
    'the daemon domain never reaches the browser nor the command log',
  )

  // OTLP: the spans the exporter made of all this.
  await ackedBy(
    d.sinks.sinks.find(s => s.name === 'otlp_traces')!,
    all.at(-1)!.seq,
  )
  const spans = receiver.spans()
  const stepSpan = (name: string) => spans.find(s => s.name === name && s.attributes['browser.step.id'] !== undefined)
  const loginSpan = stepSpan('log in')!
  const formSpan = stepSpan('fill form')!
  const buySpan = stepSpan('buy')!
  const leaveSpan = stepSpan('leave')!
  t.same(
    [loginSpan, formSpan, buySpan, leaveSpan].map(s => [s.traceId, s.parentSpanId]),
    [
      [AGENT_TRACE, AGENT_SPAN],
      [AGENT_TRACE, loginSpan.spanId],
      [AGENT_TRACE, AGENT_SPAN],
      [AGENT_TRACE, AGENT_SPAN],
    ],
  )
  t.equal(loginSpan.spanId, span('log in'), 'the span id the step event carries')
  t.equal(buySpan.status?.code, 2, 'a failed step is an ERROR span')
  t.equal(buySpan.status?.message, 'cart rejected')
  t.equal(leaveSpan.status?.message, 'abandoned (connection_closed)')
  t.ok(formSpan.start >= loginSpan.start && formSpan.end <= loginSpan.end, 'the nested span lies inside its parent')
  const insertSpan = spans.find(s => s.name === 'Input.insertText')!
  t.same([insertSpan.traceId, insertSpan.parentSpanId], [AGENT_TRACE, formSpan.spanId])
  const navSpan = spans.find(s => s.name === 'Page.navigate')!
  t.same([navSpan.traceId, navSpan.parentSpanId], [AGENT_TRACE, loginSpan.spanId])
  const versionSpan = spans.find(s => s.name === 'Browser.getVersion')!
  t.same([versionSpan.traceId, versionSpan.parentSpanId], [AGENT_TRACE, AGENT_SPAN])

  // The session's video: one chapter per top-level step, titled with its name ("fill form" is nested).
  const since = new Date(Math.floor(all[0]!.event.ts / 1000) - 1000).toISOString()
  const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry/bundle?since=${encodeURIComponent(since)}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  })
  t.equal(res.status, 200)
  const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
  const manifest = JSON.parse(files.get('manifest.json')!.toString()) as { steps: { name: string }[] }
  t.same(
    manifest.steps.map(s => s.name),
    ['log in', 'fill form', 'buy', 'leave'],
    "the manifest lists the agent's steps",
  )
  const webm = files.get('recording.webm')
  t.ok(webm && webm.length > 0, 'the bundle has the recording')
  const file = join(dir, 'session.webm')
  await writeFile(file, webm!)
  const { stdout } = await promisify(execFile)('ffprobe', ['-v', 'error', '-show_chapters', '-of', 'json', file])
  const chapters = (JSON.parse(stdout) as { chapters: { start: number; end: number; tags?: { title?: string } }[] })
    .chapters
  t.same(
    chapters.map(c => c.tags?.title),
    ['log in', 'buy', 'leave'],
    'a chapter per top-level step',
  )
  for (let i = 1; i < chapters.length; i++)
    t.ok(chapters[i]!.start >= chapters[i - 1]!.end, `chapter ${i} starts after the one before ends`)
})
