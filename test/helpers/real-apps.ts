// Real third-party web apps from npm (pinned dev dependencies), served from 127.0.0.1 as their
// users deploy them: swagger-ui (a minified bundle with its source map, named by a SourceMap
// header, reading a YAML spec), monaco-editor (the AMD build, which starts its workers from blob:
// URLs) and jsoneditor (code mode: the ace editor, with its own blob: worker), plus a small API the
// pages call. Each host page is the app's own documented setup, nothing written for the daemon.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile } from 'node:fs/promises'
import { dirname, extname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import type { Envelope } from '../../src/events/index.js'

// Not every package exports its package.json: the checkout's own node_modules.
const pkgDir = (name: string) => join(dirname(fileURLToPath(import.meta.url)), '../../node_modules', name)

export const APP_DIRS = {
  swagger: pkgDir('swagger-ui-dist'),
  monaco: join(pkgDir('monaco-editor'), 'min/vs'),
  jsoneditor: join(pkgDir('jsoneditor'), 'dist'),
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ttf': 'font/ttf',
}

export const SPECS: Record<string, { type: string; body: string }> = {
  'petstore.yaml': {
    type: 'application/yaml',
    body: [
      'openapi: 3.0.0',
      'info: {title: Petstore, version: "1.0.0"}',
      'paths:',
      '  /pets:',
      '    get:',
      '      summary: List pets',
      '      responses:',
      "        '200': {description: A list of pets}",
      '',
    ].join('\n'),
  },
  // Not YAML: swagger-ui's parser catches the YAMLException and logs it with console.error(e).
  'broken.yaml': { type: 'text/yaml', body: 'openapi: 3.0.0\ninfo: {title: [unclosed\n' },
}

const ICON = '<link rel="icon" href="data:,">'
const PAGES: Record<string, string> = {
  '/swagger/': `<!doctype html><title>API docs</title>${ICON}<link rel="stylesheet" href="dist/swagger-ui.css">
<div id="swagger-ui"></div><script src="dist/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/specs/' + (new URLSearchParams(location.search).get('spec') || 'petstore.yaml'), dom_id: '#swagger-ui' })</script>`,
  '/monaco/': `<!doctype html><title>Code editor</title>${ICON}
<div id="container" style="width:800px;height:400px;border:1px solid #ccc"></div>
<script src="vs/loader.js"></script>
<script>require.config({ paths: { vs: '/monaco/vs' } })
require(['vs/editor/editor.main'], function () {
  window.editor = monaco.editor.create(document.getElementById('container'), { value: '', language: 'javascript' })
  window.editorReady = true
})</script>`,
  '/jsoneditor/': `<!doctype html><title>JSON editor</title>${ICON}<link rel="stylesheet" href="dist/jsoneditor.min.css">
<form id="account" onsubmit="return false"><input id="email" name="email" autocomplete="off"></form>
<div id="jsoneditor" style="width:600px;height:300px"></div>
<script src="dist/jsoneditor.min.js"></script>
<script>window.editor = new JSONEditor(document.getElementById('jsoneditor'), { mode: 'code' })
window.editor.set({ name: 'demo' })
function save() {
  return fetch('/api/save', { method: 'POST', headers: { 'content-type': 'application/json' }, body: window.editor.getText() })
    .then(r => r.json())
}</script>`,
}

export interface RealApps {
  url: string
  /** Request paths the server saw, in order. */
  seen: string[]
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': type, ...extra })
  res.end(body)
}

async function serveFile(res: ServerResponse, root: string, rel: string): Promise<void> {
  const file = normalize(join(root, decodeURIComponent(rel)))
  if (!file.startsWith(root)) return send(res, 403, 'text/plain', 'no')
  try {
    const body = await readFile(file)
    // swagger-ui-dist ships its map without a comment in the bundle: a deployment names it by header.
    const extra: Record<string, string> = file.endsWith('swagger-ui-bundle.js')
      ? { SourceMap: 'swagger-ui-bundle.js.map' }
      : {}
    send(res, 200, TYPES[extname(file)] ?? 'application/octet-stream', body, extra)
  } catch {
    send(res, 404, 'text/plain', 'not found')
  }
}

function handle(req: IncomingMessage, res: ServerResponse, seen: string[]): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1')
  const path = url.pathname
  seen.push(path)
  const page = PAGES[path]
  if (page) return send(res, 200, 'text/html; charset=utf-8', page)
  if (path.startsWith('/specs/')) {
    const spec = SPECS[path.slice('/specs/'.length)]
    return spec ? send(res, 200, spec.type, spec.body) : send(res, 404, 'text/plain', 'no spec')
  }
  if (path === '/api/save') {
    req.resume()
    req.on('end', () => send(res, 404, 'application/json', '{"code":404,"message":"no such document"}'))
    return
  }
  if (path.startsWith('/swagger/dist/'))
    return void serveFile(res, APP_DIRS.swagger, path.slice('/swagger/dist/'.length))
  if (path.startsWith('/monaco/vs/')) return void serveFile(res, APP_DIRS.monaco, path.slice('/monaco/vs/'.length))
  if (path.startsWith('/jsoneditor/dist/'))
    return void serveFile(res, APP_DIRS.jsoneditor, path.slice('/jsoneditor/dist/'.length))
  send(res, 404, 'text/plain', 'not found')
}

/** The three apps and the API on one 127.0.0.1 port, closed at teardown (a tap Test, or a script's own). */
export async function serveRealApps(t: { teardown(fn: () => unknown): void }): Promise<RealApps> {
  const seen: string[] = []
  const server = createServer((req, res) => handle(req, res, seen))
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>(r => (server.closeAllConnections(), server.close(() => r()))))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

/** The line typed into the code editor. */
export const TYPED_LINE = 'const total = items.reduce((sum, item) => sum + item.price, 0)'

export interface AgentDriver {
  page: Page
  startStep(name: string): Promise<string>
  endStep(stepId: string): Promise<void>
  /** Resolves once an event the daemon stored matches (the agent waits on the record, not a clock). */
  stored(what: string, pred: (e: Envelope) => boolean): Promise<unknown>
}

/**
 * What an agent does with the three apps, in three steps: reads the API docs (a YAML spec, then a
 * broken one swagger-ui logs with console.error(e)); writes a line of code in monaco and uses
 * shortcuts; fills a form field, types a JSON document in jsoneditor, saves it (the API answers
 * 404) and hits the app's own parse error, thrown uncaught.
 */
export async function runAgentSession(apps: RealApps, a: AgentDriver): Promise<void> {
  const { page } = a
  const url = (e: Envelope['event']) => String((e.data as { url?: string }).url ?? '')
  let step = await a.startStep('read the API docs')
  await page.goto(`${apps.url}/swagger/`)
  await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 })
  await page.goto(`${apps.url}/swagger/?spec=broken.yaml`)
  await a.stored('the YAML error', e => e.event.type === 'console_error' && url(e.event).includes('broken'))
  await a.endStep(step)

  step = await a.startStep('write code')
  await page.goto(`${apps.url}/monaco/`)
  await page.waitForFunction('window.editorReady === true', null, { timeout: 20_000 })
  await page.click('#container')
  await page.keyboard.type(TYPED_LINE)
  await page.keyboard.press('Control+A')
  await page.keyboard.press('Shift+Alt+F')
  await page.keyboard.press('Control+Space')
  await a.stored(
    'network idle on the monaco page',
    e => e.event.type === 'network_idle' && url(e.event) === `${apps.url}/monaco/`,
  )
  await a.endStep(step)

  step = await a.startStep('edit a document')
  await page.goto(`${apps.url}/jsoneditor/`)
  await page.fill('#email', 'agent@example.test')
  await page.click('.ace_content')
  await page.keyboard.press('Control+A')
  await page.keyboard.type('{"user": "agent", "password": "hunter2"}')
  await page.evaluate('save()')
  await page.evaluate(`setTimeout(() => { window.editor.setText('{bad'); window.editor.get() }, 0)`)
  await a.stored('the parse error', e => e.event.type === 'console_error' && e.event.data.text.includes('Parse error'))
  await a.endStep(step)
}
