// Every tab from its first navigation, against real Chromium: tabs created with a URL by another
// CDP client (50 at once), window.open and target=_blank popups each get page_navigation, then
// page_dom_content_loaded, then page_load for their first document, with its real loader id
// (a target=_blank tab too, though the daemon's setup bound is an hour: it is never waited for); blank tabs
// another client creates and navigates at once to another site get their document whole;
// Playwright driving the same browser through the CDP proxy (it pauses new targets too) still works.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { pino } from 'pino'
import { chromium } from 'playwright-core'
import { startServer, waitFor } from './helpers/http.js'
import { startCollecting, type Recorded } from './helpers/collector-harness.js'
import { createPageCollector } from '../collectors/page.js'
import { createConsoleCollector } from '../collectors/console.js'
import { createNetworkCollector } from '../collectors/network.js'
import { createInteractionCollector } from '../collectors/interaction.js'
import { CdpProxy } from '../src/proxy/cdp-proxy.js'
import { fakeAccepted } from './helpers/store.js'

const TABS = 50
const BLANK_TABS = 10

t.test('first navigation of every tab, however it was opened; Playwright through the proxy unchanged', async t => {
  const server = await startServer(t, {
    '/opener': `<title>opener</title><a id="blank" href="/blank" target="_blank">new tab</a>`,
    '/popup': '<title>popup</title><p>popup</p>',
    '/blank': '<title>blank</title><p>target=_blank</p>',
    '/pw':
      '<title>pw</title><p id="p">playwright</p><button id="b" onclick="this.textContent = \'clicked\'">click</button>',
  })
  for (let i = 0; i < TABS; i++)
    server.route(`/tab${i}`, `<title>tab ${i}</title><p>tab ${i}</p><script>console.log('tab ${i}')</script>`)
  const warnings: string[] = []
  const logger = pino(
    { level: 'warn' },
    {
      write: (line: string) => {
        const { msg, err } = JSON.parse(line) as { msg: string; err?: { message: string } }
        warnings.push(err ? `${msg}: ${err.message}` : msg)
      },
    },
  )
  // The daemon's own collector set (screenshot aside), so setup does what the daemon's does.
  const h = await startCollecting(
    t,
    [createConsoleCollector(), createNetworkCollector(), createPageCollector(), createInteractionCollector()],
    // Setup bounds far beyond the test's timeout: a tab resumed only once its setup answered or
    // timed out (a noopener tab answers nothing until resumed) would never load here.
    { logger, attachTimeoutMs: 3_600_000 },
  )

  /** Asserts page_navigation < DCL < load for the first document at url of target id; returns the navigation. */
  const firstDocument = (targetId: string, url: string, what: string) => {
    const mine = h.events.filter(e => (e.data as { target_id?: string }).target_id === targetId)
    const navs = mine.filter(
      (e): e is Recorded<'page_navigation'> =>
        e.type === 'page_navigation' && !(e.data as { parent_frame_id?: string }).parent_frame_id,
    )
    const nav = navs.find(e => e.data.url === url)
    const dcl = mine.find(e => e.type === 'page_dom_content_loaded')
    const load = mine.find(e => e.type === 'page_load')
    const ok =
      nav !== undefined &&
      dcl !== undefined &&
      load !== undefined &&
      nav.seq < dcl.seq &&
      dcl.seq < load.seq &&
      navs.length === 1 &&
      typeof nav.data.loader_id === 'string' &&
      (dcl.data as { loader_id?: string; nav_seq?: number }).loader_id === nav.data.loader_id &&
      (load.data as { loader_id?: string; nav_seq?: number }).nav_seq === 1 &&
      mine.filter(e => e.type === 'page_dom_content_loaded').length === 1 &&
      mine.filter(e => e.type === 'page_load').length === 1
    if (!ok) t.comment(`${what}: ${mine.map(e => `${e.type}#${e.seq}`).join(' ')}`)
    return ok
  }

  await t.test(`${TABS} tabs created with a URL by another client at once`, async t => {
    const other = await CDP({ target: h.browser.wsUrl, local: true })
    t.teardown(() => other.close())
    const created = await Promise.all(
      Array.from(
        { length: TABS },
        (_, i) => other.send('Target.createTarget', { url: `${server.url}tab${i}` }) as Promise<{ targetId: string }>,
      ),
    )
    const ids = created.map(c => c.targetId)
    await waitFor(
      () => ids.every(id => h.ofType('page_load', e => e.data.target_id === id).length > 0),
      120_000,
      `page_load of ${TABS} tabs`,
    )
    const good = ids.filter((id, i) => firstDocument(id, `${server.url}tab${i}`, `tab${i}`)).length
    t.equal(good, TABS, `${good}/${TABS} tabs: one page_navigation (real loader id), then DCL, then load, nav_seq 1`)
    // Their console output carries the first navigation's context too.
    const logs = h.ofType('console_log', e => /^tab \d+$/.test(e.data.text))
    t.equal(logs.length, TABS, 'one console_log per tab')
    t.ok(
      logs.every(e => e.data.nav_seq === 1),
      'console output in nav_seq 1',
    )
    t.same(
      warnings.filter(w => /setup incomplete/.test(w)),
      [],
      'no collector setup cut short',
    )
    await Promise.all(ids.map(targetId => other.send('Target.closeTarget', { targetId })))
  })

  await t.test(`${BLANK_TABS} blank tabs another client creates and navigates at once, cross-site`, async t => {
    // The client navigates before the daemon's Page.enable / Network.enable could be answered; the
    // document commits in a new renderer. Every tab still gets its document's response (with its
    // body), one page_navigation and network_idle.
    const other = await CDP({ target: h.browser.wsUrl, local: true })
    t.teardown(() => other.close())
    const crossSite = `http://localhost:${server.port}/`
    const ids = await Promise.all(
      Array.from({ length: BLANK_TABS }, async (_, i) => {
        const { targetId } = (await other.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string }
        const { sessionId } = (await other.send('Target.attachToTarget', { targetId, flatten: true })) as {
          sessionId: string
        }
        await other.send('Page.navigate', { url: `${crossSite}tab${i}` }, sessionId)
        return targetId
      }),
    )
    await waitFor(
      () => ids.every(id => h.ofType('network_idle', e => e.data.target_id === id && e.data.nav_seq === 1).length > 0),
      30_000,
      `network_idle of ${BLANK_TABS} tabs`,
    ).catch((err: Error) => {
      for (const id of ids)
        t.comment(
          `${id}: ${h.events
            .filter(e => (e.data as { target_id?: string }).target_id === id)
            .map(e => e.type)
            .join(' ')}`,
        )
      throw err
    })
    const bodies = ids.map(
      (id, i) =>
        h.ofType('network_response', e => e.data.target_id === id && e.data.url === `${crossSite}tab${i}`)[0]?.data
          .body,
    )
    t.same(
      bodies,
      ids.map((_, i) => `<title>tab ${i}</title><p>tab ${i}</p><script>console.log('tab ${i}')</script>`),
      'every document response, with its body',
    )
    t.same(
      ids.map(id => h.ofType('page_navigation', e => e.data.target_id === id).map(e => e.data.url)),
      ids.map((_, i) => [`${crossSite}tab${i}`]),
      'one page_navigation per tab, to its document',
    )
    await Promise.all(ids.map(targetId => other.send('Target.closeTarget', { targetId })))
  })

  await t.test('window.open and target=_blank', async t => {
    const opener = await h.openTab(`${server.url}opener`)
    await waitFor(() => h.ofType('page_load', e => e.data.target_id === opener.targetId)[0], 10000, 'opener load')
    await opener.send('Runtime.evaluate', { expression: `window.open('/popup'); 1`, userGesture: true })
    const popup = await h.waitEvent('page_tab_opened', e => e.data.opener_id === opener.targetId)
    await opener.send('Runtime.evaluate', { expression: `document.getElementById('blank').click()`, userGesture: true })
    const blank = await h.waitEvent(
      'page_tab_opened',
      e => e.data.opener_id === opener.targetId && e.data.target_id !== popup.data.target_id,
    )
    for (const [opened, path] of [
      [popup, 'popup'],
      [blank, 'blank'],
    ] as const) {
      await h
        .waitEvent('page_load', e => e.data.target_id === opened.data.target_id)
        .catch((err: Error) => {
          t.comment(
            `${path}: ${h.events
              .filter(e => (e.data as { target_id?: string }).target_id === opened.data.target_id)
              .map(e => `${e.type}:${(e.data as { url?: string }).url}`)
              .join(' ')}`,
          )
          throw err
        })
      t.ok(
        firstDocument(opened.data.target_id, `${server.url}${path}`, path),
        `${path}: page_navigation, DCL, load in order`,
      )
    }
  })

  await t.test(
    'Playwright through the proxy: page actions unchanged, its tabs seen from their first navigation',
    async t => {
      const proxy = new CdpProxy({
        listen: { host: '127.0.0.1', port: 0 },
        upstream: () => h.browser.wsUrl,
        emit: fakeAccepted,
      })
      const { port } = await proxy.start()
      t.teardown(() => proxy.close())
      const pw = await chromium.connectOverCDP(`http://127.0.0.1:${port}`)
      t.teardown(() => pw.close())
      const context = pw.contexts()[0]!
      const page = await context.newPage()
      await page.goto(`${server.url}pw`)
      t.equal(await page.title(), 'pw')
      t.equal(await page.textContent('#p'), 'playwright')
      await page.click('#b')
      t.equal(await page.textContent('#b'), 'clicked')
      const [popup] = await Promise.all([
        page.waitForEvent('popup'),
        page.evaluate(() => {
          window.open('/popup')
        }),
      ])
      await popup.waitForLoadState('load')
      t.equal(await popup.title(), 'popup')
      const targetIdOf = async (p: typeof page) => {
        const cdp = await context.newCDPSession(p)
        const { targetInfo } = await cdp.send('Target.getTargetInfo')
        await cdp.detach()
        return targetInfo.targetId
      }
      for (const [p, path] of [
        [page, 'pw'],
        [popup, 'popup'],
      ] as const) {
        const id = await targetIdOf(p)
        await h.waitEvent('page_load', e => e.data.target_id === id)
        t.ok(
          firstDocument(id, `${server.url}${path}`, `playwright ${path}`),
          `the daemon saw Playwright's ${path} tab from its first navigation`,
        )
      }
      await popup.close()
      await page.close()
    },
  )
})
