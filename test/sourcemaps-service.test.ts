// The daemon's source maps (src/symbols/source-maps.ts) with a scripted loader standing in for the
// browser: where a script's map comes from and in which order, each failure reported once with its
// reason and never retried, the bounds on what a hostile map can cost (a 50 MB map, file:// and
// private addresses), the disk store and the parsed-map cache, reads after a restart, and the
// browser loader's deadline over a session that stops answering.
import t, { type Test } from 'tap'
import { join } from 'node:path'
import {
  SourceMaps,
  type FetchOutcome,
  type PageInfo,
  type ResourceLoader,
  type SourceMapsOptions,
} from '../src/symbols/source-maps.js'
import { capturedLookup } from '../src/symbols/captured.js'
import { LINE_BYTES, SEGMENT_BYTES } from '../src/symbols/source-map.js'
import type { EventData, StackTrace } from '../src/events/index.js'
import type { StoredRecord } from '../src/store/event-log.js'
import { browserLoader } from '../collectors/sourcemap-loader.js'
import type { TargetSession } from '../src/collector-kit.js'
import { accepted, openStore, tempDir } from './helpers/store.js'

const MiB = 1024 * 1024
const SITE = 'https://shop.example'
const PAGE: PageInfo = { url: `${SITE}/cart`, context: { target_id: 'T1', url: `${SITE}/cart`, nav_seq: 1 } }
/** A map placing generated column 0 of line 0 at `source`:line:1, naming it `name`. */
const mapFor = (source: string, line: number, extra: object = {}) =>
  JSON.stringify({ version: 3, sources: [source], names: ['named'], mappings: `AA${vlqLine(line - 1)}AA`, ...extra })
function vlqLine(n: number): string {
  // Small non-negative deltas only (what these tests use): one base64 digit.
  return 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef'[n * 2]!
}
const stackOf = (...urls: string[]): StackTrace => ({
  callFrames: urls.map(url => ({ functionName: 'f', scriptId: '1', url, lineNumber: 0, columnNumber: 0 })),
})
const sourcesOf = (s: StackTrace | undefined) => s?.callFrames.map(f => f.original?.source ?? null)

interface Route {
  status?: number
  headers?: Record<string, string>
  body?: string
  /** The body streamed as this many repeats of `body` (a large one without holding it). */
  repeat?: number
  fail?: FetchOutcome
}

function scripted(routes: Record<string, Route>) {
  const calls: string[] = []
  let pulled = 0
  const loader: ResourceLoader = {
    async fetch(url, onChunk): Promise<FetchOutcome> {
      calls.push(url)
      const r = routes[url]
      if (!r) return { ok: false, reason: 'not_found', message: 'net::ERR_HTTP_RESPONSE_CODE_FAILURE (HTTP 404)' }
      if (r.fail) return r.fail
      for (let i = 0; i < (r.repeat ?? 1); i++) {
        pulled += r.body!.length
        if (!onChunk(r.body!)) break
      }
      return { ok: true, status: r.status ?? 200, headers: r.headers ?? {} }
    },
  }
  return { loader, calls, pulled: () => pulled }
}

async function open(t: Test, opts: Partial<SourceMapsOptions> = {}, dir?: string) {
  const reports: EventData<'sourcemap_failed'>[] = []
  const sm = await SourceMaps.open({
    dir: dir ?? join(await tempDir(t), 'sourcemaps'),
    maxMapBytes: 4 * MiB,
    storeBytes: 64 * MiB,
    cacheBytes: 64 * MiB,
    fetch: true,
    report: d => reports.push(d),
    // The daemon's own fetch is scripted per test; one a test did not script fails loudly.
    direct: { fetch: async url => ({ ok: false, reason: 'fetch_failed', message: `unscripted direct fetch ${url}` }) },
    ...opts,
  })
  t.teardown(() => sm.close())
  return { sm, reports }
}

t.test('a map named by the script’s comment: learned once, stacks then mapped from memory', async t => {
  const script = `${SITE}/app.min.js`
  const net = scripted({
    [script]: { body: 'x()\n//# sourceMappingURL=app.min.js.map\n' },
    [`${SITE}/app.min.js.map`]: { body: mapFor('src/app.ts', 3) },
  })
  const { sm, reports } = await open(t, { direct: net.loader })
  t.equal(sm.mapNow(stackOf(script)), undefined, 'nothing known yet: served as stored')
  t.equal(sm.generation, 0)
  for (let i = 0; i < 100; i++) sm.want(stackOf(script), PAGE, net.loader)
  await sm.settled()
  t.same(
    net.calls,
    [script, `${SITE}/app.min.js.map`],
    'the script and its map loaded once for 100 asks (by the daemon: a public page)',
  )
  t.same(sm.mapNow(stackOf(script))?.callFrames[0]?.original, { source: 'src/app.ts', line: 3, column: 1 })
  t.same(reports, [])
  t.equal(sm.stats.learned, 1)
  t.equal(sm.generation, 1, 'a map became known: readers holding older derivations know to re-read')
})

t.test('where a map comes from, in order: Debug ID upload, URL upload, header, comment, data: URL', async t => {
  const id = '85314830-023f-4cf1-a267-535f4e37bb17'
  const a = `${SITE}/a.js` // Debug ID in the script, and also a URL upload: the Debug ID wins
  const b = `${SITE}/b.js` // header and comment: the header wins
  const c = `${SITE}/c.js` // inline map
  const net = scripted({
    [a]: { body: `a()\n//# debugId=${id}\n//# sourceMappingURL=a.js.map\n` },
    [b]: { body: 'b()\n//# sourceMappingURL=comment.map\n', headers: { SourceMap: '/header.map' } },
    [`${SITE}/header.map`]: { body: mapFor('src/from-header.ts', 1) },
    [`${SITE}/comment.map`]: { body: mapFor('src/from-comment.ts', 1) },
    [c]: {
      body: `c()\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(mapFor('src/inline.ts', 2)).toString('base64')}\n`,
    },
  })
  const { sm } = await open(t, { direct: net.loader })
  await sm.upload(Buffer.from(mapFor('src/by-url.ts', 1)), a)
  await sm.upload(Buffer.from(mapFor('src/by-debug-id.ts', 1, { debugId: id })), undefined)
  sm.want(stackOf(a, b, c), PAGE, net.loader)
  await sm.settled()
  t.same(sourcesOf(sm.mapNow(stackOf(a, b, c))), ['src/by-debug-id.ts', 'src/from-header.ts', 'src/inline.ts'])
  t.same(
    net.calls,
    [a, b, `${SITE}/header.map`, c],
    'no map fetched for the uploaded Debug ID, nor the comment under the header',
  )
  t.same(
    sm.list().map(m => m.url ?? m.debug_id),
    [a, id],
  )
  t.equal(await sm.remove({ debugId: id.toUpperCase() }), 1, 'removed by Debug ID (any case)')
  t.same(sourcesOf(sm.mapNow(stackOf(a))), ['src/by-url.ts'], 'then the URL upload applies')
})

t.test('each failure reported once with its reason, never retried', async t => {
  const id = '85314830-023f-4cf1-a267-535f4e37bb17'
  const routes: Record<string, Route> = {
    [`${SITE}/missing.js`]: { body: '//# sourceMappingURL=missing.js.map' },
    [`${SITE}/badjson.js`]: { body: '//# sourceMappingURL=bad.map' },
    [`${SITE}/bad.map`]: { body: '{"version": 3, "mappings": ' },
    [`${SITE}/v2.js`]: { body: '//# sourceMappingURL=v2.map' },
    [`${SITE}/v2.map`]: { body: '{"version":2,"sources":[],"mappings":""}' },
    [`${SITE}/vlq.js`]: { body: '//# sourceMappingURL=vlq.map' },
    [`${SITE}/vlq.map`]: { body: '{"version":3,"sources":["a"],"mappings":"AA!A"}' },
    [`${SITE}/file.js`]: { body: '//# sourceMappingURL=file:///etc/passwd' },
    [`${SITE}/private.js`]: { body: '//# sourceMappingURL=http://10.0.0.7/app.map' },
    [`${SITE}/slow.js`]: { body: '//# sourceMappingURL=slow.map' },
    [`${SITE}/slow.map`]: { fail: { ok: false, reason: 'timeout', message: 'not loaded within 10000 ms' } },
    [`${SITE}/loop.js`]: { body: '//# sourceMappingURL=loop.map' },
    [`${SITE}/loop.map`]: { fail: { ok: false, reason: 'fetch_failed', message: 'net::ERR_TOO_MANY_REDIRECTS' } },
    [`${SITE}/mismatch.js`]: { body: `//# debugId=${id}\n//# sourceMappingURL=other.map` },
    [`${SITE}/other.map`]: { body: mapFor('src/x.ts', 1, { debugId: '00000000-0000-4000-8000-000000000000' }) },
  }
  const net = scripted(routes)
  const { sm, reports } = await open(t, { direct: net.loader })
  const scripts = Object.keys(routes).filter(u => u.endsWith('.js'))
  for (let round = 0; round < 20; round++) for (const s of scripts) sm.want(stackOf(s), PAGE, net.loader)
  await sm.settled()
  const byScript = Object.fromEntries(
    reports.map(r => [r.script_url.slice(SITE.length), [r.reason, r.map_url, r.message]]),
  )
  t.same(byScript, {
    '/missing.js': ['not_found', `${SITE}/missing.js.map`, 'net::ERR_HTTP_RESPONSE_CODE_FAILURE (HTTP 404)'],
    // No message quotes what the URL answered (the parser's own messages do).
    '/badjson.js': ['bad_json', `${SITE}/bad.map`, 'not JSON: it ends early'],
    '/v2.js': ['not_v3', `${SITE}/v2.map`, 'version is not 3'],
    '/vlq.js': ['bad_mappings', `${SITE}/vlq.map`, 'the character at 2 is not a VLQ digit'],
    '/file.js': ['refused_url', 'file:///etc/passwd', 'file: URLs are not fetched (http and https only)'],
    '/private.js': [
      'private_address',
      'http://10.0.0.7/app.map',
      "10.0.0.7 is a private address outside the page's origin (https://shop.example)",
    ],
    '/slow.js': ['timeout', `${SITE}/slow.map`, 'not loaded within 10000 ms'],
    '/loop.js': ['fetch_failed', `${SITE}/loop.map`, 'net::ERR_TOO_MANY_REDIRECTS'],
    '/mismatch.js': [
      'debug_id_mismatch',
      `${SITE}/other.map`,
      `the script's Debug ID is ${id}, the map's 00000000-0000-4000-8000-000000000000`,
    ],
  })
  t.equal(reports.length, 9, 'one report per script over 20 rounds of asking')
  t.same(
    reports[0],
    {
      ...PAGE.context,
      script_url: `${SITE}/missing.js`,
      map_url: `${SITE}/missing.js.map`,
      reason: 'not_found',
      message: 'net::ERR_HTTP_RESPONSE_CODE_FAILURE (HTTP 404)',
    },
    'with the page’s context',
  )
  // Every script once, and a map only where one could be fetched.
  t.equal(net.calls.filter(u => u.endsWith('.js')).length, scripts.length)
  t.equal(net.calls.filter(u => !u.endsWith('.js')).length, 7, 'file:// and the private addresses were never asked for')
})

t.test('a page gone before its script was read: nothing reported, asked again by the next error', async t => {
  // Only a private page's own origin goes through the page (a local dev server).
  const local = 'http://127.0.0.1:8080'
  const page: PageInfo = { url: `${local}/cart`, context: { target_id: 'T1', url: `${local}/cart`, nav_seq: 1 } }
  const script = `${local}/app.js`
  let gone = true
  const calls: string[] = []
  const loader: ResourceLoader = {
    async fetch(url, onChunk) {
      calls.push(url)
      if (gone) return { ok: false, reason: 'fetch_failed', message: 'the target went away', gone: true }
      onChunk(url === script ? '//# sourceMappingURL=app.js.map' : mapFor('src/app.ts', 1))
      return { ok: true, status: 200, headers: {} }
    },
  }
  const { sm, reports } = await open(t)
  sm.want(stackOf(script), page, loader)
  await sm.settled()
  t.same(reports, [], 'not a failure of the script')
  gone = false
  sm.want(stackOf(script), page, loader)
  await sm.settled()
  t.same(calls, [script, script, `${local}/app.js.map`])
  t.same(sourcesOf(sm.mapNow(stackOf(script))), ['src/app.ts'])
})

t.test('a 50 MB map: the read stops at the cap and the map is refused', async t => {
  const script = `${SITE}/huge.js`
  const chunk = 'x'.repeat(MiB)
  const net = scripted({
    [script]: { body: '//# sourceMappingURL=huge.map' },
    [`${SITE}/huge.map`]: { body: chunk, repeat: 50 },
  })
  const { sm, reports } = await open(t, { maxMapBytes: 16 * MiB, direct: net.loader })
  sm.want(stackOf(script), PAGE, net.loader)
  await sm.settled()
  t.same(
    reports.map(r => [r.reason, r.message]),
    [['too_large', `the map is over ${16 * MiB} bytes (--sourcemap-max-bytes)`]],
  )
  // The loader is told to stop at the first chunk past the cap: 17 of the 50 MiB were pulled.
  t.equal(
    net.pulled(),
    '//# sourceMappingURL=huge.map'.length + 17 * MiB,
    'read no further than one chunk past the cap',
  )
})

t.test('an inline map over the cap, and a script too large to read to its end', async t => {
  const big = `${SITE}/inline-big.js`
  const huge = `${SITE}/no-comment.js`
  const net = scripted({
    [big]: { body: `//# sourceMappingURL=data:application/json;base64,${'A'.repeat(3 * MiB)}` },
    [huge]: { body: 'y'.repeat(MiB), repeat: 9 },
  })
  const { sm, reports } = await open(t, { maxMapBytes: 2 * MiB, direct: net.loader })
  sm.want(stackOf(big, huge), PAGE, net.loader)
  await sm.settled()
  t.same(
    reports.map(r => [r.script_url.slice(SITE.length), r.reason, r.message]),
    [
      ['/inline-big.js', 'too_large', `the inline map is over ${2 * MiB} bytes`],
      ['/no-comment.js', 'too_large', `the script is over ${8 * MiB} characters; its map comment was not read`],
    ],
  )
})

t.test('scripts without a map, inline scripts and fetching off: nothing reported, uploads still apply', async t => {
  const plain = `${SITE}/plain.js`
  const net = scripted({ [plain]: { body: 'no map here' } })
  const { sm, reports } = await open(t, { direct: net.loader })
  sm.want(stackOf(plain, PAGE.url!, 'chrome-extension://abc/x.js', ''), PAGE, net.loader)
  await sm.settled()
  t.same(net.calls, [plain], 'only the fetchable script that is not the document itself')
  t.same(reports, [])
  const quiet = scripted({})
  const off = await open(t, { fetch: false, direct: quiet.loader })
  await off.sm.upload(Buffer.from(mapFor('src/up.ts', 4)), plain)
  off.sm.want(stackOf(plain), PAGE, quiet.loader)
  await off.sm.settled()
  t.same(quiet.calls, [], '--no-sourcemap-fetch: nothing loaded through the browser')
  t.same(sourcesOf(off.sm.mapNow(stackOf(plain))), ['src/up.ts'])
})

t.test('stored records mapped on read, after a restart too; unmappable ones untouched', async t => {
  const dir = join(await tempDir(t), 'sourcemaps')
  const script = `${SITE}/app.js`
  const net = scripted({
    [script]: { body: '//# sourceMappingURL=app.js.map' },
    [`${SITE}/app.js.map`]: { body: mapFor('src/app.ts', 2) },
  })
  const first = await open(t, { direct: net.loader }, dir)
  first.sm.want(stackOf(script), PAGE, net.loader)
  await first.sm.settled()
  await first.sm.close()

  const { sm } = await open(t, {}, dir)
  t.equal(sm.cache.size, 0, 'nothing parsed yet after the restart')
  t.equal(sm.generation, 0, 'no map became known in this life yet')
  const env = (seq: number, type: string, data: object) =>
    ({
      seq,
      ts: seq,
      category: type.startsWith('console') ? 'console' : 'page',
      json: JSON.stringify({ seq, event: { ts: seq, type, category: 'console', source: { kind: 'cdp' }, data } }),
    }) as StoredRecord
  const records = [
    env(1, 'console_error', { text: 'boom', stack_trace: stackOf(script) }),
    env(2, 'console_log', { level: 'log', text: 'hi', args: [], stack_trace: stackOf(script) }),
    env(3, 'page_load', { cdp_timestamp: 1 }),
  ]
  t.equal(sm.mapRecordsNow(records), records, 'from memory, before any read loaded the map: as stored, the same array')
  const used = new Set<string>()
  const out = await sm.mapRecords(records, used)
  const now = sm.mapRecordsNow(records)
  t.same(
    now.map(r => r.json),
    out.map(r => r.json),
    'once loaded, the live path serves the same derivation as the read path',
  )
  t.same(
    (JSON.parse(out[0]!.json) as { event: { data: { stack_trace: StackTrace } } }).event.data.stack_trace.callFrames[0]!
      .original,
    { source: 'src/app.ts', line: 2, column: 1 },
  )
  t.equal(out[0]!.envelopeBytes, undefined, 're-serialised records carry no stale bytes')
  t.equal(out[1], records[1], 'console.log stacks are served as stored')
  t.equal(out[2], records[2])
  t.same([...used], [script])
  t.equal(sm.cache.size, 1, 'the stored map parsed once on the first read')
  const again = await sm.mapRecords([records[0]!])
  t.equal(again[0]!.json, out[0]!.json)
  t.equal(sm.cache.parsed, 1, 'and reused')
  // Past the envelope cap a record stays as stored.
  const capped = await open(t, { maxEnvelopeBytes: 100 }, dir)
  const kept = await capped.sm.mapRecords([records[0]!])
  t.equal(kept[0], records[0])
})

t.test('the parsed-map cache is bounded in bytes; the disk store too, fetched maps going first', async t => {
  const a = `${SITE}/a.js`
  const b = `${SITE}/b.js`
  const bigMap = (source: string) =>
    JSON.stringify({ version: 3, sources: [source], mappings: Array.from({ length: 20_000 }, () => 'AAAA').join(';') })
  const net = scripted({
    [a]: { body: '//# sourceMappingURL=a.map' },
    [`${SITE}/a.map`]: { body: bigMap('src/a.ts') },
    [b]: { body: '//# sourceMappingURL=b.map' },
    [`${SITE}/b.map`]: { body: bigMap('src/b.ts') },
  })
  // Each parsed map is 20,000 lines of one segment: the cache holds one of them.
  const { sm } = await open(t, { cacheBytes: 30_000 * (SEGMENT_BYTES + LINE_BYTES), direct: net.loader })
  sm.want(stackOf(a, b), PAGE, net.loader)
  await sm.settled()
  t.equal(sm.cache.size, 1)
  t.ok(sm.cache.bytes <= 30_000 * (SEGMENT_BYTES + LINE_BYTES))
  t.same(sourcesOf(sm.mapNow(stackOf(a, b))), [null, 'src/b.ts'], 'from memory: only the most recent')
  await sm.prepare([a])
  t.same(sourcesOf(sm.mapNow(stackOf(a))), ['src/a.ts'], 'read paths load it back from disk')
  t.equal(sm.cache.evicted, 2)

  // The store: 1 MiB; uploads of 400 KB each.
  const store = await open(t, { storeBytes: MiB })
  const upload = (n: number) =>
    Buffer.from(JSON.stringify({ version: 3, sources: [`u${n}`], mappings: 'AAAA', pad: 'p'.repeat(400_000) }))
  await store.sm.upload(upload(1), `${SITE}/u1.js`)
  await store.sm.upload(upload(2), `${SITE}/u2.js`)
  await t.rejects(store.sm.upload(upload(3), `${SITE}/u3.js`), { status: 507, code: 'insufficient_storage' })
  t.equal(store.sm.list().length, 2, 'the refused upload left nothing behind')
})

t.test(
  'uploads are checked: size cap 413, bounds 413, not JSON / not v3 400, url needed without a Debug ID',
  async t => {
    // A one-segment map costs 1,312 bytes decoded; 31 segments 4,236.
    const { sm } = await open(t, { maxMapBytes: 1000, cacheBytes: 3000, maxSources: 3 })
    await t.rejects(sm.upload(Buffer.alloc(1001, 32), `${SITE}/a.js`), { status: 413, code: 'payload_too_large' })
    await t.rejects(sm.upload(Buffer.from('{"version":3,'), `${SITE}/a.js`), {
      status: 400,
      code: 'bad_request',
      details: [{ code: 'bad_json' }],
    })
    await t.rejects(sm.upload(Buffer.from('{"version":2}'), `${SITE}/a.js`), {
      status: 400,
      code: 'bad_request',
      details: [{ code: 'not_v3' }],
    })
    await t.rejects(sm.upload(Buffer.from([0xff, 0xfe]), `${SITE}/a.js`), { status: 400, code: 'bad_request' })
    await t.rejects(
      sm.upload(
        Buffer.from(JSON.stringify({ version: 3, sources: [], mappings: 'A,'.repeat(30) + 'A' })),
        `${SITE}/a.js`,
      ),
      {
        status: 413,
        code: 'payload_too_large',
        details: [{ code: 'too_many_segments' }],
      },
    )
    await t.rejects(
      sm.upload(
        Buffer.from(JSON.stringify({ version: 3, sources: ['a', 'b', 'c', 'd'], mappings: '' })),
        `${SITE}/a.js`,
      ),
      {
        status: 413,
        code: 'payload_too_large',
        details: [{ code: 'too_many_sources' }],
      },
    )
    await t.rejects(sm.upload(Buffer.from(mapFor('src/a.ts', 1)), undefined), {
      status: 400,
      message: 'invalid url: required for a map without a debugId',
    })
    t.same(sm.list(), [], 'nothing stored')
  },
)

t.test('what can no longer be loaded comes from a response captured on a page of the same origin', async t => {
  const { log, pipeline } = await openStore(t)
  const script = `${SITE}/gone.js`
  const mapUrl = `${SITE}/gone.js.map`
  const EVIL = 'https://evil.example'
  // One request and its response, as the network collector stores them (the request names its page).
  const captured = async (
    page: string,
    url: string,
    body: string | undefined,
    headers: Record<string, string> = {},
  ) => {
    const request_id = `${page} ${url}`
    await accepted(
      pipeline.emit({
        type: 'network_request',
        source: { kind: 'cdp' },
        data: { url, request_id, method: 'GET', headers: {}, document_url: `${page}/index.html` },
      }),
    ).committed
    await accepted(
      pipeline.emit({
        type: 'network_response',
        source: { kind: 'cdp' },
        data: {
          url,
          request_id,
          status: 200,
          status_text: 'OK',
          headers,
          mime_type: 'application/json',
          ...(body ? { body } : {}),
        },
      }),
    ).committed
  }
  await captured(SITE, script, undefined, { SourceMap: 'gone.js.map' })
  await captured(SITE, mapUrl, mapFor('src/gone.ts', 5))
  // Newer, and the same URL, but captured on another site's page: never used for this site.
  await captured(EVIL, mapUrl, mapFor('src/planted.ts', 1))
  t.equal(log.lastSeq, 6)
  const net = scripted({})
  const shop = await open(t, { captured: capturedLookup(log), direct: net.loader })
  shop.sm.want(stackOf(script), PAGE, net.loader)
  await shop.sm.settled()
  t.same(shop.reports, [])
  t.same(sourcesOf(shop.sm.mapNow(stackOf(script))), ['src/gone.ts'], 'the header and the body, both of this origin')
  t.same(net.calls, [script, mapUrl], 'both asked for first')

  // A page of another origin naming the same script: the shop's captured answers are not its own.
  const evilPage: PageInfo = { url: `${EVIL}/x`, context: { target_id: 'T2', url: `${EVIL}/x`, nav_seq: 1 } }
  const other = await open(t, { captured: capturedLookup(log), direct: net.loader })
  other.sm.want(stackOf(script), evilPage, net.loader)
  await other.sm.settled()
  t.equal(other.sm.mapNow(stackOf(script)), undefined)
  t.same(
    other.reports.map(r => [r.script_url, r.reason, r.message]),
    [[script, 'not_found', 'script: net::ERR_HTTP_RESPONSE_CODE_FAILURE (HTTP 404)']],
    'the script failed as it was loaded, no captured header taken from another origin',
  )
  t.same(await capturedLookup(log)(EVIL, mapUrl), { status: 200, headers: {}, body: mapFor('src/planted.ts', 1) })
  t.equal(await capturedLookup(log)('https://third.example', mapUrl), undefined)
})

t.test('the browser loader: one deadline for the whole load, the stream closed', async t => {
  const sent: string[] = []
  const session = {
    targetType: 'page',
    signal: new AbortController().signal,
    context: () => ({ frame_id: 'F1' }),
    send: async (method: string) => {
      sent.push(method)
      if (method === 'Network.loadNetworkResource')
        return { resource: { success: true, httpStatusCode: 200, stream: 'S1', headers: {} } }
      return new Promise(() => {}) // IO.read never answers
    },
    sendMayFail: async (method: string) => {
      sent.push(method)
      return undefined
    },
  } as unknown as TargetSession
  const started = performance.now()
  const r = await browserLoader(session).fetch(`${SITE}/slow.map`, () => true, 300)
  const ms = performance.now() - started
  t.same(r, { ok: false, reason: 'timeout', message: 'not loaded within 300 ms' })
  // Not before the deadline (a timer does not fire early); how late a loaded machine fires it is not
  // the loader's behaviour.
  t.ok(ms >= 290, `gave up after ${ms.toFixed(0)} ms, not before the 300 ms deadline`)
  t.same(sent, ['Network.loadNetworkResource', 'IO.read', 'IO.close'])
})

t.test('one page naming 100 new scripts is learned at the page rate; another page is not held behind it', async t => {
  // A clock the budget's waits advance: when each script was loaded, in fake milliseconds.
  let now = 0
  const clock = { now: () => now, sleep: async (ms: number) => void (now += ms) }
  const loadedAt = new Map<string, number>()
  const loader: ResourceLoader = {
    async fetch(url, onChunk): Promise<FetchOutcome> {
      loadedAt.set(url, now)
      onChunk(`//# debugId=00000000-0000-4000-8000-${String(loadedAt.size).padStart(12, '0')}\n`)
      return { ok: true, status: 200, headers: {} }
    },
  }
  const { sm } = await open(t, { clock, pageRate: { perSecond: 20, burst: 40 }, direct: loader })
  const urls = Array.from({ length: 100 }, (_, i) => `${SITE}/chunk-${i}.js`)
  for (let i = 0; i < 100; i += 25) sm.want(stackOf(...urls.slice(i, i + 25)), PAGE, loader)
  const other: PageInfo = { url: `${SITE}/other`, context: { target_id: 'T2', url: `${SITE}/other`, nav_seq: 1 } }
  sm.want(stackOf(`${SITE}/other.js`), other, loader)
  await sm.settled()
  const times = urls.map(u => loadedAt.get(u))
  // The burst at once, then one every 50 ms: the 100th at 60 x 50 ms = 3 s.
  t.same(times.slice(0, 40), new Array(40).fill(0), 'the burst of 40 at once')
  t.same(
    times.slice(40),
    Array.from({ length: 60 }, (_, i) => (i + 1) * 50),
    'then 20 a second',
  )
  t.equal(loadedAt.get(`${SITE}/other.js`), 0, 'the other page’s script did not wait behind them')
  t.equal(sm.stats.fetches, 101)
})

t.test('a captured-response lookup reads at most 4 MiB of the log, and all lookups 16 MiB at once', async t => {
  // A log of 5,000 network responses with 64 KiB bodies for other URLs (about 320 MB), made as read.
  const body = 'x'.repeat(64 * 1024)
  let served = 0
  const log = {
    async read(q: { cursor?: number; limit: number; maxBytes?: number }) {
      const top = q.cursor ?? 5001
      const records: StoredRecord[] = []
      let bytes = 0
      for (let seq = top - 1; seq >= 1 && records.length < q.limit; seq--) {
        const json = JSON.stringify({
          seq,
          event: { type: 'network_response', data: { url: `${SITE}/other-${seq}.js`, request_id: `r${seq}`, body } },
        })
        if (records.length > 0 && bytes + json.length > (q.maxBytes ?? Infinity)) break
        bytes += json.length
        records.push({ seq, ts: seq, category: 'network', json })
      }
      served += bytes
      const last = records.at(-1)?.seq ?? 1
      return { records, hasMore: last > 1, nextCursor: last }
    },
  }
  let now = 0
  const lookup = capturedLookup(log, { now: () => now })
  t.equal(await lookup(SITE, `${SITE}/app.js.map`), undefined)
  const one = served
  // Before the bound, one lookup read all 5,000 records: 328,331,679 bytes. Now 4 MiB, and the
  // record that crosses it (a read page holds one at least): 65,600 bytes each here.
  t.ok(one <= 4 * MiB + 65_600 && one > 4 * MiB - 65_600, `one lookup read ${one} bytes`)
  for (let i = 0; i < 9; i++) await lookup(SITE, `${SITE}/app-${i}.js.map`)
  t.ok(served <= 16 * MiB + 65_600, `ten lookups at once read ${served} bytes (the shared budget)`)
  // Half the budget back a second later.
  const before = served
  now += 1000
  await lookup(SITE, `${SITE}/later.js.map`)
  const later = served - before
  t.ok(later > 4 * MiB - 65_600 && later <= 4 * MiB + 65_600, `a later lookup reads again (${later} bytes)`)
})
