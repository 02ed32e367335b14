// The digest of a real session, as an agent asks for it: a small shop built with esbuild (minified,
// its source map inline) in real Chromium, driven by Playwright through the daemon's proxy in agent
// steps. "Add to cart" answers 500 and the page throws; one digest call must say which step failed,
// the click, the failed request with its (redacted) body, and the error at its mapped source line.
import t from 'tap'
import { build } from 'esbuild'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(120_000)
const { driveThroughProxy, startTestDaemon } = await import('./helpers/agent-driver.js')

const TOKEN = 'digest-test-token-0123456789'
// Line 6, column 11 is where the error is made (`new TypeError`): the digest must name it.
const CART_TS = `type Cart = { items: string[] }
async function addToCart(): Promise<Cart> {
  const res = await fetch('/api/cart', { method: 'POST', body: '{"sku":"tea"}' })
  if (!res.ok) {
    const message: string = 'cart is undefined'
    throw new TypeError(message)
  }
  return (await res.json()) as Cart
}
document.getElementById('add')!.addEventListener('click', () => void addToCart())
`

t.test('one digest call says why the step failed: the click, the 500 and the mapped error line', async t => {
  const bundle = await build({
    stdin: { contents: CART_TS, sourcefile: 'src/cart.ts', loader: 'ts' },
    minify: true,
    sourcemap: 'inline',
    write: false,
    format: 'iife',
  })
  const script = bundle.outputFiles[0]!.text
  const site = await startServer(t, {
    '/shop/': `<!doctype html><html><head><title>shop</title><link rel="icon" href="data:,"></head><body>
<button id="add">Add to cart</button><script src="/dist/cart.min.js"></script></body></html>`,
    '/dist/cart.min.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end(script)
    },
    '/api/cart': (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":"out of stock","token":"s3cr3t-cart-token"}')
    },
  })
  const dir = await tempDir(t)
  const { d } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0', '--token', TOKEN],
  ])
  const { pw, page, startStep, endStep } = await driveThroughProxy(d)
  t.teardown(() => pw.close())
  const open = await startStep('open the shop')
  await page.goto(`${site.url}shop/`)
  await endStep(open)
  const add = await startStep('add to cart')
  const answered = page.waitForResponse(r => r.url().endsWith('/api/cart'))
  await page.click('#add')
  await answered
  const base = `${d.url}/browsers/${d.browserId}/telemetry`
  const auth = { authorization: `Bearer ${TOKEN}` }
  // The page's error and the answer (with its body) are stored once reported; the agent then ends
  // its step as failed.
  const stored = async (category: string, type: string, url?: string) => {
    const res = await fetch(`${base}/events?category=${category}&limit=100`, { headers: auth })
    const events = (await res.json()) as { event: { type: string; data: { url?: string } } }[]
    return events.some(e => e.event.type === type && (url === undefined || e.event.data.url === url))
  }
  await waitFor(() => stored('console', 'console_error'), 15_000, 'the error stored')
  await waitFor(() => stored('network', 'network_response', `${site.url}api/cart`), 15_000, 'the answer stored')
  await endStep(add, { outcome: 'error', errorMessage: 'the cart did not update' })
  await d.sourceMaps.settled()

  const res = await fetch(`${base}/digest?step_id=${add}`, { headers: auth })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/markdown; charset=utf-8/)
  const md = await res.text()
  const lines = md.trimEnd().split('\n')
  const time = '\\d\\d:\\d\\d:\\d\\d\\.\\d{3}'
  t.match(lines[0], /^# Session digest \d{4}-\d\d-\d\dT.* – \d{4}-\d\d-\d\dT.*Z$/)
  t.match(lines[1], new RegExp(`^\\d+ events, step ${add}; 1 step, 1 failed request, 1 console error\\.$`))
  const at = '\\S+ \\(src/cart\\.ts:6:11\\)'
  t.match(
    md,
    new RegExp(
      `\\n### ${time} step "add to cart": error in \\d+\\.\\d\\d s — the cart did not update\\n- ${time} click #add → POST /api/cart 500; console error Uncaught \\(in promise\\) TypeError: cart is undefined at ${at}\\n`,
    ),
    'the failing step: the click, the 500 and the error at its mapped line',
  )
  t.match(
    md,
    new RegExp(
      `\\n## Failed requests\\n- ${time} POST ${site.url}api/cart 500 — \\{"error":"out of stock","token":"\\[redacted:\\d+\\]"\\}\\n`,
    ),
    'the failed request with its body, the secret field masked',
  )
  t.match(
    md,
    new RegExp(`\\n## Console errors\\n- ${time} Uncaught \\(in promise\\) TypeError: cart is undefined\\n  at ${at}`),
  )
  t.notMatch(md, /s3cr3t-cart-token/, 'no secret')
  t.notMatch(md, /open the shop/, 'only the step asked for')

  const json = (await (await fetch(`${base}/digest?step_id=${add}&format=json`, { headers: auth })).json()) as {
    steps: { name: string; outcome: string; actions: { title: string; effects: { kind: string }[] }[] }[]
    failed_requests: { method: string; status: number }[]
    console_errors: { frames: string[] }[]
  }
  t.same(
    json.steps.map(s => [s.name, s.outcome, s.actions.map(a => [a.title, a.effects.map(e => e.kind)])]),
    [['add to cart', 'error', [['click #add', ['request_failed', 'console_error']]]]],
  )
  t.same(
    json.failed_requests.map(f => [f.method, f.status]),
    [['POST', 500]],
  )
  t.match(
    json.console_errors[0]!.frames[0],
    /^\S+ \(src\/cart\.ts:6:11\)$/,
    'the mapped place (the minified name: the map names none there)',
  )

  const whole = await (await fetch(`${base}/digest`, { headers: auth })).text()
  t.match(whole, /step "open the shop": ok in/, 'without step_id: every step of the window')
  const unknown = await fetch(`${base}/digest?step_id=nope`, { headers: auth })
  t.equal(unknown.status, 404)
  t.same(await unknown.json(), { code: 'not_found', message: 'no agent step "nope" in the window' })
  t.equal((await fetch(`${base}/digest`)).status, 401, 'no token: refused')
})
