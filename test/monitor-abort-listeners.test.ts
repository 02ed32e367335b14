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
  // Once the monitor runs, its attach never settles: each new target's setup waits out
  // attachTimeoutMs (a minute here).
  const stuck: Collector = {
    name: 'stuck',
    attach() {
      if (!stuckNow) return () => undefined
      attaching++
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
  // A tick for process.emitWarning to deliver.
  await new Promise(r => setImmediate(r))
  t.same(
    warnings.filter(w => w.startsWith('MaxListenersExceededWarning')),
    [],
    'no MaxListenersExceededWarning',
  )
  // Within the test's timeout, well under the minute each setup would wait.
  await monitor.stop()
  t.pass('stop() ended every waiting setup')
})
