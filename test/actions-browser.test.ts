// Actions of a real recording: the daemon (in process) launches headless Chromium and its CDP proxy
// records Playwright driving a page it serves: goto, click a button that logs a console error and
// fetches a missing resource, fill an input, press Enter, goto another page. The actions derived
// from the stored log must say exactly that.
import t from 'tap'
import { deriveActions, PREP_GAP_US } from '../src/actions/index.js'
import type { EventData } from '../src/events/index.js'
import { driveThroughProxy, startTestDaemon } from './helpers/agent-driver.js'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(150_000)

// An inline icon: Chromium asks for no /favicon.ico, whose request would land in whichever action's
// window it happened to fall (after the first navigation settled, under load: the click's).
const ICON = '<link rel="icon" href="data:,">'
const SHOP = `<!doctype html><title>shop</title>${ICON}<body>
<button id="buy" onclick="console.error('buy failed'); fetch('/missing').then(r => { document.title = 'fetched ' + r.status })">Buy</button>
<input id="email" autocomplete="off">
</body>`

t.test('goto, click, fill, press, goto: the derived actions of the stored log', async t => {
  const site = await startServer(t, {
    '/': SHOP,
    '/done': `<!doctype html><title>done</title>${ICON}<p>done</p>`,
    '/favicon.ico': (_req, res) => {
      res.writeHead(204)
      res.end()
    },
  })
  const dir = await tempDir(t)
  const { d, stored } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0'],
  ])
  const { pw, page, startStep, endStep } = await driveThroughProxy(d)
  // The whole script is one agent step, marked over the client's own CDP socket.
  const stepId = await startStep('shop')
  await page.goto(site.url)
  await page.click('#buy')
  const clickedAt = performance.now()
  // The fetch answers after the click returned: wait (here, not with a script in the page, which
  // would be an action of its own) for its response to be stored, so the next action starts after
  // it (the click's effects window ends where the next action starts).
  await waitFor(
    async () => (await stored()).some(e => e.event.type === 'network_response' && e.event.data.status === 404),
    20_000,
    'the 404 stored',
  )
  // The agent thinks before its next action, longer than PREP_GAP_US: the click's trailing checks
  // and the fill's leading ones are then two runs. Closer together they are one run, cut at its
  // longest pause, and on a loaded machine Playwright's own pauses can be longer than the agent's.
  const thinkMs = PREP_GAP_US / 1000 + 200 - (performance.now() - clickedAt)
  if (thinkMs > 0) await new Promise(r => setTimeout(r, thinkMs))
  await page.fill('#email', 'me@shop.test')
  await page.press('#email', 'Enter')
  await page.goto(`${site.url}done`)
  await endStep(stepId)
  await pw.close()
  await waitFor(async () => (await stored()).some(e => e.event.type === 'cdp_disconnect'), 20_000, 'the disconnect')

  const envelopes = await stored()
  const commands = envelopes.flatMap(e => (e.event.type === 'cdp_command' ? [e.event.data] : []))
  const navigate = commands.find(c => c.method === 'Page.navigate') as EventData<'cdp_command'>
  t.ok(navigate?.target_id, 'the page commands carry their target')
  const actions = deriveActions(envelopes)
  const mine = actions.filter(a => a.target_id === navigate.target_id)
  const bySeq = new Map(envelopes.map(e => [e.seq, e]))
  const show = mine
    .map(a => {
      const cmds = a.command_seqs.map(seq => {
        const e = bySeq.get(seq)!
        const c = e.event.data as EventData<'cdp_command'>
        return `    ${e.event.ts} ${c.method}${c.input_type ? ` ${c.input_type}` : ''} ${c.duration_ms.toFixed(1)} ms`
      })
      return `${a.kind}: ${a.title} [${a.command_seqs.length}]${a.kind === 'setup' ? '' : `\n${cmds.join('\n')}`}`
    })
    .join('\n')
  t.same(
    mine.map(a => a.kind),
    ['setup', 'navigate', 'click', 'type', 'press', 'navigate'],
    `the page's actions in order:\n${show}`,
  )
  t.same(
    mine.slice(1).map(a => a.title),
    ['go to /', 'click #buy', 'type 12 characters into #email', 'press Enter', 'go to /done'],
  )
  t.same(
    mine.slice(1).map(a => a.step_id),
    mine.slice(1).map(() => stepId),
    'every action of the script is in its step',
  )
  const click = mine[2]!
  const missing = envelopes.find(e => e.event.type === 'network_response' && e.event.data.status === 404)!
  t.ok(
    mine[3]!.start_ts > missing.event.ts,
    "Playwright's checks after the click stay with it: the fill starts after the 404 came back",
  )
  t.ok(click.effects.console_errors >= 1, `the click's console errors: ${click.effects.console_errors}`)
  t.equal(click.effects.failed_requests, 1, 'the missing resource is the one failed request')
  t.equal(click.effects.requests, 1, 'one request: the fetch')
  t.equal(click.outcome, 'ok')
  t.ok(
    click.command_seqs.some(s => {
      const c = envelopes.find(e => e.seq === s)!.event.data as EventData<'cdp_command'>
      return c.method === 'Runtime.callFunctionOn' || c.method.startsWith('DOM.')
    }),
    "the click holds Playwright's actionability checks",
  )
  t.same(
    [mine[1]!.effects.navigations, mine[5]!.effects.navigations],
    [1, 1],
    'each navigate caused one main-frame navigation',
  )
  for (const a of mine.slice(1))
    t.ok(a.end_ts >= a.start_ts && a.start_ts >= mine[0]!.start_ts, `${a.title}: times in order`)
  const browserLevel = actions.filter(a => a.target_id === undefined)
  t.same(
    browserLevel.map(a => a.kind),
    ['setup'],
    'what Playwright sent to the browser itself is one setup action',
  )
  t.notOk(JSON.stringify(actions).includes('me@shop.test'), 'the typed text appears nowhere')
})
