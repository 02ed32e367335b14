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
import type { Test } from 'tap'

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

/** The three apps and the API on one 127.0.0.1 port, closed at teardown. */
export async function serveRealApps(t: Test): Promise<RealApps> {
  const seen: string[] = []
  const server = createServer((req, res) => handle(req, res, seen))
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>(r => (server.closeAllConnections(), server.close(() => r()))))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}
