// The reconnect state machine against real Chromium: browser killed and restarted on the same port
// (new WebSocket URL), and killed for good (failed after the configured attempts).
import t from 'tap'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { consoleCollector, recordingEmit } from './helpers/monitor.js'
import { Monitor } from '../src/monitor/index.js'

t.test('browser killed and restarted on the same port: disconnected, then reconnected with fresh sessions', async t => {
  const server = await startServer(t, { '/p': '<title>p</title>p' })
  const first = await startBrowser(t, { startUrl: `${server.url}p` })
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = consoleCollector()
  // The ws URL of the first browser: the monitor must find the restarted one through /json/version.
  const monitor = new Monitor({
    cdpUrl: first.wsUrl,
    emit: rec.emit,
    collectors: [collector],
    reconnect: { attempts: 40, initialBackoffMs: 50, maxBackoffMs: 250 },
  })
  const states: string[] = []
  const upstreams: (string | undefined)[] = []
  monitor.events.on('state', s => states.push(s))
  monitor.events.on('upstream', u => upstreams.push(u))
  t.teardown(() => monitor.stop())
  await monitor.start()
  await waitFor(() => monitor.targets().some(x => x.context.url === `${server.url}p`), 10000, 'page attached')
  const oldSessions = new Set(monitor.targets().map(x => x.sessionId))
  const attachedBefore = collector.attached.length

  const killedAt = Date.now()
  first.process.kill('SIGKILL')
  await first.exited
  await waitFor(() => monitor.state === 'disconnected', 10000, 'disconnected')
  t.same(
    rec.ofType('monitor_disconnected').map(e => e.data),
    [{ reason: 'browser_restarted' }],
  )
  t.same(rec.ofType('monitor_disconnected')[0]!.source, { kind: 'local_process' })
  t.same(monitor.targets(), [], 'per-target state discarded on disconnect')
  t.equal(collector.detached, attachedBefore, 'every collector detach ran on disconnect')
  t.equal(monitor.browserWsUrl, undefined)

  const second = await startBrowser(t, { port: first.port, startUrl: `${server.url}p` })
  t.not(second.wsUrl, first.wsUrl, 'a restarted browser has a new WebSocket URL')
  await waitFor(() => monitor.state === 'collecting', 15000, 'reconnected')
  const elapsed = Date.now() - killedAt
  t.same(states, ['collecting', 'disconnected', 'collecting'])
  t.same(upstreams, [first.wsUrl, undefined, second.wsUrl])
  t.equal(monitor.browserWsUrl, second.wsUrl)
  const reconnected = rec.ofType('monitor_reconnected')
  t.equal(reconnected.length, 1)
  const duration = (reconnected[0]!.data as { reconnect_duration_ms: number }).reconnect_duration_ms
  // By order, not speed: the daemon's gap lies inside the one this test saw (50 ms: the two clocks'
  // reading).
  t.ok(duration > 0 && duration <= elapsed + 50, `duration ${duration} ms within the observed gap ${elapsed} ms`)
  const order = rec.inputs.filter(e => e.type.startsWith('monitor_')).map(e => e.type)
  t.same(order, ['monitor_disconnected', 'monitor_reconnected'])
  const status = monitor.status()
  t.same(
    [status.state, status.reconnects, status.reconnectAttempt],
    ['collecting', 1, 0],
    'status: one reconnect, none in progress',
  )

  await waitFor(() => monitor.targets().some(x => x.context.url === `${server.url}p`), 10000, 'page re-attached')
  const page = monitor.targets().find(x => x.context.url === `${server.url}p`)!
  t.notOk(oldSessions.has(page.sessionId), 'fresh session id')

  const session = collector.attached.find(s => s.sessionId === page.sessionId)!
  await session.send('Runtime.evaluate', { expression: 'console.log("after reconnect")' })
  const log = await waitFor(
    () => rec.ofType('console_log').find(e => (e.data as { text: string }).text === 'after reconnect'),
    5000,
    'events flow again',
  )
  // Per-target state is rebuilt from the new browser: the fresh session, its page's url and type.
  const ctx = log.data as { session_id: string; url: string; target_type: string }
  t.same([ctx.session_id, ctx.url, ctx.target_type], [page.sessionId, `${server.url}p`, 'page'], 'page context rebuilt')
})

t.test('browser killed and never restarted: failed after the configured attempts', async t => {
  const browser = await startBrowser(t)
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = consoleCollector()
  const monitor = new Monitor({
    cdpUrl: browser.httpUrl,
    emit: rec.emit,
    collectors: [collector],
    reconnect: { attempts: 3, initialBackoffMs: 20, maxBackoffMs: 40 },
  })
  const states: string[] = []
  monitor.events.on('state', s => states.push(s))
  t.teardown(() => monitor.stop())
  await monitor.start()
  browser.process.kill('SIGKILL')
  await waitFor(() => monitor.state === 'failed', 15000, 'failed')
  t.same(states, ['collecting', 'disconnected', 'failed'])
  const monitorEvents = rec.inputs.filter(e => e.type.startsWith('monitor_'))
  t.same(
    monitorEvents.map(e => [e.type, e.data]),
    [
      ['monitor_disconnected', { reason: 'browser_restarted' }],
      ['monitor_reconnect_failed', { reason: 'reconnect_exhausted' }],
    ],
  )
  t.same(monitor.targets(), [])
  t.same(
    monitor.status(),
    { state: 'failed', targets: {}, reconnectAttempt: 3, reconnects: 0, cdpErrors: {}, refusedTargets: 0 },
    'status: attempts used, no reconnect',
  )
  t.equal(monitor.debugCounts().timers, 0)
  await monitor.stop()
  t.equal(monitor.state, 'stopped')
})
