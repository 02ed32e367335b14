// Launch mode: the monitor starts Chromium itself, relaunches it on the same port when it dies,
// reports the exit, and stops it on shutdown. A missing binary is a clear startup error.
import t from 'tap'
import { startServer, waitFor } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { consoleCollector, recordingEmit } from './helpers/monitor.js'
import { ChromiumNotFoundError, Monitor, type BrowserExit } from '../src/monitor/index.js'

t.test('launch mode: start, relaunch after the browser dies, stop', async t => {
  const server = await startServer(t, { '/start': '<title>start</title>start' })
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = consoleCollector()
  const monitor = new Monitor({
    launch: { chromiumPath: '/usr/bin/chromium', startUrl: `${server.url}start` },
    emit: rec.emit,
    collectors: [collector],
    reconnect: { attempts: 5, initialBackoffMs: 50, maxBackoffMs: 200 },
  })
  const exits: BrowserExit[] = []
  monitor.events.on('browser-exit', e => exits.push(e))
  t.teardown(() => monitor.stop())
  await monitor.start()
  t.equal(monitor.state, 'collecting')
  const first = monitor.launched!
  t.ok(first.pid > 0)
  t.equal(monitor.browserWsUrl, first.wsUrl)
  await waitFor(
    () => monitor.targets().some(x => x.targetType === 'page' && x.context.url === `${server.url}start`),
    10000,
    'start page',
  )

  first.process.kill('SIGKILL')
  await waitFor(
    () => monitor.state === 'collecting' && monitor.launched && monitor.launched.pid !== first.pid,
    20000,
    'relaunched',
  )
  t.same(exits, [{ pid: first.pid, code: null, signal: 'SIGKILL', phase: 'running' }])
  const second = monitor.launched!
  t.equal(second.port, first.port, 'relaunched on the same port')
  t.same(
    rec.inputs.filter(e => e.type.startsWith('monitor_')).map(e => e.type),
    ['monitor_disconnected', 'monitor_reconnected'],
  )
  await waitFor(
    () => monitor.targets().some(x => x.context.url === `${server.url}start`),
    10000,
    'start page after relaunch',
  )

  await monitor.stop()
  t.equal(monitor.state, 'stopped')
  const exit = await second.exited
  t.ok(exit.code !== null || exit.signal !== null, 'launched browser stopped')
  t.equal(exits.length, 1, 'a requested stop is not reported as browser-exit')
  t.equal(rec.ofType('monitor_disconnected').length, 1, 'stop is not a disconnect')
})

t.test('launch mode: a missing binary rejects start() with ChromiumNotFoundError', async t => {
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const monitor = new Monitor({ launch: { chromiumPath: '/nonexistent/chromium' }, emit: rec.emit })
  await t.rejects(monitor.start(), ChromiumNotFoundError)
  await t.rejects(
    new Monitor({ launch: { chromiumPath: '/nonexistent/chromium' }, emit: rec.emit }).start(),
    /apt-get install -y chromium/,
  )
  t.equal(monitor.state, 'failed')
  t.same(rec.ofType('monitor_init_failed')[0]?.data, { step: 'launch' })
  await monitor.stop()
})
