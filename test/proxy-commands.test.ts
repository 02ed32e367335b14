// cdp_command: what automation clients tell the browser through the CDP proxy, against real headless
// Chromium. Playwright drives a page (order, durations, no parameters by default, a typed password
// nowhere); a raw client sends commands Chromium refuses (its code and message), one that never
// gets an answer (no_answer at disconnect) and exact byte counts; with parameter capture on, typed
// text, cookie and header values are masked whatever their names.
import t, { type Test } from 'tap'
import { WebSocket } from 'ws'
import { chromium } from 'playwright-core'
import { CdpProxy, type CdpProxyOptions } from '../src/proxy/cdp-proxy.js'
import { launchChromium } from '../src/monitor/launch.js'
import { Redactor } from '../src/events/redact.js'
import type { Emit, EventInput } from '../src/pipeline/pipeline.js'
import { validateData, type EventData, type TelemetryEvent } from '../src/events/index.js'
import { startServer, waitFor } from './helpers/http.js'
import { fakeAccepted, openStore } from './helpers/store.js'

type Command = EventData<'cdp_command'>

/** Records every event as the pipeline would store it (validated, then redacted with the default policy). */
function recorder() {
  const events: EventInput[] = []
  const redactor = new Redactor()
  const emit: Emit = input => {
    const issues = validateData(input.type, input.data)
    if (issues.length) throw new Error(`invalid ${input.type}: ${JSON.stringify(issues)}`)
    const event = { ...input, ts: 0, category: 'control' } as unknown as TelemetryEvent
    redactor.event(event)
    events.push({ ...input, data: event.data } as EventInput)
    return fakeAccepted(input)
  }
  const commands = (connectionId?: string) =>
    events
      .filter(e => e.type === 'cdp_command')
      .map(e => e.data as Command)
      .filter(c => connectionId === undefined || c.connection_id === connectionId)
  const connectionIds = () =>
    events.filter(e => e.type === 'cdp_connect').map(e => (e.data as { connection_id: string }).connection_id)
  return { events, emit, commands, connectionIds }
}

async function startProxy(tt: Test, opts: Omit<CdpProxyOptions, 'listen'>) {
  const proxy = new CdpProxy({ listen: { host: '127.0.0.1', port: 0 }, ...opts })
  const addr = await proxy.start()
  tt.teardown(() => proxy.close())
  return { proxy, port: addr.port, base: `http://127.0.0.1:${addr.port}` }
}

function openWs(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
  })
}

/** Sends one raw frame and resolves with the raw answer frame of that id. */
function call(ws: WebSocket, frame: string, id: number): Promise<Buffer> {
  return new Promise(resolve => {
    const onMsg = (d: Buffer) => {
      if ((JSON.parse(d.toString()) as { id?: number }).id === id) {
        ws.off('message', onMsg)
        resolve(d)
      }
    }
    ws.on('message', onMsg)
    ws.send(frame)
  })
}

const PASSWORD = 'hunter2-Sekret-9f3a'
const SITE = `<!doctype html><title>login</title><body>
<form><input id="user"><input id="pw" type="password"><button id="go" type="button" onclick="document.title='clicked'">go</button></form>
</body>`

t.test('real Chromium through the proxy', async t => {
  const site = await startServer(t, { '/': SITE })
  const browser = await launchChromium()
  t.teardown(() => browser.close())

  await t.test(
    'Playwright: every command once, in the order sent, with durations; no parameters by default',
    async t => {
      const rec = recorder()
      const { base } = await startProxy(t, { upstream: () => browser.wsUrl, emit: rec.emit })
      const pw = await chromium.connectOverCDP(base)
      const page = await pw.contexts()[0]!.newPage()
      await page.goto(site.url)
      await page.click('#go')
      await page.fill('#pw', PASSWORD)
      t.equal(await page.evaluate(() => document.title), 'clicked')
      // Chromium answers a navigation it refuses with an errorText result, not a protocol error.
      const bad = await page.goto('bad://x').then(
        () => undefined,
        (e: Error) => e,
      )
      t.ok(bad, 'Playwright reports the refused navigation')
      await pw.close()
      const [id] = rec.connectionIds()
      await waitFor(() => rec.events.some(e => e.type === 'cdp_disconnect'), 10_000, 'disconnect')
      const cmds = rec.commands(id)
      t.ok(cmds.length > 20, `${cmds.length} commands recorded`)
      const ids = cmds.map(c => `${c.session_id ?? ''}:${c.id}`)
      t.equal(new Set(ids).size, ids.length, 'each command recorded exactly once')
      for (const c of cmds) {
        if (c.outcome === 'ok') t.ok(c.duration_ms >= 0 && c.response_bytes! > 0, `${c.method} answered`)
        t.ok(c.request_bytes > 0)
      }
      const methods = cmds.map(c => c.method)
      for (const m of [
        'Target.setAutoAttach',
        'Page.navigate',
        'Input.dispatchMouseEvent',
        'Input.insertText',
        'Runtime.callFunctionOn',
      ])
        t.ok(methods.includes(m), `${m} recorded`)
      // The two navigations: the good one and the refused one, both answered ok (errorText is in the result).
      const navigations = cmds.filter(c => c.method === 'Page.navigate')
      t.same(
        navigations.map(c => c.outcome),
        ['ok', 'ok'],
        'Page.navigate to bad:// is an ok answer carrying errorText',
      )
      t.ok(
        navigations.every(n => n.target_id !== undefined && n.session_id !== undefined),
        'flattened commands carry their session and target',
      )
      // Order: the records of one session follow the ids the client sent (Playwright numbers them upward).
      const bySession = new Map<string, number[]>()
      for (const c of cmds) bySession.set(c.session_id ?? '', [...(bySession.get(c.session_id ?? '') ?? []), c.id])
      const clicks = cmds.findIndex(c => c.method === 'Input.dispatchMouseEvent')
      const typed = cmds.findIndex(c => c.method === 'Input.insertText')
      t.ok(clicks >= 0 && typed > clicks, 'the click before the typing')
      const all = JSON.stringify(rec.events)
      t.notOk(all.includes(PASSWORD), 'the typed password appears nowhere')
      t.notOk(
        cmds.some(c => c.params !== undefined || c.result !== undefined),
        'no parameter or result is stored without --capture-command-params',
      )
      t.notOk(all.includes(site.url), 'not even the URL navigated to')
    },
  )

  await t.test('raw client: Chromium refusals, a command without an answer, exact bytes', async t => {
    const rec = recorder()
    const { port } = await startProxy(t, { upstream: () => browser.wsUrl, emit: rec.emit })
    const ws = await openWs(`ws://127.0.0.1:${port}${new URL(browser.wsUrl).pathname}`)
    const f1 = JSON.stringify({ id: 1, method: 'Target.attachToTarget', params: { targetId: 'NOPE', flatten: true } })
    const a1 = await call(ws, f1, 1)
    const f2 = JSON.stringify({
      id: 2,
      method: 'Runtime.evaluate',
      params: { expression: '1' },
      sessionId: 'NO-SUCH-SESSION',
    })
    const a2 = await call(ws, f2, 2)
    const f3 = JSON.stringify({ id: 3, method: 'Browser.getVersion' })
    const a3 = await call(ws, f3, 3)
    // A page session with a promise that never settles: awaitPromise never answers.
    const targets = JSON.parse(
      (await call(ws, JSON.stringify({ id: 4, method: 'Target.getTargets' }), 4)).toString(),
    ) as { result: { targetInfos: { targetId: string; type: string }[] } }
    const pageId = targets.result.targetInfos.find(x => x.type === 'page')!.targetId
    const attach = JSON.parse(
      (
        await call(
          ws,
          JSON.stringify({ id: 5, method: 'Target.attachToTarget', params: { targetId: pageId, flatten: true } }),
          5,
        )
      ).toString(),
    ) as { result: { sessionId: string } }
    const sid = attach.result.sessionId
    const evald = JSON.parse(
      (
        await call(
          ws,
          JSON.stringify({
            id: 6,
            method: 'Runtime.evaluate',
            params: { expression: 'new Promise(() => {})' },
            sessionId: sid,
          }),
          6,
        )
      ).toString(),
    ) as { result: { result: { objectId: string } } }
    const f7 = JSON.stringify({
      id: 7,
      method: 'Runtime.awaitPromise',
      params: { promiseObjectId: evald.result.result.objectId },
      sessionId: sid,
    })
    ws.send(f7)
    await waitFor(() => rec.commands().length === 6, 10_000, 'six answered commands')
    ws.close()
    await waitFor(() => rec.events.some(e => e.type === 'cdp_disconnect'), 10_000, 'disconnect')
    const cmds = rec.commands()
    t.same(
      cmds.map(c => [c.id, c.method, c.outcome]),
      [
        [1, 'Target.attachToTarget', 'error'],
        [2, 'Runtime.evaluate', 'error'],
        [3, 'Browser.getVersion', 'ok'],
        [4, 'Target.getTargets', 'ok'],
        [5, 'Target.attachToTarget', 'ok'],
        [6, 'Runtime.evaluate', 'ok'],
        [7, 'Runtime.awaitPromise', 'no_answer'],
      ],
      'each command exactly once, the unanswered one at disconnect',
    )
    const e1 = (JSON.parse(a1.toString()) as { error: { code: number; message: string } }).error
    const e2 = (JSON.parse(a2.toString()) as { error: { code: number; message: string } }).error
    t.same([cmds[0]!.error_code, cmds[0]!.error_message], [e1.code, e1.message], "Chromium's code and message")
    t.same([cmds[1]!.error_code, cmds[1]!.error_message], [e2.code, e2.message])
    t.equal(cmds[1]!.session_id, 'NO-SUCH-SESSION')
    t.same(
      [cmds[0]!.request_bytes, cmds[0]!.response_bytes, cmds[1]!.request_bytes, cmds[1]!.response_bytes],
      [Buffer.byteLength(f1), a1.length, Buffer.byteLength(f2), a2.length],
      'exact request and response bytes',
    )
    t.same([cmds[2]!.request_bytes, cmds[2]!.response_bytes], [Buffer.byteLength(f3), a3.length])
    t.equal(cmds[5]!.target_id, pageId, 'a session the client attached to carries its target')
    t.equal(cmds[6]!.request_bytes, Buffer.byteLength(f7))
    t.equal(cmds[6]!.response_bytes, undefined, 'no answer, no response bytes')
    const types = rec.events.map(e => e.type)
    t.equal(types.at(-1), 'cdp_disconnect', 'the unanswered command is recorded before the disconnect')
  })

  await t.test('cdp_disconnect counts the commands left unrecorded by the capture configuration', async t => {
    const { log, pipeline } = await openStore(t, {}, { categories: ['connection'] })
    const { port } = await startProxy(t, { upstream: () => browser.wsUrl, emit: e => pipeline.emit(e) })
    const session = async (n: number) => {
      const ws = await openWs(`ws://127.0.0.1:${port}${new URL(browser.wsUrl).pathname}`)
      for (let id = 1; id <= n; id++) await call(ws, JSON.stringify({ id, method: 'Browser.getVersion' }), id)
      ws.close()
    }
    const disconnects = async () => {
      await log.flush()
      return (await log.read({ order: 'asc', limit: 100 })).records
        .map(r => (JSON.parse(r.json) as { event: TelemetryEvent }).event)
        .filter(e => e.type === 'cdp_disconnect')
        .map(e => e.data as EventData<'cdp_disconnect'>)
    }
    await session(3)
    await waitFor(async () => (await disconnects()).length === 1, 10_000, 'first disconnect')
    pipeline.setCategories(['connection', 'control'])
    await session(2)
    await waitFor(async () => (await disconnects()).length === 2, 10_000, 'second disconnect')
    t.same(
      (await disconnects()).map(d => [d.message_count, d.telemetry_excluded, d.telemetry_dropped]),
      [
        [6, 3, 0],
        [4, 0, 0],
      ],
      'control off: every command excluded; on: none',
    )
  })

  await t.test('--capture-command-params: parameters and results kept, typed text and credentials masked', async t => {
    const rec = recorder()
    const { port } = await startProxy(t, {
      upstream: () => browser.wsUrl,
      emit: rec.emit,
      captureCommandParams: { maxBytes: 2048 },
    })
    const ws = await openWs(`ws://127.0.0.1:${port}${new URL(browser.wsUrl).pathname}`)
    const targets = JSON.parse(
      (await call(ws, JSON.stringify({ id: 1, method: 'Target.getTargets' }), 1)).toString(),
    ) as { result: { targetInfos: { targetId: string; type: string }[] } }
    const pageId = targets.result.targetInfos.find(x => x.type === 'page')!.targetId
    const attach = JSON.parse(
      (
        await call(
          ws,
          JSON.stringify({ id: 2, method: 'Target.attachToTarget', params: { targetId: pageId, flatten: true } }),
          2,
        )
      ).toString(),
    ) as { result: { sessionId: string } }
    const sessionId = attach.result.sessionId
    const send = (id: number, method: string, params: object) =>
      call(ws, JSON.stringify({ id, method, params, sessionId }), id)
    await send(3, 'Input.insertText', { text: PASSWORD })
    await send(4, 'Network.setExtraHTTPHeaders', { headers: { 'X-Plain-Looking': 'hdr-Sekret-1' } })
    await send(5, 'Network.setCookie', { name: 'sid', value: 'cookie-Sekret-2', url: 'http://127.0.0.1/' })
    await send(6, 'Page.navigate', { url: `${site.url}?access_token=url-Sekret-3` })
    await send(7, 'Runtime.evaluate', { expression: `'${'x'.repeat(3000)}'`, returnByValue: true })
    ws.close()
    await waitFor(() => rec.events.some(e => e.type === 'cdp_disconnect'), 10_000, 'disconnect')
    const byId = new Map(rec.commands().map(c => [c.id, c]))
    const all = JSON.stringify(rec.events)
    for (const secret of [PASSWORD, 'hdr-Sekret-1', 'cookie-Sekret-2', 'url-Sekret-3'])
      t.notOk(all.includes(secret), `${secret} appears nowhere`)
    t.same(JSON.parse(byId.get(3)!.params!), { text: '[redacted:32]' }, 'typed text masked by length class')
    t.same(JSON.parse(byId.get(4)!.params!), { headers: { 'X-Plain-Looking': '[redacted:16]' } })
    t.match(JSON.parse(byId.get(5)!.params!), { name: 'sid', value: '[redacted:16]', url: 'http://127.0.0.1/' })
    t.match(byId.get(6)!.params!, /access_token=\[redacted:\d+\]/, 'secret URL parameters masked')
    t.match(JSON.parse(byId.get(1)!.result!), { targetInfos: [] }, 'results kept')
    const long = byId.get(7)!
    t.equal(Buffer.byteLength(long.params!), 2048, 'parameters cut to the cap')
    t.equal(long.params_truncated, true)
    t.equal(long.result_truncated, true)
  })
})

t.test('the record is bounded: past maxPending commands are relayed unrecorded and counted', async t => {
  const { CommandLog } = await import('../src/proxy/command-log.js')
  const rec = recorder()
  const log = new CommandLog({ emit: rec.emit, connectionId: 'c1', maxPending: 3 })
  for (let id = 1; id <= 5; id++) log.fromClient(Buffer.from(JSON.stringify({ id, method: 'Runtime.evaluate' })), false)
  t.equal(log.untracked, 2, 'two commands past the bound')
  t.same(log.counts(), { telemetry_excluded: 0, telemetry_dropped: 2 }, 'past the bound: dropped')
  // An answer whose result holds a sessionId of its own is still the answer to a browser-level command.
  log.fromBrowser(Buffer.from('{"id":1,"result":{"sessionId":"NESTED"}}'), false)
  log.fromBrowser(Buffer.from('{"id":2,"result":{}}'), false)
  log.fromBrowser(Buffer.from('{"method":"Runtime.consoleAPICalled","params":{"id":3}}'), false)
  log.end()
  t.same(
    rec.commands().map(c => [c.id, c.outcome]),
    [
      [1, 'ok'],
      [2, 'ok'],
      [3, 'no_answer'],
    ],
  )
  log.fromBrowser(Buffer.from('{"id":3,"result":{}}'), false)
  t.equal(rec.commands().length, 3, 'nothing is recorded after the end')
})

t.test('records the pipeline did not store are counted: excluded by configuration, dropped under pressure', async t => {
  const { CommandLog } = await import('../src/proxy/command-log.js')
  let verdict: 'category_disabled' | 'shed' | undefined = 'category_disabled'
  const emit: Emit = input => (verdict ? { dropped: verdict } : fakeAccepted(input))
  let now = 0
  const log = new CommandLog({ emit, connectionId: 'c1', now: () => now })
  const roundTrip = (id: number, method: string) => {
    log.fromClient(Buffer.from(JSON.stringify({ id, method })), false)
    log.fromBrowser(Buffer.from(`{"id":${id},"result":{}}`), false)
  }
  // 25 ok commands of one method in a second: 20 records and one fold of 5, all refused as disabled.
  for (let id = 1; id <= 25; id++) roundTrip(id, 'Runtime.evaluate')
  now = 1500
  roundTrip(26, 'Page.reload') // a record of its own; the fold's second is over
  t.same(log.counts(), { telemetry_excluded: 21, telemetry_dropped: 0 })
  log.end()
  t.same(log.counts(), { telemetry_excluded: 26, telemetry_dropped: 0 }, 'the fold stands for its 5 commands')
  verdict = 'shed'
  const shed = new CommandLog({ emit, connectionId: 'c2', now: () => now })
  shed.fromClient(Buffer.from('{"id":1,"method":"Page.navigate"}'), false)
  shed.end()
  t.same(shed.counts(), { telemetry_excluded: 0, telemetry_dropped: 1 }, 'shed: dropped')
  verdict = undefined
  const kept = new CommandLog({ emit, connectionId: 'c3', now: () => now })
  kept.fromClient(Buffer.from('{"id":1,"method":"Page.navigate"}'), false)
  kept.end()
  t.same(kept.counts(), { telemetry_excluded: 0, telemetry_dropped: 0 }, 'stored: not counted')
})

t.test('repetition is folded: past 20 ok commands of a method in a second, one event with the count', async t => {
  const { CommandLog, FOLD_AFTER } = await import('../src/proxy/command-log.js')
  const rec = recorder()
  let now = 5000.5
  const log = new CommandLog({ emit: rec.emit, connectionId: 'c1', now: () => now })
  let id = 0
  const roundTrip = (method: string, ms: number, error = false) => {
    const myId = ++id
    log.fromClient(Buffer.from(JSON.stringify({ id: myId, method, sessionId: 'S' })), false)
    now += ms
    log.fromBrowser(
      Buffer.from(
        error
          ? `{"id":${myId},"error":{"code":-32000,"message":"boom"},"sessionId":"S"}`
          : `{"id":${myId},"result":{},"sessionId":"S"}`,
      ),
      false,
    )
  }
  for (let i = 0; i < 50; i++) roundTrip('Runtime.evaluate', 1 + (i % 10) / 10) // all within one second
  roundTrip('Runtime.evaluate', 0.5, true) // an error is never folded
  roundTrip('Page.navigate', 3)
  t.equal(
    rec.commands().length,
    FOLD_AFTER + 2,
    'the first 20 evaluates, the failed one and the navigation recorded one by one',
  )
  now += 1000 // the next second: the fold of the last one is emitted with the next command of its kind
  roundTrip('Runtime.evaluate', 1)
  log.end()
  const cmds = rec.commands()
  const fold = cmds.find(c => c.count !== undefined)!
  t.match(fold, {
    method: 'Runtime.evaluate',
    outcome: 'ok',
    count: 30,
    id: FOLD_AFTER + 1,
    session_id: 'S',
    duration_ms_p50: 1.5,
    duration_ms: 1.9,
  })
  t.equal(
    fold.request_bytes,
    30 * Buffer.byteLength(JSON.stringify({ id: 21, method: 'Runtime.evaluate', sessionId: 'S' })),
  )
  t.equal(
    cmds.filter(c => c.method === 'Runtime.evaluate' && c.count === undefined).length,
    FOLD_AFTER + 2,
    '20 + the error + the one of the next second',
  )
  t.equal(cmds.filter(c => c.outcome === 'error').length, 1)
})

t.test('commands in any layout are read alike: peeked where common, parsed otherwise', async t => {
  const { CommandLog } = await import('../src/proxy/command-log.js')
  const rec = recorder()
  const log = new CommandLog({ emit: rec.emit, connectionId: 'c1' })
  const frames = [
    '{"id":1,"method":"Page.navigate","params":{"url":"http://x/"},"sessionId":"S1"}', // Playwright's order
    '{"method":"Runtime.evaluate","params":{"expression":"1"},"id":2,"sessionId":"S1"}', // method first
    '{"id":3,"method":"Target.detachFromTarget","params":{"sessionId":"S9"}}', // a sessionId inside params
    '{"id":4,"method":"DOM.enable","sessionId":"S2","params":{}}', // the session before the params
    '{"id":5,"method":"Browser.getVersion"}',
  ]
  for (const f of frames) log.fromClient(Buffer.from(f), false)
  const answers = [
    '{"id":1,"result":{"frameId":"F"},"sessionId":"S1"}',
    '{"id":2,"result":{},"sessionId":"S1"}',
    '{"id":3,"result":{}}',
    '{"id":4,"result":{},"sessionId":"S2"}',
    '{"id":5,"result":{}}',
  ]
  for (const a of answers) log.fromBrowser(Buffer.from(a), false)
  log.end()
  t.same(
    rec.commands().map(c => [c.id, c.method, c.session_id, c.outcome]),
    [
      [1, 'Page.navigate', 'S1', 'ok'],
      [2, 'Runtime.evaluate', 'S1', 'ok'],
      [3, 'Target.detachFromTarget', undefined, 'ok'],
      [4, 'DOM.enable', 'S2', 'ok'],
      [5, 'Browser.getVersion', undefined, 'ok'],
    ],
  )
})
