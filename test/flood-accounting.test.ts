// Exact accounting against a real Chromium and the compiled daemon: every event a flooding page
// makes is stored or is a missing seq, never neither (stored + missing seqs == sent, exactly), for
// a console flood, a network flood and both at once; and a quiet page next to a flooding one loses
// nothing. Tabs are opened with their URL by another CDP client, as a user's tool would.
// Needs dist/ (npm test builds it first).
import t from 'tap'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { metricSum, runHostileCase, TOKEN, type CaseContext } from './helpers/hostile.js'
import { waitFor } from './helpers/http.js'

t.setTimeout(600_000)

const html = (body: string) => `<!doctype html><meta charset="utf-8"><title>flood</title><body>${body}</body>`

/** The page logs `flood <i>` lines for ms, in bursts of 5,000 per task, then reports the count. */
const consoleFlood = (ms: number, tag = '') => `
  const endC = performance.now() + ${ms}
  let c = 0
  function burstC() {
    const stop = c + 5000
    for (; c < stop; c++) console.log('flood${tag}', c)
    if (performance.now() < endC) setTimeout(burstC, 0); else fetch('/done?kind=console&n=' + c).then(() => console.log('flood-done'))
  }
  burstC()`

/** The page fetches /r/<i> with 64 in flight for ms, then reports how many it started. */
const networkFlood = (ms: number) => `
  const endN = performance.now() + ${ms}
  let started = 0, running = 0
  function one() {
    if (performance.now() >= endN) { if (running === 0) fetch('/done?kind=network&n=' + started).then(() => console.log('flood-done')); return }
    const i = started++
    running++
    fetch('/r/' + i).then(r => r.text()).catch(() => {}).finally(() => { running--; one() })
  }
  for (let k = 0; k < 64; k++) one()`

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

/** Waits until the daemon stored n `flood-done` lines (each logged once its flood was reported). */
async function doneStored(ctx: CaseContext, n: number): Promise<void> {
  await waitFor(
    async () => {
      await new Promise(r => setTimeout(r, 200))
      const evs = await ctx.events('category=console&order=desc&limit=5')
      return evs.filter(e => e.event.data.text === 'flood-done').length >= n
    },
    120_000,
    'flood-done stored',
  )
}

const cases: { name: string; script: string; kinds: (keyof Sent)[] }[] = [
  { name: 'console flood (3 s)', script: consoleFlood(3000), kinds: ['console'] },
  { name: 'network flood (3 s)', script: networkFlood(3000), kinds: ['network'] },
  {
    name: 'console and network flood at once (3 s)',
    script: consoleFlood(3000) + networkFlood(3000),
    kinds: ['console', 'network'],
  },
]

for (const c of cases) {
  t.test(c.name, async t => {
    const sent: Sent = {}
    let storedConsole = 0
    let storedRequests = 0
    let storedResponses = 0
    // Which flood lines were stored, by their counter: a failure names the duplicated or unusual ones.
    const floodCounters = new Map<string, number>()
    const r = await runHostileCase(t, {
      name: c.name,
      pages: site(c.script, sent),
      async run(ctx) {
        await ctx.openTab(ctx.site.url)
        await waitFor(() => c.kinds.every(k => sent[k] !== undefined), 120_000, 'the page to report what it sent')
        await doneStored(ctx, c.kinds.length)
      },
      inspect({ event }) {
        if (event.type === 'console_log' && event.data.text === 'flood') {
          storedConsole++
          const c = String((event.data.args as string[] | undefined)?.[1] ?? '?')
          floodCounters.set(c, (floodCounters.get(c) ?? 0) + 1)
        }
        const url = String(event.data.url ?? '')
        if (/\/r\/\d+$/.test(url)) {
          if (event.type === 'network_request') storedRequests++
          else if (event.type === 'network_response') storedResponses++
        }
      },
    })
    const dropped = r.metrics.shed + r.metrics.overBudget
    const repeated = [...floodCounters].filter(([, n]) => n > 1).slice(0, 10)
    if (repeated.length > 0)
      t.comment(`flood lines stored more than once (counter, times): ${JSON.stringify(repeated)}`)
    t.comment(
      JSON.stringify({ sent, storedConsole, storedRequests, storedResponses, missing: r.missing, metrics: r.metrics }),
    )
    // Each /r/<i> is one network_request and one network_response.
    const expected = (sent.console ?? 0) + 2 * (sent.network ?? 0)
    t.ok(expected > 0, `the page sent ${expected} events' worth`)
    t.equal(storedConsole + storedRequests + storedResponses + r.missing, expected, 'stored + missing seqs == sent')
    t.equal(r.missing, dropped, 'every missing seq is a counted drop')
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
  // when the backlog has not drained yet.
  t.equal(floodStored + floodDoneStored + r.missing, sent.console! + 1, 'flood: stored + missing seqs == sent')
  t.equal(r.missing, r.metrics.shed + r.metrics.overBudget, 'every missing seq is a counted drop')
})
