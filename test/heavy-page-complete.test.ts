// Real activity at normal-site rates is never shed or capped. The heavy page
// (test/helpers/heavy-page.ts) loaded 5 times back to back in one tab (one target, so the page cap
// adds up across loads) against the compiled daemon with its default shedding: every request,
// response and console line of every load is stored, no drop, no seq gap. Needs dist/ (npm test
// builds it first).
import t from 'tap'
import { HEAVY, heavyHandler } from './helpers/heavy-page.js'
import { consoleMarker, runHostileCase } from './helpers/hostile.js'
import { waitFor } from './helpers/http.js'

const LOADS = 5
const PER_LOAD = 1 + HEAVY.stylesheets + HEAVY.scripts + HEAVY.images + HEAVY.fetches

t.setTimeout(300_000)

t.test(`heavy page loaded ${LOADS} times in one tab: complete with the default shedding`, async t => {
  const pages: Record<string, typeof heavyHandler | string> = {
    '/heavy.html': heavyHandler,
    '/done': '<!doctype html><script>console.log("heavy-done")</script>',
  }
  for (let i = 0; i < HEAVY.stylesheets; i++) pages[`/css/${i}.css`] = heavyHandler
  for (let i = 0; i < HEAVY.scripts; i++) pages[`/js/${i}.js`] = heavyHandler
  for (let i = 0; i < HEAVY.images; i++) pages[`/img/${i}.png`] = heavyHandler
  for (let i = 0; i < HEAVY.fetches; i++) pages[`/data/${i}.json`] = heavyHandler

  const requests = new Map<string, number>()
  const responses = new Map<string, number>()
  let consoleLines = 0
  const load = (url: string) => /[?&]n=(\d+)/.exec(url)?.[1]
  const r = await runHostileCase(t, {
    name: 'heavy page',
    pages,
    async run(ctx) {
      const tab = await ctx.openWatchedTab('about:blank')
      await tab.Network.enable({})
      await tab.Page.enable()
      // A load is over once the page's load event fired and its 30 fetches finished loading (bodies
      // included: navigating away after only their headers would cancel them, and the daemon would
      // rightly store network_loading_failed instead of network_response).
      const fetched = new Map<string, number>()
      const fetchLoad = new Map<string, string>()
      tab.on('Network.responseReceived', (p: { requestId: string; response: { url: string } }) => {
        const n = load(p.response.url)
        if (n && p.response.url.includes('/data/')) fetchLoad.set(p.requestId, n)
      })
      tab.on('Network.loadingFinished', (p: { requestId: string }) => {
        const n = fetchLoad.get(p.requestId)
        if (n) fetched.set(n, (fetched.get(n) ?? 0) + 1)
      })
      for (let n = 1; n <= LOADS; n++) {
        const loaded = tab.Page.loadEventFired()
        await tab.Page.navigate({ url: `${ctx.site.origin}/heavy.html?n=${n}` })
        await loaded
        await waitFor(() => fetched.get(String(n)) === HEAVY.fetches, 30_000, `load ${n}: the page's fetches`)
      }
      await tab.Page.navigate({ url: `${ctx.site.origin}/done` })
      await consoleMarker(ctx, 'heavy-done')
    },
    inspect({ event }) {
      const url = String(event.data.url ?? '')
      if (event.type === 'network_request' && load(url)) requests.set(load(url)!, (requests.get(load(url)!) ?? 0) + 1)
      if (event.type === 'network_response' && load(url))
        responses.set(load(url)!, (responses.get(load(url)!) ?? 0) + 1)
      if (event.type === 'console_log' && event.data.text !== 'heavy-done') consoleLines++
    },
  })
  t.comment(
    JSON.stringify({
      elapsedMs: Math.round(r.elapsedMs),
      stored: r.stored,
      lastSeq: r.lastSeq,
      storedByType: r.storedByType,
      metrics: r.metrics,
    }),
  )
  t.equal(r.metrics.overBudget, 0, 'nothing over a cap')
  t.equal(r.metrics.shed, 0, 'nothing shed')
  t.equal(r.missing, 0, 'no seq gap')
  t.equal(r.metrics.storeDropped, 0)
  for (let n = 1; n <= LOADS; n++) {
    t.equal(requests.get(String(n)), PER_LOAD, `load ${n}: every request stored`)
    t.equal(responses.get(String(n)), PER_LOAD, `load ${n}: every response stored`)
  }
  t.equal(consoleLines, LOADS * HEAVY.consoleLines, 'every console line of every load stored')
})
