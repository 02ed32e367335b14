// What interaction_key keeps of what is typed into an ordinary field, against real headless
// Chromium: a JSON body typed into a code editor (jsoneditor 10.4.3, pinned dev dependency) by
// Playwright through the daemon's proxy. By default every key is stored as the service document
// defines it (and the same value is masked in the request body the app then sends); with the
// capture setting mask_typed_keys, switched live through the capture config API on the same
// connection, printable keys are stored without their value while Enter, Control and the A of
// Control+A stay; switched off again, keys are as typed.
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { parseServeConfig } from '../src/config/config.js'
import type { EventData } from '../src/events/index.js'
import { driveThroughProxy, startTestDaemon } from './helpers/agent-driver.js'
import { STATIC_TYPES, serveFiles, startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(120_000)

const TOKEN = 'keys-browser-token-0123456789abcdef'
const JSONEDITOR = fileURLToPath(new URL('../node_modules/jsoneditor/dist/', import.meta.url))
const PAGE = `<!doctype html><html><head><title>body editor</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/jsoneditor/jsoneditor.min.css"></head><body>
<div id="body" style="width:700px;height:300px"></div>
<button id="send" onclick="fetch('/api/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: window.editor.getText() })">send</button>
<script src="/jsoneditor/jsoneditor.min.js"></script>
<script>window.editor = new JSONEditor(document.getElementById('body'), { mode: 'code' }); window.editor.setText('')</script>
</body></html>`
const TYPED = ['h', 'u', 'n', 't', 'e', 'r', '2']

t.test('--mask-typed-keys and its env twin: off by default', async t => {
  t.equal(parseServeConfig([], {}).capture.maskTypedKeys, false)
  t.equal(parseServeConfig(['--mask-typed-keys'], {}).capture.maskTypedKeys, true)
  t.equal(parseServeConfig([], { BROWSER_TELEMETRY_MASK_TYPED_KEYS: '1' }).capture.maskTypedKeys, true)
})

t.test('typed keys in a code editor: as typed by default, masked live, as typed again', async t => {
  const site = await startServer(t, {
    '/': PAGE,
    '/api/login': (_req, res) => {
      res.writeHead(204)
      res.end()
    },
    '/jsoneditor/*': serveFiles(JSONEDITOR, '/jsoneditor', STATIC_TYPES),
  })
  const dir = await tempDir(t)
  const { d, stored } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0', '--token', TOKEN],
  ])
  const config = async (method: string, body?: object) => {
    const res = await fetch(`${d.url}/browsers/${d.browserId}/telemetry`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  t.same((await config('GET')).body.mask_typed_keys, { enabled: false }, 'off by default')

  const { pw, page } = await driveThroughProxy(d)
  t.teardown(() => pw.close())
  await page.goto(site.url)
  await page.waitForFunction(() => 'editor' in window)
  await page.click('#body .ace_content')
  const keys = async () => (await stored()).flatMap(e => (e.event.type === 'interaction_key' ? [e.event.data] : []))
  /** Keys stored from `from` on, once the Enter typed last has arrived (it comes after the rest). */
  const keysAfter = async (from: number) => {
    const got = await waitFor(
      async () => {
        const k = (await keys()).slice(from)
        return k.some(x => x.key === 'Enter') && k
      },
      10_000,
      'the Enter key',
    )
    return got as EventData<'interaction_key'>[]
  }

  // Off (the default): the service document's rule, every key as typed.
  await page.keyboard.type('{"password":"hunter2"')
  await page.keyboard.press('Enter')
  const plain = await keysAfter(0)
  t.equal(
    plain
      .map(k => k.key)
      .filter(k => k.length === 1)
      .join(''),
    '{"password":"hunter2"',
    'off: the characters are stored key by key',
  )
  t.ok(
    plain.every(k => k.selector.includes('textarea') && k.tag === 'TEXTAREA'),
    `the editor's field: ${plain[0]!.selector}`,
  )
  await page.click('#send')
  const body = await waitFor(
    async () =>
      (await stored()).find(e => e.event.type === 'network_request' && (e.event.data.url ?? '').endsWith('/api/login')),
    10_000,
    'the login request',
  )
  const postData = (body.event.data as EventData<'network_request'>).post_data ?? ''
  t.match(postData, /"password":"\[redacted:8\]"/, 'the same value is masked in the request body')

  // On, live: the same connection and page, nothing reattached.
  const on = await config('PATCH', { mask_typed_keys: { enabled: true } })
  t.equal(on.status, 200)
  t.same(on.body.mask_typed_keys, { enabled: true })
  const audit = (await stored()).filter(e => e.event.type === 'capture_config_changed').at(-1)!.event
    .data as EventData<'capture_config_changed'>
  t.match(audit, { old_mask_typed_keys: false, new_mask_typed_keys: true })
  t.same(audit.old_categories, audit.new_categories, 'no category changed')
  const from = (await keys()).length
  await page.click('#body .ace_content')
  await page.keyboard.press('Control+A')
  await page.keyboard.type('{"password":"hunter2"}')
  await page.keyboard.press('Enter')
  const masked = await keysAfter(from)
  const values = masked.map(k => k.key)
  t.same(
    values.filter(k => TYPED.includes(k) || k === 'p' || k === '"' || k === '{'),
    [],
    `on: no typed character is stored (${values.join(' ')})`,
  )
  t.ok(values.includes('Control') && values.includes('A'), 'Control+A stays a shortcut')
  t.equal(values.at(-1), 'Enter', 'a named key stays')
  t.equal(
    values.filter(k => k === '[redacted:8]').length,
    [...'{"password":"hunter2"}'].length,
    'each printable key is still there, without its value',
  )
  t.ok(
    masked.every(k => k.tag === 'TEXTAREA'),
    'where it was typed stays',
  )
  const editorText = await page.evaluate(() =>
    (window as unknown as { editor: { getText(): string } }).editor.getText(),
  )
  t.ok(editorText.includes('hunter2'), 'the keys did reach the editor')

  // Off again: as typed, on the next keys.
  const off = await config('PATCH', { mask_typed_keys: { enabled: false } })
  t.same(off.body.mask_typed_keys, { enabled: false })
  const again = (await keys()).length
  await page.keyboard.type('ok')
  await page.keyboard.press('Enter')
  t.same(
    (await keysAfter(again)).map(k => k.key),
    ['o', 'k', 'Enter'],
  )

  // PUT lays the body over the daemon's default (off); bad values are refused.
  t.same((await config('PUT', { mask_typed_keys: { enabled: true } })).body.mask_typed_keys, { enabled: true })
  t.same((await config('PUT', { browser: {} })).body.mask_typed_keys, { enabled: false })
  const bad = await config('PATCH', { mask_typed_keys: { enabled: 'yes' } })
  t.equal(bad.status, 400)
  t.match(bad.body, { code: 'bad_request', message: /mask_typed_keys/ })
})
