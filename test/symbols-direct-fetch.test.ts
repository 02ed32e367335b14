// The daemon's own fetch of scripts and maps (src/symbols/direct-fetch.ts) against local servers:
// names resolved when connecting and refused unless public (the address checked is the one dialled),
// a name that does not resolve or resolves too slowly refused, every redirect hop put through the
// rule again, no cookies sent, the caller's cap stops the read, one deadline for the whole load.
import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { directLoader } from '../src/symbols/direct-fetch.js'

/** A server on 127.0.0.1 that records what it was asked. */
async function server(t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: IncomingMessage[] = []
  const s = createServer((req, res) => {
    seen.push(req)
    handler(req, res)
  })
  await new Promise<void>(r => s.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    s.closeAllConnections()
    s.close()
  })
  return { port: (s.address() as AddressInfo).port, seen }
}

const PUBLIC = '203.0.113.7'
/** A resolver: public.test is public (dialled to 127.0.0.1), the rest as given. */
function resolver(extra: Record<string, string[] | 'hang' | 'fail'> = {}) {
  const asked: string[] = []
  const resolveHost = (host: string): Promise<string[]> => {
    asked.push(host)
    const r = host === 'public.test' ? [PUBLIC] : extra[host]
    if (r === 'hang') return new Promise(() => {})
    if (r === undefined || r === 'fail')
      return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }))
    return Promise.resolve(r)
  }
  return { resolveHost, asked, dial: (a: string) => (a === PUBLIC ? '127.0.0.1' : a) }
}

const read = async (loader: ReturnType<typeof directLoader>, url: string, timeoutMs = 5000, cap = Infinity) => {
  let text = ''
  const outcome = await loader.fetch(
    url,
    chunk => {
      text += chunk
      return text.length <= cap
    },
    timeoutMs,
  )
  return { outcome, text }
}

t.test('a public name: fetched from the address checked, without cookies, the body decoded', async t => {
  const srv = await server(t, (req, res) => {
    if (req.url === '/gz') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
      return res.end(gzipSync('{"version":3}'))
    }
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'a=1' })
    res.end('{"version":3,"sources":[]}')
  })
  const r = resolver()
  const loader = directLoader(r)
  const plain = await read(loader, `http://public.test:${srv.port}/a.map`)
  t.same(plain.text, '{"version":3,"sources":[]}')
  t.match(plain.outcome, { ok: true, status: 200, headers: { 'content-type': 'application/json' } })
  t.same((await read(loader, `http://public.test:${srv.port}/gz`)).text, '{"version":3}', 'gzip decoded')
  t.equal(srv.seen.length, 2)
  t.same(
    srv.seen.map(q => [q.headers.host, q.headers.cookie, q.headers.authorization]),
    [
      [`public.test:${srv.port}`, undefined, undefined],
      [`public.test:${srv.port}`, undefined, undefined],
    ],
    'the name as Host, no credentials',
  )
  t.same(r.asked, ['public.test', 'public.test'], 'resolved for each connection')
})

t.test('names refused when connecting: private, not resolving, resolving too slowly', async t => {
  const victim = await server(t, (_req, res) => res.end('SECRET'))
  const r = resolver({
    'inside.test': ['127.0.0.1'],
    'meta.test': ['169.254.169.254'],
    'mixed.test': [PUBLIC, '10.0.0.5'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'nowhere.test': 'fail',
    'slow.test': 'hang',
    'empty.test': [],
  })
  const loader = directLoader({ ...r, dnsTimeoutMs: 150 })
  const outcomes: Record<string, unknown> = {}
  for (const host of ['inside', 'meta', 'mixed', 'mapped', 'nowhere', 'slow', 'empty'])
    outcomes[host] = (await read(loader, `http://${host}.test:${victim.port}/m.map`)).outcome
  t.same(outcomes, {
    inside: { ok: false, reason: 'private_address', message: 'inside.test resolves to 127.0.0.1, a private address' },
    meta: { ok: false, reason: 'private_address', message: 'meta.test resolves to 169.254.169.254, a private address' },
    mixed: { ok: false, reason: 'private_address', message: 'mixed.test resolves to 10.0.0.5, a private address' },
    mapped: {
      ok: false,
      reason: 'private_address',
      message: 'mapped.test resolves to ::ffff:127.0.0.1, a private address',
    },
    nowhere: { ok: false, reason: 'fetch_failed', message: 'nowhere.test did not resolve (ENOTFOUND)' },
    slow: { ok: false, reason: 'timeout', message: 'slow.test did not resolve within 150 ms' },
    empty: { ok: false, reason: 'fetch_failed', message: 'empty.test did not resolve (no address)' },
  })
  t.equal(victim.seen.length, 0, 'nothing connected')
})

t.test('address literals and localhost names refused before connecting', async t => {
  const victim = await server(t, (_req, res) => res.end('SECRET'))
  const r = resolver()
  const loader = directLoader(r)
  const reasons: string[] = []
  const literals = ['127.1', 'localhost.', 'a.localhost.', '[::1]', '0.0.0.0', '[::ffff:127.0.0.1]', '169.254.169.254']
  for (const host of literals) {
    const { outcome } = await read(loader, `http://${host}:${victim.port}/m.map`)
    reasons.push(outcome.ok ? 'fetched' : outcome.reason)
  }
  t.same(
    reasons,
    literals.map(() => 'private_address'),
  )
  t.same(await loader.fetch(`http://localhost.:${victim.port}/m.map`, () => true, 1000), {
    ok: false,
    reason: 'private_address',
    message: `localhost.:${victim.port} is a private address`,
  })
  t.equal(victim.seen.length, 0)
  t.same(r.asked, [], 'nothing resolved')
})

t.test('every redirect hop is checked again; at most 5 hops', async t => {
  const victim = await server(t, (_req, res) => res.end('SECRET'))
  let hops = 0
  const redirector = await server(t, (req, res) => {
    const to: Record<string, string> = {
      '/to-literal': `http://127.1:${victim.port}/m.map`,
      '/to-name': `http://inside.test:${victim.port}/m.map`,
      '/to-file': 'file:///etc/passwd',
      '/to-map': '/map',
    }
    if (req.url === '/loop') {
      hops++
      res.writeHead(302, { location: '/loop' })
      return res.end()
    }
    if (req.url === '/map') {
      res.writeHead(200)
      return res.end('{"version":3}')
    }
    res.writeHead(301, { location: to[req.url ?? '']! })
    res.end()
  })
  const loader = directLoader(resolver({ 'inside.test': ['127.0.0.1'] }))
  const at = (p: string) => `http://public.test:${redirector.port}${p}`
  t.same((await read(loader, at('/to-literal'))).outcome, {
    ok: false,
    reason: 'private_address',
    message: `redirected to http://127.0.0.1:${victim.port}/m.map: 127.0.0.1:${victim.port} is a private address`,
  })
  t.same((await read(loader, at('/to-name'))).outcome, {
    ok: false,
    reason: 'private_address',
    message: 'inside.test resolves to 127.0.0.1, a private address',
  })
  t.same((await read(loader, at('/to-file'))).outcome, {
    ok: false,
    reason: 'refused_url',
    message: 'redirected to file:///etc/passwd: file: URLs are not fetched (http and https only)',
  })
  const followed = await read(loader, at('/to-map'))
  t.same([followed.outcome.ok, followed.text], [true, '{"version":3}'], 'a public hop is followed')
  t.same((await read(loader, at('/loop'))).outcome, {
    ok: false,
    reason: 'fetch_failed',
    message: 'more than 5 redirects',
  })
  t.equal(hops, 6, 'the first load and 5 redirects')
  t.equal(victim.seen.length, 0)
})

t.test('statuses, the caller’s cap and one deadline', async t => {
  const srv = await server(t, (req, res) => {
    if (req.url === '/missing') return res.writeHead(404).end('<html>not here</html>')
    if (req.url === '/broken') return res.writeHead(500).end('<html>stack trace</html>')
    if (req.url === '/stall') return res.writeHead(200).write('{') // never ends
    res.writeHead(200)
    const piece = 'x'.repeat(64 * 1024)
    for (let i = 0; i < 64; i++) res.write(piece)
    res.end()
  })
  const loader = directLoader(resolver())
  const at = (p: string) => `http://public.test:${srv.port}${p}`
  t.same((await read(loader, at('/missing'))).outcome, { ok: false, reason: 'not_found', message: 'HTTP 404' })
  t.same((await read(loader, at('/broken'))).outcome, { ok: false, reason: 'fetch_failed', message: 'HTTP 500' })
  const capped = await read(loader, at('/big'), 5000, 100_000)
  t.equal(capped.outcome.ok, true)
  t.ok(capped.text.length > 100_000 && capped.text.length < 4 * 1024 * 1024, `stopped at ${capped.text.length}`)
  t.same((await read(loader, at('/stall'), 300)).outcome, {
    ok: false,
    reason: 'timeout',
    message: 'not loaded within 300 ms',
  })
})
