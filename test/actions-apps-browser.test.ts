// Actions of real third-party apps (swagger-ui-dist, monaco-editor, pinned dev dependencies) driven
// by Playwright through the daemon's CDP proxy, in agent steps, as an agent drives them: a spec
// viewer opened while it still loads (Playwright waiting for it with script calls), one app opened
// with two different queries, a 60-character line and shortcuts typed into a code editor, 91
// characters typed in one go (past the proxy's fold threshold), a fill, and a click that times out.
// What the one actions module derives from the stored log must say exactly that.
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { deriveActions, type Action } from '../src/actions/index.js'
import type { EventData } from '../src/events/index.js'
import { STATIC_TYPES, serveFiles, startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(170_000)

// Playwright colours its call log as on a terminal (what agents' logs and this daemon get), so
// the escape codes the daemon strips are there; set before Playwright is loaded.
process.env.FORCE_COLOR = '1'
const { driveThroughProxy, startTestDaemon } = await import('./helpers/agent-driver.js')

// The packages' own files (monaco's exports map hides its package.json from resolution).
const SWAGGER = fileURLToPath(new URL('../node_modules/swagger-ui-dist/', import.meta.url))
const MONACO = fileURLToPath(new URL('../node_modules/monaco-editor/', import.meta.url))

const ICON = '<link rel="icon" href="data:,">'
// The spec's URL comes from the page's own query (as swagger's ?url= does).
const SWAGGER_PAGE = `<!doctype html><html><head><title>docs</title>${ICON}
<link rel="stylesheet" href="/swagger/swagger-ui.css"></head><body><div id="swagger-ui"></div>
<script src="/swagger/swagger-ui-bundle.js"></script>
<script>
console.error('docs: no auth configured')
window.ui = SwaggerUIBundle({ url: new URLSearchParams(location.search).get('url'), dom_id: '#swagger-ui' })
</script></body></html>`
const SPEC = JSON.stringify({
  openapi: '3.0.0',
  info: { title: 'Pets', version: '1' },
  paths: { '/pets': { get: { summary: 'list pets', responses: { 200: { description: 'ok' } } } } },
})
const MONACO_PAGE = `<!doctype html><html><head><title>editor</title>${ICON}</head><body>
<div id="editor" style="width:800px;height:300px"></div>
<script>self.MonacoEnvironment = { getWorker: () => new Worker('data:text/javascript,') }</script>
<script src="/monaco/min/vs/loader.js"></script>
<script>
require.config({ paths: { vs: '/monaco/min/vs' } })
require(['vs/editor/editor.main'], () => {
  window.editor = monaco.editor.create(document.getElementById('editor'), { value: '', language: 'javascript' })
})
</script></body></html>`
const FORM_PAGE = `<!doctype html><html><head><title>form</title>${ICON}</head><body>
<textarea id="notes" rows="4" cols="100"></textarea>
<input id="email" autocomplete="off">
<button id="save" disabled>Save</button>
</body></html>`

const LINE_60 = 'const total = items.reduce((sum, item) => sum + item.price, 0)'.slice(0, 60)
const TEXT_91 = 'The quick brown fox jumps over the lazy dog; then it naps for an hour under the old oak tree.'.slice(
  0,
  91,
)

t.test('swagger-ui, monaco and a form through the proxy: the derived actions of the stored log', async t => {
  t.equal([...LINE_60].length, 60)
  t.equal([...TEXT_91].length, 91)
  const site = await startServer(t, {
    '/swagger-mapped/': SWAGGER_PAGE,
    '/specs/pets.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(SPEC)
    },
    '/monaco/': MONACO_PAGE,
    '/form/': FORM_PAGE,
    '/swagger/*': serveFiles(SWAGGER, '/swagger', STATIC_TYPES),
    '/monaco/min/*': serveFiles(MONACO, '/monaco', STATIC_TYPES),
  })
  const dir = await tempDir(t)
  const { d, stored } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0'],
  ])
  const { pw, page, startStep, endStep } = await driveThroughProxy(d)
  const steps: Record<string, string> = {}
  const step = async (name: string, body: () => Promise<void>) => {
    const id = await startStep(name)
    steps[name] = id
    try {
      await body()
    } catch (err) {
      // As an agent reports a failed step: Playwright's own message (with its terminal colours).
      await endStep(id, { outcome: 'error', errorMessage: (err as Error).message })
      return
    }
    await endStep(id)
  }
  // The agent thinks between steps: longer than the pause that separates actions.
  const think = () => new Promise(r => setTimeout(r, 1500))

  await step('open the docs', async () => {
    // Returns at commit: Playwright then waits for the operation with script calls while the
    // page loads, logs its error and fetches its spec.
    await page.goto(`${site.url}swagger-mapped/?url=/specs/pets.json&api_key=s3cr3t`, { waitUntil: 'commit' })
    await page.waitForSelector('.opblock-summary')
  })
  await think()
  await step('open another spec', async () => {
    await page.goto(`${site.url}swagger-mapped/?url=/specs/missing.json`, { waitUntil: 'commit' })
    await page.waitForSelector('.errors-wrapper')
  })
  await think()
  await step('edit code', async () => {
    await page.goto(`${site.url}monaco/`)
    await page.waitForFunction(() => 'editor' in window)
    await page.click('.monaco-editor .view-lines')
    await page.keyboard.type(LINE_60)
    await page.keyboard.press('Control+A')
    await page.keyboard.press('Control+Space')
    await page.keyboard.press('Shift+Alt+F')
  })
  await think()
  await step('write notes', async () => {
    await page.goto(`${site.url}form/`)
    await page.click('#notes')
    await page.keyboard.type(TEXT_91)
  })
  await think()
  await step('fill the email', async () => {
    await page.fill('#email', 'me@shop.test')
  })
  await think()
  let clickError = ''
  await step('save', async () => {
    try {
      await page.click('#save', { timeout: 1500 })
    } catch (err) {
      clickError = (err as Error).message
      throw err
    }
  })
  await pw.close()
  await waitFor(async () => (await stored()).some(e => e.event.type === 'cdp_disconnect'), 20_000, 'the disconnect')

  const envelopes = await stored()
  const actions = deriveActions(envelopes).filter(a => a.kind !== 'setup')
  const bySeq = new Map(envelopes.map(e => [e.seq, e]))
  const show = (list: Action[]) =>
    list
      .map(a => {
        const cmds = a.command_seqs.map(seq => {
          const c = bySeq.get(seq)!.event.data as EventData<'cdp_command'>
          return `${c.method}${c.input_type ? ` ${c.input_type}` : ''}${c.count ? ` ×${c.count}` : ''}`
        })
        return `${a.kind}: ${a.title} [${a.step_id}] ${JSON.stringify(a.effects)}\n    ${cmds.join(', ')}`
      })
      .join('\n')
  const of = (name: string) => actions.filter(a => a.step_id === steps[name])

  // Opened while it loads: one navigate, the page's error and its spec fetch are its effects.
  const docs = of('open the docs')
  t.same(
    docs.map(a => [a.kind, a.title]),
    [['navigate', 'go to /swagger-mapped/?url=/specs/pets.json&api_key=[redacted:8]']],
    `no evaluate actions while the page loads:\n${show(docs)}`,
  )
  t.ok(docs[0]!.effects.console_errors >= 1, `the page's console error: ${docs[0]!.effects.console_errors}`)
  t.ok(docs[0]!.effects.requests >= 3, `the page, its script and its spec: ${docs[0]!.effects.requests}`)
  t.ok(docs[0]!.command_seqs.length > 1, "Playwright's waiting is part of the navigation")
  const specFetch = envelopes.find(
    e => e.event.type === 'network_request' && (e.event.data.url ?? '').endsWith('/specs/pets.json'),
  )!
  t.ok(
    specFetch.event.ts >= docs[0]!.start_ts && specFetch.event.ts < docs[0]!.effects_end_ts!,
    "the spec fetch lies in the navigation's window",
  )

  const other = of('open another spec')
  t.same(
    other.map(a => [a.kind, a.title]),
    [['navigate', 'go to /swagger-mapped/?url=/specs/missing.json']],
    `the same app, another query, another title:\n${show(other)}`,
  )
  t.equal(other[0]!.effects.failed_requests, 1, 'the missing spec is its failed request')

  // A code editor: one type action of the exact count, shortcuts named.
  const code = of('edit code')
  t.same(
    code.map(a => a.title.replace(/ into .*/, ' into …')),
    [
      'go to /monaco/',
      code[1]!.title,
      'type 60 characters into …',
      'press Control+A',
      'press Control+Space',
      'press Shift+Alt+F',
    ],
    `the editor's actions:\n${show(code)}`,
  )
  t.match(code[1]!.title, /^click /)
  t.match(code[2]!.title, /^type 60 characters into \S/, 'the editor field is named')

  // 91 characters in one go: the proxy folded most of them, and it is still one action.
  const notes = of('write notes')
  t.same(
    notes.map(a => a.title),
    ['go to /form/', 'click #notes', 'type 91 characters into #notes'],
    `the notes' actions:\n${show(notes)}`,
  )
  const typing = notes[2]!.command_seqs.map(s => bySeq.get(s)!.event.data as EventData<'cdp_command'>)
  t.ok(
    typing.some(c => (c.count ?? 1) > 1),
    `the typing was folded (${typing.filter(c => c.count).map(c => c.count)}): the case this is about`,
  )
  t.notOk(
    actions.some(a => a.title === 'press a key'),
    'no phantom key press from a fold',
  )

  t.same(
    of('fill the email').map(a => a.title),
    ['type 12 characters into #email'],
    'fill names its element',
  )

  // The click that timed out: one failed click with the step's error, no escape codes anywhere.
  t.ok(clickError.includes('\u001b['), "Playwright's message carries terminal codes (what is stripped)")
  const save = of('save')
  t.same(
    save.map(a => [a.kind, a.title, a.outcome]),
    [['click', 'click #save', 'error']],
    `the timed-out click:\n${show(save)}`,
  )
  t.ok(save[0]!.command_seqs.length > 5, `its retries are its commands: ${save[0]!.command_seqs.length}`)
  t.ok(
    save[0]!.error_message!.startsWith(
      "page.click: Timeout 1500ms exceeded.\nCall log:\n  - waiting for locator('#save')",
    ),
    save[0]!.error_message!.slice(0, 120),
  )
  const finished = envelopes.find(e => e.event.type === 'agent_step_finished' && e.event.data.step_id === steps.save)!
    .event.data as EventData<'agent_step_finished'>
  t.equal(finished.error_message, save[0]!.error_message, "the action carries the step's error")
  t.notOk(finished.error_message!.includes('\u001b'), 'stored without escape codes')

  const text = JSON.stringify(actions)
  for (const secret of ['s3cr3t', 'me@shop.test', LINE_60, TEXT_91])
    t.notOk(text.includes(secret), `${secret.slice(0, 12)}… appears in no action`)
})
