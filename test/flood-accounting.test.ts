// Exact accounting against a real Chromium and the compiled daemon: every event a flooding page
// makes is stored or is a counted drop (a missing seq), never neither, per kind of event (stored +
// dropped == sent, exactly), for a console flood, a network flood and both at once; and a quiet page
// next to a flooding one loses nothing. Tabs are opened with their URL by another CDP client, as a user's tool would.
// Needs dist/ (npm test builds it first).
import t from 'tap'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { metricSum, runHostileCase, TOKEN, type CaseContext } from './helpers/hostile.js'
import { waitFor } from './helpers/http.js'

t.setTimeout(600_000)

const html = (body: string) => `<!doctype html><meta charset="utf-8"><title>flood</title><body>${body}</body>`

/** The page logs `flood <i>` lines for ms, in bursts of 5,000 per task, then reports the count. */
const consoleFlood = (ms: number) => `
  const endC = performance.now() + ${ms}
  let c = 0
  function burstC() {
    const stop = c + 5000
    for (; c < stop; c++) console.log('flood', c)
    if (performance.now() < endC) setTimeout(burstC, 0); else fetch('/done?kind=console&n=' + c).then(() => console.log('flood-done'))
  }
  burstC()`

/**
 * A page that floods only when the test calls flood(): a console flood (`flood <i>` lines in bursts
 * of 5,000 per task) and/or a network flood (fetches of /r/<i>, 64 in flight), each for ms. flood()
 * resolves with what the page sent; it reports through the caller's CDP client, so the page makes
 * no event of its own after the flood (no end marker, no report fetch). The favicon is a data: URL:
 * no request of the browser's own in the page's network either.
 */
const floodPage = (ms: number, kinds: (keyof Sent)[]) =>
  html(`<link rel="icon" href="data:,"><script>
  function consoleFlood() {
    return new Promise(done => {
      const end = performance.now() + ${ms}
      let c = 0
      function burst() {
        const stop = c + 5000
        for (; c < stop; c++) console.log('flood', c)
        if (performance.now() < end) setTimeout(burst, 0); else done(c)
      }
      burst()
    })
  }
  function networkFlood() {
    return new Promise(done => {
      const end = performance.now() + ${ms}
      let started = 0, running = 0
      function one() {
        if (performance.now() >= end) { if (running === 0) done(started); return }
        const i = started++
        running++
        fetch('/r/' + i).then(r => r.text()).catch(() => {}).finally(() => { running--; one() })
      }
      for (let k = 0; k < 64; k++) one()
    })
  }
  async function flood() {
    const [lines, fetches] = await Promise.all([
      ${kinds.includes('console') ? 'consoleFlood()' : 'undefined'},
      ${kinds.includes('network') ? 'networkFlood()' : 'undefined'},
    ])
    return { console: lines, network: fetches }
  }
</script>`)

interface Sent {
  console?: number
  network?: number
  quiet?: number
}

function site(script: string, sent: Sent): Record<string, string | ((q: IncomingMessage, r: ServerResponse) => void)> {
  return {
    '/': html(`<script>${script}</script>`),
    '/r': (_q, r) => {
      r.writeHead(200, { 'content-type': 'text/plain' })
      r.end('r')
    },
    '/done': (q, r) => {
      const u = new URL(q.url!, 'http://x')
      sent[u.searchParams.get('kind') as keyof Sent] = Number(u.searchParams.get('n'))
      r.writeHead(200, { 'content-type': 'text/plain' })
      r.end('ok')
    },
  }
}

type Kind = 'console' | 'network'

/** Stored and dropped so far per category, from the daemon's counters. */
async function handledByCategory(ctx: CaseContext): Promise<Record<Kind, { stored: number; dropped: number }>> {
  const text = await (await fetch(`${ctx.daemonUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  // Shed or over a cap: the drops that consume a seq (an invalid event would be a bug, and unaccounted).
  const dropped = (k: Kind, reason: string) =>
    metricSum(text, 'browser_telemetry_events_dropped_total', `category="${k}",reason="${reason}"`)
  const of = (k: Kind) => ({
    stored: metricSum(text, 'browser_telemetry_events_stored_total', `category="${k}"`),
    dropped: dropped(k, 'shed') + dropped(k, 'over_budget'),
  })
  return { console: of('console'), network: of('network') }
}

/** A flood line of the page, or a /r/<i> request's network event: the flood's own events. */
function floodKind(event: { type: string; data: Record<string, unknown> }): Kind | undefined {
  if (event.type === 'console_log' && event.data.text === 'flood') return 'console'
  if (/^network_(request|response|loading_failed)$/.test(event.type) && /\/r\/\d+$/.test(String(event.data.url ?? '')))
    return 'network'
  return undefined
}

const cases: { name: string; kinds: Kind[] }[] = [
  { name: 'console flood (3 s)', kinds: ['console'] },
  { name: 'network flood (3 s)', kinds: ['network'] },
  { name: 'console and network flood at once (3 s)', kinds: ['console', 'network'] },
]

for (const c of cases) {
  t.test(c.name, async t => {
    let sent: Partial<Record<Kind, number>> = {}
    let before: Awaited<ReturnType<typeof handledByCategory>> | undefined
    let after: Awaited<ReturnType<typeof handledByCategory>> | undefined
    const stored: Record<Kind, { flood: number; other: number }> = {
      console: { flood: 0, other: 0 },
      network: { flood: 0, other: 0 },
    }
    // Which flood lines were stored, by their counter: a failure names the duplicated or unusual ones.
    const floodCounters = new Map<string, number>()
    // The other events of the flooded categories, for a failure's comment.
    const others: string[] = []
    const r = await runHostileCase(t, {
      name: c.name,
      // The smallest backlog bound, so the flood is shed and the drops are part of the account.
      daemonArgs: ['--shed-backlog-bytes', '1MiB'],
      pages: {
        '/': floodPage(3000, c.kinds),
        '/r': (_q, r) => {
          r.writeHead(200, { 'content-type': 'text/plain' })
          r.end('r')
        },
      },
      async run(ctx) {
        const tab = await ctx.openTab(ctx.site.url)
        // The load's network (the document, the favicon) is over and the page's network_idle, reported
        // once per navigation, is stored: nothing of the load comes later.
        await waitFor(
          async () =>
            (await ctx.events('category=network&order=desc&limit=50')).some(
              e => e.event.type === 'network_idle' && e.event.data.url === ctx.site.url,
            ),
          60_000,
          'the page load reported network_idle',
        )
        before = await handledByCategory(ctx)
        const res = await tab.Runtime.evaluate({ expression: 'flood()', awaitPromise: true, returnByValue: true })
        if (res.exceptionDetails) throw new Error(`flood(): ${JSON.stringify(res.exceptionDetails)}`)
        sent = res.result.value as typeof sent
        // Each /r/<i> is one network_request and one network_response (or network_loading_failed).
        const expected = (k: Kind) => (k === 'console' ? sent.console! : 2 * sent.network!)
        // Every flood event stored or dropped: counted by the daemon as it handles them.
        await waitFor(
          async () => {
            await new Promise(r => setTimeout(r, 200)) // a gentle poll: the reader must not be the load
            after = await handledByCategory(ctx)
            return c.kinds.every(
              k => after![k].stored + after![k].dropped - (before![k].stored + before![k].dropped) >= expected(k),
            )
          },
          120_000,
          'every flood event handled',
        )
      },
      inspect({ seq, event }) {
        const k = floodKind(event)
        if (k) {
          stored[k].flood++
          if (k === 'console') {
            const n = String((event.data.args as string[] | undefined)?.[1] ?? '?')
            floodCounters.set(n, (floodCounters.get(n) ?? 0) + 1)
          }
        } else {
          const cat = (event as { category?: string }).category
          if (cat === 'console' || cat === 'network') {
            stored[cat].other++
            others.push(`${seq} ${event.type} ${String(event.data.url ?? '')} ${String(event.data.target_id ?? '')}`)
          }
        }
      },
    })
    const repeated = [...floodCounters].filter(([, n]) => n > 1).slice(0, 10)
    if (repeated.length > 0)
      t.comment(`flood lines stored more than once (counter, times): ${JSON.stringify(repeated)}`)
    t.comment(JSON.stringify({ sent, before, after, stored, others, missing: r.missing, metrics: r.metrics }))
    // Drops are counted per category, not per event: they are the flood's own, exactly, because the
    // category had none before the flood (asserted) and from flood() on the page makes no event of the
    // flooded category but the flood's (see floodPage; the stored side is checked too: as many other
    // events of the category stored at the end as before the flood).
    for (const k of c.kinds) {
      const want = k === 'console' ? sent.console! : 2 * sent.network!
      t.ok(want > 0, `${k}: the page sent ${want} events' worth`)
      t.equal(before![k].dropped, 0, `${k}: nothing dropped before the flood`)
      t.equal(stored[k].other, before![k].stored, `${k}: no other event of the category stored since the flood began`)
      t.equal(stored[k].flood + after![k].dropped, want, `${k}: stored + dropped == sent`)
    }
    t.equal(r.missing, r.metrics.shed + r.metrics.overBudget, 'every missing seq is a counted drop')
    t.equal(r.metrics.storeDropped, 0)
  })
}

t.test('a quiet page next to a flooding page loses nothing (shedding at its smallest backlog bound)', async t => {
  const sent: Sent = {}
  let quietStored = 0
  let floodStored = 0
  let floodDoneStored = 0
  const pages = site(consoleFlood(3000), sent)
  pages['/quiet'] = html(`<script>
    let q = 0
    const timer = setInterval(() => {
      console.log('quiet', q++)
      if (q === 150) { clearInterval(timer); fetch('/done?kind=quiet&n=' + q) }
    }, 20)
  </script>`)
  const r = await runHostileCase(t, {
    name: 'quiet next to flood',
    pages,
    // The smallest backlog bound: the flood is shed whenever the store falls 1 MiB behind.
    daemonArgs: ['--shed-backlog-bytes', '1MiB'],
    async run(ctx) {
      // Each in a window of its own: a background tab's timers would be throttled to one a second.
      await ctx.cdp.Target.createTarget({ url: `${ctx.site.origin}/quiet`, newWindow: true })
      await ctx.cdp.Target.createTarget({ url: ctx.site.url, newWindow: true })
      await waitFor(() => sent.console !== undefined && sent.quiet !== undefined, 120_000, 'both pages to report')
      // Every console event of both pages handled: the flood's lines, the quiet ones, flood-done.
      const expected = sent.console! + sent.quiet! + 1
      let handled = 0
      await waitFor(
        async () => {
          await new Promise(r => setTimeout(r, 200))
          const text = await (
            await fetch(`${ctx.daemonUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
          ).text()
          handled =
            metricSum(text, 'browser_telemetry_events_stored_total', 'category="console"') +
            metricSum(text, 'browser_telemetry_events_dropped_total', 'category="console"')
          return handled >= expected
        },
        120_000,
        'every console event handled',
      ).catch((err: Error) => {
        // What is missing, and what the daemon said, so a failure here can be told apart from slowness.
        t.comment(JSON.stringify({ sent, expected, handled }))
        for (const line of ctx
          .logLines()
          .filter(l => !l.includes('"level":30'))
          .slice(-20))
          t.comment(line)
        throw err
      })
    },
    inspect({ event }) {
      if (event.type !== 'console_log') return
      if (event.data.text === 'quiet') quietStored++
      else if (event.data.text === 'flood') floodStored++
      else if (event.data.text === 'flood-done') floodDoneStored++
    },
  })
  t.comment(JSON.stringify({ sent, quietStored, floodStored, floodDoneStored, missing: r.missing, metrics: r.metrics }))
  t.equal(quietStored, 150, 'every line of the quiet page stored')
  // The flooding tab's console source logged its lines and then flood-done; the last may be shed too
  // when the backlog has not drained yet. Console drops are the flood tab's: the quiet page, the one
  // other console source, lost none (above).
  t.equal(
    floodStored + floodDoneStored + r.metrics.consoleDropped,
    sent.console! + 1,
    'flood: stored + dropped console events == sent',
  )
  t.equal(r.missing, r.metrics.shed + r.metrics.overBudget, 'every missing seq is a counted drop')
})
