// CDP command failures: the classifier (session/target/document gone vs real failure), the
// rate-limited warning (once per method per minute), and against real Chromium: the messages it
// answers for a gone session/frame/context are classified 'closed', and a failing best-effort
// command (a bad parameter) is counted by method while one on a closed tab is not.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { pino } from 'pino'
import { Monitor, type Collector, type TargetSession } from '../src/monitor/index.js'
import {
  ProtocolError,
  ProtocolErrorLog,
  classifyProtocolError,
  toProtocolError,
} from '../src/monitor/protocol-error.js'
import { ConnectionClosedError } from '../src/monitor/cdp-client.js'
import { startBrowser } from './helpers/browser.js'
import { waitFor } from './helpers/http.js'
import { fakeAccepted } from './helpers/store.js'

/** A real pino logger whose records (parsed) land in arrays by level. */
function recordingLogger() {
  const warns: [Record<string, unknown>, string][] = []
  const debugs: [Record<string, unknown>, string][] = []
  const logger = pino(
    { level: 'debug' },
    {
      write(line: string) {
        const r = JSON.parse(line) as Record<string, unknown> & { level: number; msg: string }
        if (r.level === 40) warns.push([r, r.msg])
        else if (r.level === 20) debugs.push([r, r.msg])
      },
    },
  )
  return { warns, debugs, logger }
}

t.test('classifier: gone session/target/document is closed, everything else is an error', async t => {
  const cases: [string, 'closed' | 'error'][] = [
    ['Session with given id not found.', 'closed'],
    ['No target with given id found', 'closed'],
    ['No frame for given id found', 'closed'],
    ['Cannot find context with specified id', 'closed'],
    ['Execution context was destroyed.', 'closed'],
    ['Inspected target navigated or closed', 'closed'],
    ['WebSocket connection closed', 'error'],
    ['Width and height values must be positive, not greater than 10000000', 'error'],
    ['Invalid parameters (Failed to deserialize params.url - BINDINGS: string value expected at position 12)', 'error'],
    ["'Nope.nope' wasn't found", 'error'],
    ['No resource with given identifier found', 'error'],
  ]
  for (const [message, kind] of cases) t.equal(classifyProtocolError(new Error(message)), kind, message)
  t.equal(classifyProtocolError('a string'), 'error')
  t.equal(classifyProtocolError(new ConnectionClosedError()), 'closed', 'the browser connection went away (typed)')
  t.equal(
    classifyProtocolError(new ProtocolError('closed', 'X.y', 'whatever')),
    'closed',
    'an already classified error keeps its kind',
  )
  const wrapped = toProtocolError(
    'Page.navigate',
    Object.assign(new Error('Invalid parameters'), { response: { code: -32602, message: 'Invalid parameters' } }),
  )
  t.same(
    { kind: wrapped.kind, method: wrapped.method, code: wrapped.code, message: wrapped.message },
    { kind: 'error', method: 'Page.navigate', code: -32602, message: 'Page.navigate: Invalid parameters' },
  )
})

t.test('errors are counted by method, warned once per method per minute; closed ones only at debug', async t => {
  let now = 0
  const rec = recordingLogger()
  const log = new ProtocolErrorLog({ logger: rec.logger, now: () => now })
  const bad = new Error('Invalid parameters')
  t.equal(log.report('Page.navigate', bad), 'error')
  now = 59_999
  log.report('Page.navigate', bad)
  log.report('Runtime.evaluate', bad)
  t.equal(log.report('Runtime.evaluate', new Error('Session with given id not found.')), 'closed')
  t.same(
    rec.warns.map(([o, m]) => [o.method, o.failures, m]),
    [
      ['Page.navigate', 1, 'CDP command failed'],
      ['Runtime.evaluate', 1, 'CDP command failed'],
    ],
    'the second Page.navigate failure within the minute is not warned about',
  )
  now = 60_000
  log.report('Page.navigate', bad)
  t.same(
    rec.warns.map(([o]) => [o.method, o.failures]).slice(2),
    [['Page.navigate', 3]],
    'a minute after the last warning: warned again, with the count',
  )
  t.same(log.counts(), { 'Page.navigate': 3, 'Runtime.evaluate': 1 }, 'closed failures are not counted')
  t.same(
    rec.debugs.map(([o]) => o.method),
    ['Runtime.evaluate'],
  )
})

t.test('real Chromium: gone session/frame/context answers classify as closed', async t => {
  const browser = await startBrowser(t)
  const client = await CDP({ target: browser.wsUrl, local: true })
  t.teardown(() => client.close())
  const { targetId } = await client.send('Target.createTarget', { url: 'about:blank' })
  const { sessionId } = await client.send('Target.attachToTarget', { targetId, flatten: true })
  const kindOf = (p: Promise<unknown>) =>
    p.then(
      () => 'answered',
      (e: unknown) => classifyProtocolError(e),
    )
  t.equal(
    await kindOf(client.send('Runtime.evaluate', { expression: '1' }, 'NO-SUCH-SESSION')),
    'closed',
    'unknown session',
  )
  t.equal(
    await kindOf(client.send('Page.createIsolatedWorld', { frameId: 'NO-SUCH-FRAME' }, sessionId)),
    'closed',
    'unknown frame',
  )
  t.equal(
    await kindOf(client.send('Runtime.evaluate', { expression: '1', contextId: 987654 }, sessionId)),
    'closed',
    'unknown context',
  )
  t.equal(
    await kindOf(client.send('Target.attachToTarget', { targetId: 'NO-SUCH-TARGET', flatten: true })),
    'closed',
    'unknown target',
  )
  t.equal(
    await kindOf(
      client.send(
        'Emulation.setDeviceMetricsOverride',
        { width: -1, height: -1, deviceScaleFactor: 1, mobile: false },
        sessionId,
      ),
    ),
    'error',
    'bad parameter',
  )
})

t.test('real Chromium: a failing best-effort command is counted by method; one on a closed tab is not', async t => {
  const browser = await startBrowser(t)
  const sessions: TargetSession[] = []
  const probe: Collector = {
    name: 'probe',
    attach(s) {
      sessions.push(s)
      return () => undefined
    },
  }
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: fakeAccepted, collectors: [probe] })
  t.teardown(() => monitor.stop())
  await monitor.start()
  const page = sessions.find(s => s.targetType === 'page')!
  const bad = { width: -1, height: -1, deviceScaleFactor: 1, mobile: false }
  t.equal(
    await page.sendMayFail('Emulation.setDeviceMetricsOverride', bad),
    undefined,
    'resolves undefined instead of rejecting',
  )
  await page.sendMayFail('Emulation.setDeviceMetricsOverride', bad)
  t.same(
    await page.sendMayFail('Runtime.evaluate', { expression: '6 * 7', returnByValue: true }).then(r => r?.result.value),
    42,
    'a good command still answers',
  )
  t.same(monitor.cdpErrors(), { 'Emulation.setDeviceMetricsOverride': 2 })
  const rejected = await page.send('Emulation.setDeviceMetricsOverride', bad).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(
    rejected instanceof ProtocolError && rejected.kind === 'error' && rejected.code === -32602,
    'send() rejects with the classified error',
  )
  t.same(monitor.cdpErrors(), { 'Emulation.setDeviceMetricsOverride': 2 }, 'send() leaves counting to its caller')

  const scope = await CDP({ target: browser.wsUrl, local: true })
  t.teardown(() => scope.close())
  await scope.send('Target.closeTarget', { targetId: page.targetId })
  await waitFor(() => page.signal.aborted, 10_000, 'tab detached')
  t.equal(await page.sendMayFail('Emulation.setDeviceMetricsOverride', bad), undefined)
  t.same(monitor.cdpErrors(), { 'Emulation.setDeviceMetricsOverride': 2 }, 'a command on a closed tab is not a failure')
})
