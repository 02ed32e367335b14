// Target setups waiting at once never pile listeners on one AbortSignal: 20 tabs whose collector
// attach never finishes are all waiting on their bounded setup at the same time, and Node warns
// (MaxListenersExceededWarning) once 11 listeners sit on one signal. Stopping the monitor ends
// every such wait at once.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { recordingEmit } from './helpers/monitor.js'
import { Monitor, type Collector } from '../src/monitor/index.js'

const TABS = 20

t.test(`${TABS} target setups waiting at once: no listener pile-up, all ended by stop()`, async t => {
  const warnings: string[] = []
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`)
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  const server = await startServer(t, { '/tab': '<title>tab</title>' })
  const browser = await startBrowser(t)
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  let attaching = 0
  let stuckNow = false
  const stuckSessions: AbortSignal[] = []
  // Once the monitor runs, its attach never settles: each new target's setup waits out
  // attachTimeoutMs (a minute here).
  const stuck: Collector = {
    name: 'stuck',
    attach(session) {
      if (!stuckNow) return () => undefined
      attaching++
      stuckSessions.push(session.signal)
      return new Promise(() => undefined)
    },
  }
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: rec.emit, collectors: [stuck], attachTimeoutMs: 60_000 })
  await monitor.start()
  stuckNow = true
  const before = attaching
  const cdp = await CDP({ target: browser.wsUrl })
  t.teardown(() => cdp.close())
  await Promise.all(Array.from({ length: TABS }, (_, i) => cdp.Target.createTarget({ url: `${server.url}tab?${i}` })))
  await waitFor(() => attaching - before >= TABS, 60_000, `${TABS} setups waiting`)
  t.equal(attaching - before, TABS, 'one stuck setup per new tab')
  // A setup holds two bounded waits until the tab answers the monitor's own commands (the client-tab
  // hold and the own commands' wait), then one: the collectors'. One per tab for every pending setup
  // means all of them sit in the collectors' wait at once.
  const waiting = () => ({
    pendingAttaches: monitor.debugCounts().pendingAttaches,
    timers: monitor.debugCounts().timers,
  })
  await waitFor(
    () => waiting().pendingAttaches === TABS && waiting().timers === TABS,
    60_000,
    'every setup in its collectors wait',
  )
  t.same(waiting(), { pendingAttaches: TABS, timers: TABS }, 'every new tab waits in its bounded setup')
  // A tick for process.emitWarning to deliver.
  await new Promise(r => setImmediate(r))
  t.same(
    warnings.filter(w => w.startsWith('MaxListenersExceededWarning')),
    [],
    'no MaxListenersExceededWarning',
  )
  // The connection outlives stop() here only to be counted: its setups and their timers must be gone
  // though each would otherwise wait out its minute.
  const conn = monitor['conn']!
  await monitor.stop()
  const after = conn.counts()
  t.same(
    { pendingAttaches: after.pendingAttaches, timers: after.timers, sessions: after.sessions },
    { pendingAttaches: 0, timers: 0, sessions: 0 },
    'stop() ended every waiting setup and its timer',
  )
  t.equal(stuckSessions.filter(s => s.aborted).length, TABS, 'every stuck setup saw its session end')
})
