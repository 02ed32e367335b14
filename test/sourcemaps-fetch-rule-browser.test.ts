// The source maps' fetch rule against a real headless Chromium: a page on 127.0.0.1 runs scripts
// that throw and each name a map on another origin that is, one way or another, an address inside
// the VM (localhost names with a trailing dot, 127.1, [::1], 0.0.0.0, IPv4-mapped IPv6, a redirect
// to 127.0.0.1, a name resolving to cloud metadata, a name that rebinds, one that does not resolve
// and one that resolves too slowly). A "victim" server on 127.0.0.1 and [::1] answers a marker to
// anything: it must get no request at all, each error must be stored raw with one sourcemap_failed
// of the expected reason, and nothing stored may carry the victim's answer.
import t from 'tap'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import type { StackTrace } from '../src/events/index.js'
import { startServer } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(120_000)

const TOKEN = 'fetch-rule-token'
const MARKER = 'VICTIM7f3'

interface Env {
  seq: number
  event: { type: string; data: Record<string, unknown> }
}

t.test('no map URL reaches an address inside the VM, whatever its form', async t => {
  const dir = await tempDir(t)
  // The victim: every in-VM service at once, on IPv4 and IPv6 loopback, the same port.
  const hits: string[] = []
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    hits.push(`${req.headers.host ?? ''}${req.url ?? ''}`)
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(MARKER)
  }
  const victim4 = createServer(answer).listen(0, '127.0.0.1')
  await once(victim4, 'listening')
  const V = (victim4.address() as AddressInfo).port
  const victim6 = createServer(answer).listen(V, '::1')
  await once(victim6, 'listening')
  t.teardown(() => {
    for (const s of [victim4, victim6]) {
      s.closeAllConnections()
      s.close()
    }
  })
  // A public-looking map host that redirects into the VM.
  let redirected = 0
  const redirector = await startServer(t, {
    '/m.map': (_req, res) => {
      redirected++
      res.writeHead(302, { location: `http://127.0.0.1:${V}/m.map`, 'cache-control': 'no-store' })
      res.end()
    },
  })
  const R = redirector.port
  const CASES: Record<string, [ref: string, reason: string]> = {
    localhostdot: [`http://localhost.:${V}/m.map`, 'private_address'],
    sublocalhostdot: [`http://app.localhost.:${V}/m.map`, 'private_address'],
    shortv4: [`http://127.1:${V}/m.map`, 'private_address'],
    loopbackv6: [`http://[::1]:${V}/m.map`, 'private_address'],
    anyaddress: [`http://0.0.0.0:${V}/m.map`, 'private_address'],
    mappedv6: [`http://[::ffff:127.0.0.1]:${V}/m.map`, 'private_address'],
    redirect: [`http://cdn.test:${R}/m.map`, 'private_address'],
    metadata: [`http://metadata.test:${V}/latest/meta-data/`, 'private_address'],
    rebind: [`http://rebind.test:${V}/m.map`, 'fetch_failed'],
    unresolved: [`http://nowhere.test:${V}/m.map`, 'fetch_failed'],
    slowdns: [`http://slow.test:${V}/m.map`, 'timeout'],
  }
  const names = Object.keys(CASES)
  const site = await startServer(t, {
    '/page.html': `<!doctype html><title>maps</title>${names.map(n => `<script src="/js/${n}.js"></script>`).join('')}`,
  })
  for (const [name, [ref]] of Object.entries(CASES))
    site.route(`/js/${name}.js`, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' })
      res.end(`(function(){throw new Error('case ${name}')})()\n//# sourceMappingURL=${ref}\n`)
    })

  // What Chromium would resolve each test name to (all of them the VM itself), and what the
  // daemon's resolver says: the redirector and the rebinding name look public to it; 203.0.113.9
  // stands for a public address nothing answers on (127.0.0.2: no listener there).
  const hosts = ['cdn.test', 'metadata.test', 'rebind.test', 'nowhere.test', 'slow.test']
  const resolved: string[] = []
  const resolveHost = (host: string): Promise<string[]> => {
    resolved.push(host)
    if (host === 'cdn.test') return Promise.resolve(['203.0.113.7'])
    if (host === 'metadata.test') return Promise.resolve(['169.254.169.254'])
    if (host === 'rebind.test') return Promise.resolve(['203.0.113.9'])
    if (host === 'slow.test') return new Promise<string[]>(() => {})
    return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }))
  }
  const dial = (a: string) => (a === '203.0.113.7' ? '127.0.0.1' : a === '203.0.113.9' ? '127.0.0.2' : a)
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      join(dir, 'data'),
      '--token',
      TOKEN,
      '--proxy-listen',
      'off',
      `--chromium-arg=--host-resolver-rules=${hosts.map(h => `MAP ${h} 127.0.0.1`).join(', ')}`,
    ],
    {},
  )
  const d = await startDaemon(config, {
    logger: silentLogger,
    announce: () => {},
    showNewToken: false,
    sourceMapNet: { resolveHost, dial },
  })
  t.teardown(() => d.close())
  const failures = new Map<string, Env>()
  const committed: string[] = []
  let allIn: () => void = () => {}
  const allFailed = new Promise<void>(resolve => (allIn = resolve))
  // On to the end: every record committed is searched for the victim's answer.
  const off = d.log.onCommit(records => {
    for (const r of records) {
      committed.push(r.json)
      if (!r.json.includes('"sourcemap_failed"')) continue
      const e = JSON.parse(r.json) as Env
      failures.set(/\/js\/([a-z0-9]+)\.js$/.exec(String(e.event.data.script_url))?.[1] ?? '?', e)
    }
    if (failures.size >= names.length) allIn()
  })
  await d.monitor!.openPage(`${site.url}page.html`)
  await allFailed
  await d.sourceMaps.settled()
  t.teardown(off)
  // Everything committed until the daemon's own reads are done: the log's last record is in.
  await d.log.flush()
  const all = committed.map(j => JSON.parse(j) as Env)
  t.same(hits, [], 'the victim got no request')
  t.equal(redirected, 1, 'the redirector was asked once, by the daemon')
  t.same(
    Object.fromEntries([...failures].map(([n, e]) => [n, e.event.data.reason])),
    Object.fromEntries(names.map(n => [n, CASES[n]![1]])),
    'each map refused with its reason',
  )
  t.same(
    Object.fromEntries([...failures].map(([n, e]) => [n, e.event.data.map_url])),
    Object.fromEntries(names.map(n => [n, new URL(CASES[n]![0]).href])),
    'each names its map',
  )
  t.equal(all.filter(e => e.event.type === 'sourcemap_failed').length, names.length, 'one report per script')
  t.same(
    all.filter(e => JSON.stringify(e).includes(MARKER)).map(e => e.event.type),
    [],
    "no stored event carries the victim's answer",
  )
  const errors = all.filter(
    e => e.event.type === 'console_error' && /^Uncaught Error: case /.test(String(e.event.data.text)),
  )
  t.equal(errors.length, names.length, 'every error stored')
  t.same(
    errors.filter(e => (e.event.data.stack_trace as StackTrace).callFrames.some(f => f.original)).length,
    0,
    'every error stored raw',
  )
  t.same(
    [...new Set(resolved)].sort(),
    ['cdn.test', 'metadata.test', 'nowhere.test', 'rebind.test', 'slow.test'],
    'the daemon resolved only the names it connects to',
  )
  t.equal(
    failures.get('redirect')?.event.data.message,
    `redirected to http://127.0.0.1:${V}/m.map: 127.0.0.1:${V} is a private address`,
  )
  t.equal(failures.get('metadata')?.event.data.message, 'metadata.test resolves to 169.254.169.254, a private address')
  t.equal(failures.get('slowdns')?.event.data.message, 'slow.test did not resolve within 2000 ms')
})
