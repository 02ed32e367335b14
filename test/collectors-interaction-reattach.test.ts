// The same interaction collector attached again to the same, still-open page (what a monitor
// reconnect does): each click is still reported exactly once.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { Monitor } from '../src/monitor/index.js'
import { createInteractionCollector } from '../collectors/interaction.js'
import { startBrowser } from './helpers/browser.js'
import { startServer, waitFor } from './helpers/http.js'
import { openStore } from './helpers/store.js'
import { recordingEmit } from './helpers/monitor.js'

t.test('re-attaching the same collector does not duplicate events', async t => {
  const server = await startServer(t, {
    '/': '<title>re</title><body style="margin:0"><button id="b" style="width:100px;height:40px">B</button></body>',
  })
  const browser = await startBrowser(t, { startUrl: server.url })
  await waitFor(
    async () =>
      ((await (await fetch(`${browser.httpUrl}/json/list`)).json()) as { title: string }[]).some(x => x.title === 're'),
    10000,
    'page',
  )
  const { pipeline } = await openStore(t)
  const rec = recordingEmit(pipeline)
  const collector = createInteractionCollector()
  const pageId = (await CDP.List({ port: browser.port })).find(x => x.type === 'page')!.id
  const client = await CDP({ port: browser.port, target: pageId })
  t.teardown(() => client.close())
  const click = async () => {
    await client.Input.dispatchMouseEvent({ type: 'mousePressed', x: 10, y: 10, button: 'left', clickCount: 1 })
    await client.Input.dispatchMouseEvent({ type: 'mouseReleased', x: 10, y: 10, button: 'left', clickCount: 1 })
  }
  for (let round = 1; round <= 3; round++) {
    const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: rec.emit, collectors: [collector] })
    await monitor.start()
    await click()
    await waitFor(() => rec.ofType('interaction_click').length >= round, 5000, `click ${round}`)
    await monitor.stop()
  }
  // A late duplicate would show up as a 4th event; a final marker proves delivery is done.
  const monitor = new Monitor({ cdpUrl: browser.wsUrl, emit: rec.emit, collectors: [collector] })
  t.teardown(() => monitor.stop())
  await monitor.start()
  await client.Runtime.evaluate({ expression: 'document.getElementById("b").textContent = "marker"' })
  await click()
  await waitFor(
    () => rec.ofType('interaction_click').some(e => (e.data as { text: string }).text === 'marker'),
    5000,
    'marker click',
  )
  t.same(
    rec.ofType('interaction_click').map(e => (e.data as { text: string }).text),
    ['B', 'B', 'B', 'marker'],
  )
})
