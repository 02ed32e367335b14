// The capture plan applied live: the whole daemon attached to real headless Chromium
// through a counting relay, categories switched with PATCH of the telemetry config. What reaches the
// daemon (events per method and session) and what it sends (commands per method) is counted on the
// wire, so "off" means Chromium stopped sending, not that the daemon dropped what it got.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { autoAttachParams, capturePlan } from '../src/monitor/index.js'
import { CAPTURE_NEEDS } from '../collectors/index.js'
import { startBrowser } from './helpers/browser.js'
import { daemonBehindRelay } from './helpers/cdp-relay.js'
import { startServer, waitFor } from './helpers/http.js'

const TOKEN = 'capture-live-token'

t.test(
  'categories switched live on an attached tab: domains, listeners, binding and script follow; nothing reattaches',
  async t => {
    const site = await startServer(t, {
      '/': '<!doctype html><title>live</title><button id="b" style="position:absolute;left:0;top:0;width:200px;height:100px">b</button>',
      '/data.json': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"ok":1}')
      },
    })
    const browser = await startBrowser(t)
    const { d, relay } = await daemonBehindRelay(t, browser.wsUrl, TOKEN)
    const monitor = d.monitor!

    // The driver talks to Chromium directly (not through the relay): its traffic is not counted.
    const opener = await CDP({ target: browser.wsUrl, local: true })
    const { targetId } = await opener.send('Target.createTarget', { url: 'about:blank' })
    await opener.close()
    const driver = await CDP({
      target: `ws://127.0.0.1:${new URL(browser.wsUrl).port}/devtools/page/${targetId}`,
      local: true,
    })
    t.teardown(() => driver.close())
    const session = await waitFor(() => monitor.targets().find(x => x.targetId === targetId), 10_000, 'tab attached')
    const sid = session.sessionId
    await driver.send('Page.enable')

    const stored = async () => {
      await d.log.flush()
      const page = await d.log.read({ order: 'asc', limit: 1000 })
      return page.records.map(r => JSON.parse(r.json) as { event: { type: string; data: Record<string, unknown> } })
    }
    const consoleTexts = async () =>
      (await stored())
        .filter(e => e.event.type === 'console_log' && e.event.data.target_id === targetId)
        .map(e => e.event.data.text)
    const ofType = async (type: string) =>
      (await stored()).filter(e => e.event.type === type && e.event.data.target_id === targetId)
    const patch = async (browserCats: Record<string, boolean>) => {
      const body = { browser: Object.fromEntries(Object.entries(browserCats).map(([c, enabled]) => [c, { enabled }])) }
      const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      t.equal(res.status, 200, `PATCH ${JSON.stringify(browserCats)}`)
      await monitor.planApplied()
    }
    /** A navigation the daemon has seen (Page stays on whatever else is switched): everything sent before it reached the relay first. */
    let navs = 0
    const navSeqNow = () => monitor.targets().find(x => x.targetId === targetId)?.context.nav_seq ?? 0
    const navigate = async () => {
      const before = relay.count('Page.frameNavigated', sid)
      const navBefore = navSeqNow()
      const loaded = driver.Page.loadEventFired()
      await driver.send('Page.navigate', { url: `${site.url}?n=${++navs}` })
      await loaded
      await waitFor(() => relay.count('Page.frameNavigated', sid) > before, 10_000, 'navigation seen by the daemon')
      // Relayed is not yet handled: the monitor handles received messages in slices. Wait for its nav_seq.
      await waitFor(() => navSeqNow() > navBefore, 10_000, 'navigation counted by the monitor')
    }
    /** A same-document navigation the daemon has seen: what the document sent before it reached the relay first. */
    let marks = 0
    const marker = async () => {
      const before = relay.count('Page.navigatedWithinDocument', sid)
      await driver.send('Runtime.evaluate', { expression: `history.pushState(null, '', '#m${++marks}')` })
      await waitFor(
        () => relay.count('Page.navigatedWithinDocument', sid) > before,
        10_000,
        'marker seen by the daemon',
      )
    }
    const click = async () => {
      for (const type of ['mousePressed', 'mouseReleased'] as const)
        await driver.send('Input.dispatchMouseEvent', { type, x: 50, y: 50, button: 'left', clickCount: 1 })
    }
    const log = (text: string) =>
      driver.send('Runtime.evaluate', {
        expression: `console.log(${JSON.stringify(text)}); fetch('/data.json').then((r) => r.text())`,
        awaitPromise: true,
      })

    await navigate()
    const navSeq0 = navSeqNow()
    await log('one')
    await click()
    await waitFor(
      async () => (await consoleTexts()).includes('one') && (await ofType('interaction_click')).length === 1,
      10_000,
      'console and click captured',
    )
    const seenOne = relay.count('Runtime.consoleAPICalled', sid)
    t.ok(seenOne >= 1, 'consoleAPICalled reaches the daemon while console is on')
    const attachesBefore = relay.sent('Target.attachToTarget').length + relay.sent('Target.detachFromTarget').length
    const autoAttachBefore = relay.sent('Target.setAutoAttach', sid).length

    // console off, interaction still on: Runtime stays (the binding needs it), the console collector stops.
    await patch({ console: false })
    t.same(relay.sent('Runtime.disable', sid), [], 'Runtime kept for the interaction binding')
    await log('two')
    await click()
    await waitFor(async () => (await ofType('interaction_click')).length === 2, 10_000, 'second click captured')
    t.notOk((await consoleTexts()).includes('two'), 'console_log not emitted while console is off')

    // interaction and page off too (page's Web Vitals binding needs Runtime on pages as well): Runtime
    // disabled, both bindings and new-document scripts removed.
    await patch({ interaction: false, page: false })
    t.equal(relay.sent('Runtime.disable', sid).length, 1, 'Runtime.disable sent once')
    t.equal(relay.sent('Runtime.removeBinding', sid).length, 2, 'interaction and vitals bindings removed')
    t.equal(relay.sent('Page.removeScriptToEvaluateOnNewDocument', sid).length, 2, 'new-document scripts removed')
    const consoleBefore = relay.count('Runtime.consoleAPICalled', sid)
    const bindingBefore = relay.count('Runtime.bindingCalled', sid)
    await navigate() // a new document: no script in it
    await log('three')
    await click()
    await marker()
    t.equal(
      relay.count('Runtime.consoleAPICalled', sid),
      consoleBefore,
      'no consoleAPICalled reaches the daemon with console, interaction and page off',
    )
    t.equal(
      relay.count('Runtime.bindingCalled', sid),
      bindingBefore,
      'no bindingCalled: the script is not in the new document',
    )
    t.equal((await ofType('interaction_click')).length, 2)

    // network off, page on again: Network.disable; page events go on (settle rules need Page only).
    const requestsBefore = relay.count('Network.requestWillBeSent', sid)
    await patch({ network: false, page: true })
    t.equal(relay.sent('Network.disable', sid).length, 1)
    const loadsBefore = (await ofType('page_load')).length
    const settledBefore = (await ofType('page_navigation_settled')).length
    await navigate()
    await log('four') // stays in Chromium's console storage of this document: Runtime.enable would replay it
    await marker()
    t.equal(
      relay.count('Network.requestWillBeSent', sid),
      requestsBefore,
      'no Network events reach the daemon with network off',
    )
    await waitFor(
      async () =>
        (await ofType('page_load')).length === loadsBefore + 1 &&
        (await ofType('page_navigation_settled')).length > settledBefore,
      10_000,
      'page events go on',
    )

    // Everything back on: captured again, once; nothing emitted while off is replayed.
    await patch({ console: true, interaction: true, network: true })
    t.equal(relay.sent('Runtime.enable', sid).length, 2, 'Runtime enabled again (once at attach, once with page)')
    t.equal(relay.sent('Runtime.addBinding', sid).length, 4, 'two at attach, vitals with page, interaction now')
    t.equal(relay.sent('Page.addScriptToEvaluateOnNewDocument', sid).length, 4)
    await log('five')
    await click()
    await waitFor(
      async () => (await consoleTexts()).includes('five') && (await ofType('interaction_click')).length === 3,
      10_000,
      'captured again',
    )
    await navigate()
    await click()
    await waitFor(
      async () => (await ofType('interaction_click')).length === 4,
      10_000,
      'the script runs in new documents again',
    )
    t.same(await consoleTexts(), ['one', 'five'], 'console history replayed by Runtime.enable is not captured')
    const responses = (await ofType('network_response')).map(e => e.event.data.url)
    t.ok(
      responses.some(u => String(u).endsWith('/data.json')),
      'network captured again',
    )

    // One session all along: no reattach, nav_seq kept counting.
    t.equal(monitor.targets().find(x => x.targetId === targetId)?.sessionId, sid, 'same session')
    t.equal(
      relay.sent('Target.attachToTarget').length + relay.sent('Target.detachFromTarget').length,
      attachesBefore,
      'no attach or detach',
    )
    // Workers are auto-attached for console or network only: the filter changed twice (both off, then on).
    t.same(
      relay
        .sent('Target.setAutoAttach', sid)
        .slice(autoAttachBefore)
        .map(c => c.params),
      [
        autoAttachParams(capturePlan(['page'], CAPTURE_NEEDS)),
        autoAttachParams(capturePlan(['console'], CAPTURE_NEEDS)),
      ],
    )
    t.equal(navSeqNow(), navSeq0 + navs - 1, 'nav_seq counted every navigation')
  },
)
