// src/symbols' pure parts: a map parsed under its bounds and decoded in slices exactly as
// trace-mapping decodes it whole, hostile maps refused by a bound (invalid VLQ, 100,000 sources,
// 10 million segments) in bounded time and memory, a script's references read while it streams,
// the fetch rule for map URLs, and stack frames mapped with their functions' names.
import t from 'tap'
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping'
import {
  LINE_BYTES,
  MapError,
  MAX_JSON_VALUES,
  parseSourceMap,
  originalAt,
  SEGMENT_BYTES,
} from '../src/symbols/source-map.js'
import { ScriptScanner, decodeDataUrl, mapHeaderOf } from '../src/symbols/script-refs.js'
import { fetchRoute, isLocalName, isPublicAddress } from '../src/symbols/fetch-rule.js'
import { mapStack, isMappable } from '../src/symbols/frames.js'
import { syntheticMappings } from './helpers/sourcemap-app.js'

const LIMITS = { maxSources: 10_000, maxBytes: 64 * 1024 * 1024 }

async function refusal(
  text: string,
  limits = LIMITS,
  pause?: () => Promise<void>,
): Promise<{ reason: string; message: string }> {
  try {
    await parseSourceMap(text, limits, pause)
  } catch (err) {
    if (err instanceof MapError) return { reason: err.reason, message: err.message }
    throw err
  }
  throw new Error('the map was accepted')
}

t.test('a map decoded in slices matches trace-mapping decoding it whole, at every position', async t => {
  // 20,000 lines of 12 segments: about 1 MB of mappings, eight slices.
  const sources = Array.from({ length: 40 }, (_, i) => `src/m${i}.ts`)
  const names = Array.from({ length: 30 }, (_, i) => `name${i}`)
  const text = JSON.stringify({
    version: 3,
    sources,
    names,
    mappings: syntheticMappings(20_000, 12, sources.length, names.length),
  })
  let pauses = 0
  const map = await parseSourceMap(text, LIMITS, async () => {
    pauses++
  })
  t.equal(map.segments, 240_000)
  t.ok(pauses >= 6, `decoded in slices with the event loop let go between them (${pauses} pauses)`)
  const whole = new TraceMap(text)
  let differ = 0
  let checked = 0
  for (let line = 0; line < 20_000; line += 7)
    for (let col = 0; col < 12 * 7 + 3; col += 5) {
      checked++
      const a = originalAt(map, line, col)
      const b = originalPositionFor(whole, { line: line + 1, column: col })
      const same =
        (a?.source ?? null) === b.source &&
        (a?.line ?? null) === b.line &&
        (a ? a.column - 1 : null) === b.column &&
        (a?.name ?? null) === b.name
      if (!same && differ++ < 3) t.fail(`line ${line} col ${col}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`)
    }
  t.equal(differ, 0, `all ${checked} positions agree`)
  // Segments, lines, names and sources at their measured costs, characters at 4 bytes.
  t.equal(
    map.bytes,
    1024 +
      240_000 * SEGMENT_BYTES +
      20_000 * LINE_BYTES +
      40 * 48 +
      30 * 24 +
      (sources.join('').length + names.join('').length) * 4,
  )
})

t.test('shape refusals: not JSON, not version 3, index maps, bad fields', async t => {
  t.match(await refusal('{"version": 3,'), { reason: 'bad_json', message: /^not JSON/ })
  t.equal((await refusal('[1]')).reason, 'not_v3')
  t.same(await refusal('{"version":2,"sources":[],"mappings":""}'), {
    reason: 'not_v3',
    message: 'version is 2, not 3',
  })
  t.equal((await refusal('{"version":3,"sections":[]}')).reason, 'not_v3')
  t.equal((await refusal('{"version":3,"sources":"a.ts","mappings":""}')).reason, 'not_v3')
  t.equal((await refusal('{"version":3,"sources":[],"names":[1],"mappings":""}')).reason, 'not_v3')
  t.equal((await refusal('{"version":3,"sources":[]}')).reason, 'not_v3')
})

t.test('invalid VLQ in mappings is refused at its offset, never decoded into garbage', async t => {
  const map = (mappings: string) => JSON.stringify({ version: 3, sources: ['a.ts'], names: ['x'], mappings })
  t.same(await refusal(map('AAAA,AA!A')), { reason: 'bad_mappings', message: '"!" at 7 is not a VLQ digit' })
  t.same(await refusal(map('AAAA;AAAg')), { reason: 'bad_mappings', message: 'a VLQ value ends unfinished at 9' })
  t.same(await refusal(map('AAAA,AA')), { reason: 'bad_mappings', message: 'a segment of 2 fields at 7 (1, 4 or 5)' })
  t.same(await refusal(map('AAAA,,AAAA')), { reason: 'bad_mappings', message: 'an empty segment at 5' })
  t.same(await refusal(map('ggggggggB')), { reason: 'bad_mappings', message: 'a VLQ value over 32 bits at 7' })
  t.same(await refusal(map('AAAAé')), { reason: 'bad_mappings', message: '"é" at 4 is not a VLQ digit' })
  // A valid one for contrast: one segment per line, empty lines allowed.
  const ok = await parseSourceMap(map('AAAA;;AACAA'), LIMITS)
  t.equal(ok.segments, 2)
  t.same(originalAt(ok, 2, 0), { source: 'a.ts', line: 2, column: 1, name: 'x' })
})

t.test('100,000 sources: refused before trace-mapping resolves them', async t => {
  const text = JSON.stringify({
    version: 3,
    sources: Array.from({ length: 100_000 }, (_, i) => `webpack://app/./src/module-${i}/index.ts`),
    mappings: 'AAAA',
  })
  // The reason shows the sources were not resolved; how long the refusal takes is bench/sourcemap-refusals.ts.
  t.same(await refusal(text), { reason: 'too_many_sources', message: '100000 sources (at most 10000)' })
})

t.test('10 million mapping segments: refused at the segment bound, in bounded memory', async t => {
  // The smallest segments there are ("A," : 2 characters each): 20 MB of mappings.
  const text = `{"version":3,"sources":["a.ts"],"names":[],"mappings":"${'A,'.repeat(10_000_000 - 1)}A"}`
  t.equal(text.length, 20_000_056, 'the smallest segments: 2 characters each')
  global.gc?.()
  const heapBefore = process.memoryUsage().heapUsed
  let peak = heapBefore
  const sample = async () => {
    peak = Math.max(peak, process.memoryUsage().heapUsed)
  }
  const r = await refusal(text, LIMITS, sample).finally(sample)
  t.same(r, {
    reason: 'too_many_segments',
    message:
      'the map decodes to more than 67108864 bytes (over 0 lines and 671078 segments in its mappings, about 64 and 100 bytes each)',
  })
  // Nothing was parsed or decoded: the scan of the text stops at the bound (671,078 segments beside
  // one line and the map itself) in its first slices.
  // Decoding all 10 million would take seconds and about 1 GB of heap; the time is bench/sourcemap-refusals.ts.
  // The parsed JSON holds a second 20 MB copy of the mappings while it is checked; 96 MB is a tenth
  // of what decoding them would take.
  const grew = (peak - heapBefore) / 1048576
  t.ok(grew < 96, `heap grew ${grew.toFixed(0)} MB at most while refusing it`)
})

t.test('the segment bound follows the limits given (the cache bound in the daemon)', async t => {
  const text = JSON.stringify({ version: 3, sources: ['a.ts'], mappings: syntheticMappings(100, 10, 1, 0) })
  // 1,000 segments on 100 lines, one source of 4 characters: exactly 1024 + 48 + 16 + 100,000 + 6,400 bytes.
  const exact = 1024 + 48 + 16 + 1000 * SEGMENT_BYTES + 100 * LINE_BYTES
  t.equal((await refusal(text, { maxSources: 10, maxBytes: exact - 1 })).reason, 'too_many_segments')
  const map = await parseSourceMap(text, { maxSources: 10, maxBytes: exact })
  t.equal(map.segments, 1000)
  t.equal(map.bytes, exact)
})

t.test(
  'a map of empty lines, of names or of JSON that parses large: refused before it is decoded or parsed',
  async t => {
    // Each near the 16 MiB map cap: unbounded, 16 million empty lines held about 700 MB of heap, 5
    // million names about 120 MB, 5 million `{}` about 300 MB in JSON.parse alone.
    const cap = 16 * 1024 * 1024
    // head + piece repeated + tail, as close to the cap as the piece allows; flat, as a fetched map is.
    const atCap = (head: string, piece: string, tail: string) =>
      Buffer.from(head + piece.repeat(Math.floor((cap - head.length - tail.length) / piece.length)) + tail).toString()
    const cases: [string, string, { reason: string; message: RegExp | string }][] = [
      [
        'empty lines',
        atCap('{"version":3,"sources":["a.ts"],"names":[],"mappings":"', ';', '"}'),
        {
          reason: 'too_many_segments',
          message:
            'the map decodes to more than 67108864 bytes (over 1048560 lines and 0 segments in its mappings, about 64 and 100 bytes each)',
        },
      ],
      [
        'names',
        atCap('{"version":3,"sources":["a.ts"],"mappings":"AAAA","names":[', '"",', '""]}'),
        { reason: 'too_many_segments', message: `over ${MAX_JSON_VALUES} JSON values (names, sources, numbers)` },
      ],
      [
        'numbers',
        atCap('{"version":3,"sources":["a.ts"],"mappings":"AAAA","x":[', '0.5,', '0]}'),
        { reason: 'too_many_segments', message: `over ${MAX_JSON_VALUES} JSON values (names, sources, numbers)` },
      ],
      [
        'objects',
        atCap('{"version":3,"sources":["a.ts"],"mappings":"AAAA","x":[', '{},', '{}]}'),
        { reason: 'not_v3', message: 'over 10000 objects and arrays (a map has a few)' },
      ],
    ]
    for (const [name, text, want] of cases) {
      t.ok(text.length <= cap && text.length > cap - 64, `${name}: ${text.length} characters, at the cap`)
      global.gc?.()
      const heapBefore = process.memoryUsage().heapUsed
      let peak = heapBefore
      const sample = async () => {
        peak = Math.max(peak, process.memoryUsage().heapUsed)
      }
      t.match(await refusal(text, LIMITS, sample).finally(sample), want, name)
      // Refused by the scan of the text, before JSON.parse: nothing is allocated besides the text.
      // Measured 0.0 MB on Node 20 (16 MB for the lines when JSON.parse ran first).
      const grew = (peak - heapBefore) / 1048576
      t.ok(grew < 24, `${name}: heap grew ${grew.toFixed(1)} MB at most while refusing it`)
    }
    // Lines count toward the bound as segments do: one segment per line costs both.
    const perLine = `{"version":3,"sources":["a.ts"],"names":[],"mappings":"${'AAAA;'.repeat(99)}AAAA"}`
    const limits = { maxSources: 10, maxBytes: 1024 + 48 + 16 + 100 * (SEGMENT_BYTES + LINE_BYTES) }
    t.equal((await parseSourceMap(perLine, limits)).bytes, limits.maxBytes)
    t.equal((await refusal(perLine, { ...limits, maxBytes: limits.maxBytes - 1 })).reason, 'too_many_segments')
  },
)

t.test('a deeply nested version, and any refusal: a clear reason that never quotes the map', async t => {
  const nested = `{"version":${'['.repeat(100_000)}${']'.repeat(100_000)},"sources":[],"mappings":""}`
  t.same(await refusal(nested), { reason: 'not_v3', message: 'nested over 32 levels deep at 42' })
  // Shallow enough to parse: named by its kind, not stringified.
  t.same(await refusal('{"version":[[["x"]]],"sources":[],"mappings":""}'), {
    reason: 'not_v3',
    message: 'version is an array, not 3',
  })
  t.same(await refusal('{"version":"SECRET-ANSWER","sources":[],"mappings":""}'), {
    reason: 'not_v3',
    message: 'version is a string of 13 characters, not 3',
  })
  // V8's own message quotes the text ("<html>SECRET..." is not valid JSON): only the offset is kept.
  const html = await refusal('<html>SECRET-ANSWER from an in-VM service</html>')
  t.equal(html.reason, 'bad_json')
  t.notMatch(html.message, /SECRET|html/)
  t.match(html.message, /^not JSON( \(at offset \d+\))?$/)
})

t.test('Debug IDs are read from debugId (or debug_id), lower case; anything else is none', async t => {
  const base = { version: 3, sources: [], mappings: '' }
  const id = '3A4B5C6D-1111-4222-8333-944455556666'
  t.equal((await parseSourceMap(JSON.stringify({ ...base, debugId: id }), LIMITS)).debugId, id.toLowerCase())
  t.equal((await parseSourceMap(JSON.stringify({ ...base, debug_id: id }), LIMITS)).debugId, id.toLowerCase())
  t.equal((await parseSourceMap(JSON.stringify({ ...base, debugId: 'nope' }), LIMITS)).debugId, undefined)
})

t.test('a script scanned in chunks: the last sourceMappingURL comment, its Debug ID', async t => {
  const scan = (chunks: string[], max = 1 << 20) => {
    const s = new ScriptScanner(max)
    for (const c of chunks) s.push(c)
    return { refs: s.finish(), tooLarge: s.tooLarge }
  }
  const script =
    'var a=1;\n//# sourceMappingURL=old.map\nvar b=2;\n//# debugId=85314830-023F-4CF1-A267-535F4E37BB17\n//# sourceMappingURL=app.min.js.map\n'
  const whole = scan([script]).refs
  t.same(whole, { debugId: '85314830-023f-4cf1-a267-535f4e37bb17', mapRef: 'app.min.js.map' })
  // Split at every position: markers cut between chunks are still found.
  for (let i = 1; i < script.length; i++)
    t.same(scan([script.slice(0, i), script.slice(i)]).refs, whole, `split at ${i}`)
  t.same(scan(['x = "//# sourceMappingURL=not-a-comment.map"\n']).refs, {}, 'a marker inside code is not a comment')
  t.same(scan(['//@ sourceMappingURL=legacy.map']).refs, { mapRef: 'legacy.map' }, 'the legacy marker, at the very end')
  // An inline map over the bound is dropped (and said), but a later comment still counts.
  const data = `//# sourceMappingURL=data:application/json;base64,${'A'.repeat(5000)}`
  t.same(scan([data.slice(0, 3000), data.slice(3000)], 4096), { refs: {}, tooLarge: true })
  t.same(scan([data, '\n//# sourceMappingURL=later.map\n'], 4096), { refs: { mapRef: 'later.map' }, tooLarge: false })
})

t.test('a 50 MB script without a map comment is scanned in constant memory', async t => {
  const chunk = 'function f(){return 1};'.repeat(45_590) // ~1 MiB
  const s = new ScriptScanner(1 << 20)
  let most = 0
  for (let i = 0; i < 50; i++) {
    s.push(chunk)
    most = Math.max(most, s.retained)
  }
  t.same(s.finish(), {})
  t.equal(most, 64, 'only the last 64 characters are held between chunks')
  s.push('\n//# sourceMappingURL=app.js.map\n')
  t.same(s.finish(), { mapRef: 'app.js.map' })
  t.ok(s.retained < 200, `then the comment line (${s.retained} characters)`)
})

t.test('data: URLs and the SourceMap header', async t => {
  const json = '{"version":3}'
  t.equal(decodeDataUrl(`data:application/json;base64,${Buffer.from(json).toString('base64')}`), json)
  t.equal(decodeDataUrl(`data:application/json;charset=utf-8;base64,${Buffer.from(json).toString('base64')}`), json)
  t.equal(decodeDataUrl(`data:application/json,${encodeURIComponent(json)}`), json)
  t.equal(decodeDataUrl('data:application/json;base64,//79'), undefined, 'not UTF-8')
  t.equal(mapHeaderOf({ SourceMap: ' /a.map ', 'X-SourceMap': '/b.map' }), '/a.map')
  t.equal(mapHeaderOf({ 'x-sourcemap': '/b.map' }), '/b.map')
  t.equal(mapHeaderOf({ 'content-type': 'text/javascript' }), undefined)
})

t.test('the fetch rule: http(s) only; through the page only on its own private origin; else the daemon', async t => {
  const route = (u: string, page: string | undefined) => fetchRoute(new URL(u), page)
  const page = 'http://127.0.0.1:4000/shop/'
  t.same(route('file:///etc/passwd', page), {
    via: 'refused',
    refusal: { reason: 'refused_url', message: 'file: URLs are not fetched (http and https only)' },
  })
  t.same(route('chrome://settings/', page), {
    via: 'refused',
    refusal: { reason: 'refused_url', message: 'chrome: URLs are not fetched (http and https only)' },
  })
  t.same(route('http://127.0.0.1:4000/app.js.map', page), { via: 'page' }, 'the private page’s own origin')
  t.same(route('http://localhost:3000/a.map', 'http://localhost:3000/'), { via: 'page' }, 'a localhost page')
  t.same(route('http://127.0.0.1:4001/app.js.map', page), {
    via: 'refused',
    refusal: {
      reason: 'private_address',
      message: "127.0.0.1:4001 is a private address outside the page's origin (http://127.0.0.1:4000)",
    },
  })
  // A public page's own origin is fetched by the daemon: Chromium would resolve the name again
  // (and follow redirects) where the daemon cannot check it.
  t.same(route('https://shop.example/app.js.map', 'https://shop.example/'), { via: 'daemon' })
  t.same(route('https://cdn.example/app.js.map', 'https://shop.example/'), { via: 'daemon' })
  t.same(route('https://cdn.example/app.js.map', undefined), { via: 'daemon' })
  t.same(route('http://10.1.2.3/app.js.map', 'https://shop.example/'), {
    via: 'refused',
    refusal: {
      reason: 'private_address',
      message: "10.1.2.3 is a private address outside the page's origin (https://shop.example)",
    },
  })
  t.same(route('http://10.1.2.3/app.js.map', undefined), {
    via: 'refused',
    refusal: { reason: 'private_address', message: '10.1.2.3 is a private address' },
  })
  // Every way of writing an address inside the VM, as a map URL on a public page (the URL parser
  // normalises the IPv4 forms first: 127.1, 0x7f.1 and 2130706433 are 127.0.0.1).
  const inside = [
    'http://localhost/',
    'http://localhost./',
    'http://LOCALHOST../',
    'http://app.localhost/',
    'http://app.localhost./',
    'http://localhost.localdomain/',
    'http://localhost6./',
    'http://127.1/',
    'http://0x7f.1/',
    'http://2130706433/',
    'http://127.255.255.254/',
    'http://0.0.0.0/',
    'http://0/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.1.1/',
    'http://169.254.169.254/',
    'http://100.64.0.1/',
    'http://192.0.0.8/',
    'http://224.0.0.1/',
    'http://255.255.255.255/',
    'http://[::1]/',
    'http://[::]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::127.0.0.1]/',
    'http://[64:ff9b::10.0.0.1]/',
    'http://[2002:7f00:1::]/',
    'http://[2001:0:4136:e378::1]/',
    'http://[fd00::1]/',
    'http://[fc00::1]/',
    'http://[fe80::1]/',
    'http://[fec0::1]/',
    'http://[ff02::1]/',
    'http://[100::1]/',
  ]
  t.same(
    inside.filter(u => route(u, 'https://shop.example/').via !== 'refused'),
    [],
    'every form refused',
  )
  const outside = [
    'http://8.8.8.8/',
    'http://172.32.0.1/',
    'http://100.128.0.1/',
    'http://192.0.2.1/',
    'http://cdn.example/',
    'http://localhost.example/',
    'http://mylocalhost/',
    'http://[2001:db8::1]/',
    'http://[2606:4700::1111]/',
    'http://[::ffff:808:808]/',
    'http://[2002:808:808::]/',
  ]
  t.same(
    outside.filter(u => route(u, 'https://shop.example/').via !== 'daemon'),
    [],
    'public addresses and names go to the daemon (names checked when it connects)',
  )
  t.equal(isLocalName('a.b.localhost..'), true)
  t.equal(isLocalName('localhostx'), false)
  // Resolver answers: anything that does not parse is not public (the rule fails closed).
  t.same(
    ['93.184.216.34', '2606:4700::1111', '::ffff:93.184.216.34'].filter(a => !isPublicAddress(a)),
    [],
  )
  t.same(
    ['127.0.0.1', '::1', '::ffff:127.0.0.1', 'fe80::1%eth0', '', 'not-an-ip', '1.2.3', '::ffff:1.2.3.4.5'].filter(a =>
      isPublicAddress(a),
    ),
    [],
  )
})

t.test('frames mapped with their functions’ names from the call site below', async t => {
  // Generated line 0: a function "a" (at 10) calls "b" at column 20; b calls c at column 40; the map
  // names the calls' tokens.
  const text = JSON.stringify({
    version: 3,
    sources: ['src/app.ts'],
    names: ['inner', 'outer'],
    // col 0 -> 1:0; col 20 -> 5:2 named "inner" (the call of inner); col 40 -> 9:4 named "outer"
    mappings: 'AAAA,oBAIEA,oBAIEC',
  })
  const map = await parseSourceMap(text, LIMITS)
  const url = 'https://shop.example/app.min.js'
  const stack = {
    callFrames: [
      { functionName: 'c', scriptId: '1', url, lineNumber: 0, columnNumber: 0 }, // inside inner (called at 20)
      { functionName: 'b', scriptId: '1', url, lineNumber: 0, columnNumber: 20 }, // inside outer (called at 40)
      { functionName: 'a', scriptId: '1', url, lineNumber: 0, columnNumber: 40 }, // the outermost: no call site below
      { functionName: 'x', scriptId: '1', url: 'https://other.example/x.js', lineNumber: 3, columnNumber: 1 },
    ],
  }
  const mapped = mapStack(stack, u => (u === url ? map : undefined))!
  t.same(
    mapped.callFrames.map(f => f.original ?? null),
    [
      { source: 'src/app.ts', line: 1, column: 1, name: 'inner' },
      { source: 'src/app.ts', line: 5, column: 3, name: 'outer' },
      { source: 'src/app.ts', line: 9, column: 5 },
      null,
    ],
  )
  t.same(mapped.callFrames[0], { ...stack.callFrames[0], original: mapped.callFrames[0]!.original }, 'raw fields kept')
  t.equal(Object.prototype.hasOwnProperty.call(stack.callFrames[0], 'original'), false, 'the input is not changed')
  t.equal(
    mapStack(mapped, u => (u === url ? map : undefined)),
    undefined,
    'frames mapped once stay as they are',
  )
  const masked = mapStack(
    { callFrames: [{ functionName: 'c', scriptId: '1', url, lineNumber: 0, columnNumber: 0 }] },
    () => map,
    s => `masked:${s}`,
  )
  t.equal(masked!.callFrames[0]!.original!.source, 'src/app.ts', 'plain paths are not URLs to mask')
  t.ok(isMappable('console_error', { stack_trace: stack }))
  t.ok(isMappable('console_log', { level: 'warning', stack_trace: stack }))
  t.notOk(isMappable('console_log', { level: 'log', stack_trace: stack }), 'console.log stacks are left alone')
  t.notOk(isMappable('console_error', {}))
})

t.test('a position a map points nowhere (a source past `sources`, a negative line) maps to nothing', async t => {
  const text = (mappings: string) => JSON.stringify({ version: 3, sources: ['a.ts'], names: [], mappings })
  // Segments [0, 5, 0, 0] (source index 5 of 1) and [0, 0, -1, 0] (line -1): valid VLQ, no place.
  const pastSources = await parseSourceMap(text('AKAA'), LIMITS)
  const negativeLine = await parseSourceMap(text('AADA'), LIMITS)
  t.equal(originalAt(pastSources, 0, 0), undefined)
  t.equal(originalAt(negativeLine, 0, 0), undefined)
  const stack = {
    callFrames: [{ functionName: 'f', scriptId: '1', url: 'http://x/a.js', lineNumber: 0, columnNumber: 0 }],
  }
  t.equal(
    mapStack(stack, () => pastSources),
    undefined,
    'the frame stays raw',
  )
  t.equal(
    mapStack(stack, () => negativeLine),
    undefined,
    'the frame stays raw',
  )
})

t.test("a frame's name comes from its caller's token only when a segment starts at the call's column", async t => {
  // Line 0: [0, 0, 0, 0, 0] names "__bogusEarlierToken"; [10, 0, +1, 0] has no name; [20, 0, +1, 0, +1] names "realCall".
  const map = await parseSourceMap(
    JSON.stringify({
      version: 3,
      sources: ['a.ts'],
      names: ['__bogusEarlierToken', 'realCall'],
      mappings: 'AAAAA,UACA,UACAC',
    }),
    LIMITS,
  )
  const frames = (callerColumn: number) => ({
    callFrames: [
      { functionName: 'BaseLayout.render', scriptId: '1', url: 'http://x/a.js', lineNumber: 0, columnNumber: 12 },
      { functionName: 'caller', scriptId: '1', url: 'http://x/a.js', lineNumber: 0, columnNumber: callerColumn },
    ],
  })
  // The call at column 5 has no segment of its own: the nearest before it names an earlier token.
  const off = mapStack(frames(5), () => map)!
  t.same(off.callFrames[0]!.original, { source: 'a.ts', line: 2, column: 1 }, 'no name: readers keep the raw one')
  const on = mapStack(frames(20), () => map)!
  t.same(off.callFrames[0]!.functionName, 'BaseLayout.render')
  t.same(on.callFrames[0]!.original, { source: 'a.ts', line: 2, column: 1, name: 'realCall' })
})
