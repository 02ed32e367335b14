// Benchmark: source-mapped stacks (src/symbols). Three goals, each against a baseline of the same run:
//  1. Mapping one 30-frame stack with its map in memory (goal <= 2 ms), vs a JSON round trip of the
//     same stack (what serving a mapped event costs anyway).
//  2. A 5 MB map parsed once and then reused: parse time (sliced decode, checks) vs JSON.parse of the
//     same text; then 1,000 stacks and 1,000 stored records mapped with no second parse.
//  3. A page throwing 1,000 uncaught errors a second (each with a cause, from nested functions) from
//     one minified bundle for SECONDS: every error stored, each mapped when read through the events
//     API, daemon peak RSS (goal <= 200 MB); the same page with the bundle naming no map as the
//     baseline, alternated run by run. The compiled daemon in a child process at its deployed
//     priority with a real Chromium (test/helpers/hostile.ts), so `npm run build` first.
// Knobs: RUNS (default 5 for 1-2, 2 for 3), RATE (errors/s, 1000), SECONDS (20), ONLY (cpu | page).
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { decodedMappings } from '@jridgewell/trace-mapping'
import { parseSourceMap } from '../src/symbols/source-map.js'
import { mapStack } from '../src/symbols/frames.js'
import { SourceMaps, type ResourceLoader } from '../src/symbols/source-maps.js'
import type { StackTrace } from '../src/events/index.js'
import type { StoredRecord } from '../src/store/event-log.js'
import { runHostileCase, TOKEN, type HostileCase } from '../test/helpers/hostile.js'
import { buildStorm } from '../test/helpers/sourcemap-app.js'
import { waitFor } from '../test/helpers/http.js'
import { fmt, median } from './common.js'

const RUNS = Number(process.env.RUNS ?? 5)
const PAGE_RUNS = Number(process.env.PAGE_RUNS ?? 2)
const RATE = Number(process.env.RATE ?? 1000)
const SECONDS = Number(process.env.SECONDS ?? 20)
const ONLY = process.env.ONLY ?? ''
const root = join(import.meta.dirname, '..')
const LIMITS = { maxSources: 10_000, maxBytes: 64 * 1024 * 1024 }

/** A ~5 MB map: real libraries of this repository bundled and minified by esbuild, sources included. */
async function bigMap(dir: string): Promise<{ text: string; js: string }> {
  const libs = [
    '@sinclair/typebox',
    '@sinclair/typebox/compiler',
    'preact',
    'ajv',
    'fflate',
    '@tanstack/virtual-core',
    'axe-core',
    'yazl',
    'eventsource-parser',
    'prom-client',
    'pino',
    '@opentelemetry/api',
    '@opentelemetry/sdk-logs',
  ]
  await build({
    absWorkingDir: root,
    stdin: {
      contents: libs.map((l, i) => `import * as m${i} from '${l}'; globalThis.m${i} = m${i}`).join('\n'),
      resolveDir: root,
    },
    outfile: join(dir, 'big.min.js'),
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'iife',
    sourcemap: 'external',
    logLevel: 'silent',
  })
  return {
    text: await readFile(join(dir, 'big.min.js.map'), 'utf8'),
    js: await readFile(join(dir, 'big.min.js'), 'utf8'),
  }
}

async function cpuGoals(dir: string): Promise<void> {
  const { text, js } = await bigMap(dir)
  const url = 'https://shop.example/assets/big.min.js'
  console.log(`map: ${(text.length / 1e6).toFixed(2)} MB, script ${(js.length / 1e6).toFixed(2)} MB`)

  // 2. Parse once: the sliced decode with its checks vs JSON.parse alone, interleaved.
  const parseMs: number[] = []
  const jsonMs: number[] = []
  let parsed = await parseSourceMap(text, LIMITS)
  for (let i = 0; i < RUNS; i++) {
    let t = performance.now()
    JSON.parse(text)
    jsonMs.push(performance.now() - t)
    t = performance.now()
    parsed = await parseSourceMap(text, LIMITS, () => new Promise(r => setImmediate(r)))
    parseMs.push(performance.now() - t)
  }
  console.log(
    `parse: ${fmt(median(parseMs), 1)} ms (${parseMs.map(x => fmt(x, 0)).join(', ')}) for ${parsed.segments} segments, ~${(parsed.bytes / 1048576).toFixed(1)} MiB held; JSON.parse alone ${fmt(median(jsonMs), 1)} ms`,
  )

  // 1. A 30-frame stack at real generated positions, its map in memory.
  const lines = decodedMappings(parsed.trace)
  const positions: [number, number][] = []
  for (let l = 0; l < lines.length && positions.length < 30; l++)
    for (let s = 0; s < lines[l]!.length && positions.length < 30; s += Math.max(1, Math.floor(lines[l]!.length / 30)))
      positions.push([l, lines[l]![s]![0]])
  const stack: StackTrace = {
    callFrames: positions.map(([l, c], i) => ({
      functionName: `f${i}`,
      scriptId: '1',
      url,
      lineNumber: l,
      columnNumber: c,
    })),
  }
  const mapOf = () => parsed
  const perCall = (f: () => unknown, n = 2000) => {
    const t = performance.now()
    for (let i = 0; i < n; i++) f()
    return (performance.now() - t) / n
  }
  const mapUs: number[] = []
  const jsonUs: number[] = []
  for (let i = 0; i < RUNS; i++) {
    jsonUs.push(perCall(() => JSON.parse(JSON.stringify(stack))) * 1000)
    mapUs.push(perCall(() => mapStack(stack, mapOf)) * 1000)
  }
  const mapped = mapStack(stack, mapOf)!
  console.log(
    `map a 30-frame stack: ${fmt(median(mapUs), 1)} µs (${mapUs.map(x => fmt(x, 1)).join(', ')}), ${mapped.callFrames.filter(f => f.original).length}/30 frames mapped; JSON round trip of the stack ${fmt(median(jsonUs), 1)} µs`,
  )

  // 2b. Reused: the service learns the map once; 1,000 stacks from memory and 1,000 stored records read.
  const sm = await SourceMaps.open({
    dir: join(dir, 'sm'),
    maxMapBytes: 16 * 1048576,
    storeBytes: 256 * 1048576,
    cacheBytes: 64 * 1048576,
    fetch: true,
  })
  const loader: ResourceLoader = {
    async fetch(u, onChunk) {
      onChunk(u === url ? `${js}\n//# sourceMappingURL=big.min.js.map\n` : text)
      return { ok: true, status: 200, headers: {} }
    },
  }
  sm.want(stack, { url: 'https://shop.example/', context: {} }, loader)
  await sm.settled()
  let t = performance.now()
  for (let i = 0; i < 1000; i++) sm.mapNow(stack)
  const nowMs = performance.now() - t
  const json = JSON.stringify({
    seq: 1,
    event: {
      ts: 1,
      type: 'console_error',
      category: 'console',
      source: { kind: 'cdp' },
      data: { text: 'x', stack_trace: stack },
    },
  })
  const records: StoredRecord[] = Array.from({ length: 1000 }, (_, i) => ({
    seq: i + 1,
    ts: i,
    category: 'console',
    json,
  }))
  t = performance.now()
  await sm.mapRecords(records)
  const readMs = performance.now() - t
  console.log(
    `reused: maps parsed ${sm.cache.parsed} (once) for 1,000 stacks from memory (${fmt(nowMs, 1)} ms) and 1,000 stored records read (${fmt(readMs, 1)} ms)`,
  )
  await sm.close()
}

/** The storm page as a hostile case: stored and mapped counts in the notes. */
function stormCase(js: Buffer, map: Buffer | undefined, label: string): HostileCase {
  let done = 0
  return {
    name: label,
    pages: {
      '/': `<!doctype html><title>storm</title><script src="/storm.min.js"></script>`,
      '/storm.min.js': (_q, r) => {
        r.writeHead(200, { 'content-type': 'text/javascript' })
        r.end(js)
      },
      ...(map
        ? {
            '/storm.min.js.map': (_q, r) => {
              r.writeHead(200, { 'content-type': 'application/json' })
              r.end(map)
            },
          }
        : {}),
      '/done': (q, r) => {
        done = Number(new URL(q.url!, 'http://x').searchParams.get('n'))
        r.writeHead(200).end('ok')
      },
    },
    async run(ctx) {
      await ctx.openWatchedTab(`${ctx.site.url}?rate=${RATE}&seconds=${SECONDS}`)
      await waitFor(() => done, (SECONDS + 120) * 1000, 'the page to finish')
      // Every error read back through the events API (mapped on read where it was stored raw).
      let readErrors = 0
      let readMapped = 0
      for (let cursor: string | undefined; ;) {
        const res = await fetch(
          `${ctx.daemonUrl}/browsers/hostile/telemetry/events?category=console&limit=100&since=1h${cursor ? `&offset=${cursor}` : ''}`,
          { headers: { authorization: `Bearer ${TOKEN}` } },
        )
        const page = (await res.json()) as { event: { type: string; data: { stack_trace?: StackTrace } } }[]
        for (const e of page) {
          if (e.event.type !== 'console_error') continue
          readErrors++
          if (e.event.data.stack_trace?.callFrames[0]?.original) readMapped++
        }
        if (res.headers.get('x-has-more') !== 'true') break
        cursor = res.headers.get('x-next-offset') ?? undefined
      }
      ctx.notes.done = done
      ctx.notes.readErrors = readErrors
      ctx.notes.readMapped = readMapped
    },
    inspect(env) {
      if (env.event.type !== 'console_error') return
      notesRef.storedErrors++
      if ((env.event.data.stack_trace as StackTrace | undefined)?.callFrames[0]?.original) notesRef.storedMapped++
    },
  }
}
/** The last storm case's stored counts (inspect runs after its notes were handed back). */
const notesRef = { storedErrors: 0, storedMapped: 0 }

async function pageGoal(dir: string): Promise<void> {
  const withMap = await buildStorm(join(dir, 'app'), true)
  const bare = await buildStorm(join(dir, 'app'), false)
  const rows: Record<string, { rss: number[]; healthzP95: number[]; line: string[] }> = {
    'with map': { rss: [], healthzP95: [], line: [] },
    'no map (baseline)': { rss: [], healthzP95: [], line: [] },
  }
  const reg = {
    teardowns: [] as (() => unknown)[],
    teardown(fn: () => unknown) {
      this.teardowns.push(fn)
    },
  }
  for (let run = 0; run < PAGE_RUNS; run++) {
    for (const [label, js, map] of [
      ['with map', withMap.js, withMap.map],
      ['no map (baseline)', bare.js, undefined],
    ] as const) {
      notesRef.storedErrors = 0
      notesRef.storedMapped = 0
      const r = await runHostileCase(reg, stormCase(js, map, label))
      for (const fn of reg.teardowns.splice(0).reverse()) await fn()
      const row = rows[label]!
      row.rss.push(r.peakRssMb)
      row.healthzP95.push(r.healthz.p95Ms)
      row.line.push(
        `thrown ${r.notes.done}, stored ${notesRef.storedErrors} (${notesRef.storedMapped} mapped on capture), read ${r.notes.readErrors} (${r.notes.readMapped} mapped), gaps ${r.missing}, peak RSS ${fmt(r.peakRssMb, 1)} MB, /healthz p95 ${fmt(r.healthz.p95Ms, 0)} max ${fmt(r.healthz.maxMs, 0)} ms, ${fmt(r.elapsedMs / 1000, 1)} s`,
      )
      console.log(`${label} (run ${run + 1}): ${row.line.at(-1)}`)
    }
  }
  for (const [label, row] of Object.entries(rows))
    console.log(
      `${label}: peak RSS median ${fmt(median(row.rss), 1)} MB, /healthz p95 median ${fmt(median(row.healthzP95), 0)} ms`,
    )
}

const dir = await mkdtemp(join(tmpdir(), 'bt-bench-maps-'))
try {
  if (ONLY !== 'page') await cpuGoals(dir)
  if (ONLY !== 'cpu') await pageGoal(dir)
} finally {
  await rm(dir, { recursive: true, force: true })
}
