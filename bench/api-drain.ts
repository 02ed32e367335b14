// Benchmark: drain N stored events (default 1,000,000) through HTTP pages of 100 with
// the real client (@onkernel/sdk, `for await` over client.browsers.telemetry.events) vs raw
// EventLog.read of the same pages, in the same run.
// The daemon side (store + API server) runs in a child process, as in production; the raw baseline
// runs inside that child, the client in this process. Prints medians of RUNS runs and the ratio
// http/raw throughput (goal >= 0.25).
//   N=1000000 RUNS=5 npx tsx bench/api-drain.ts
import Kernel from '@onkernel/sdk'
import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { fmt, median, realisticEvent, withTempDir } from './common.js'

const N = Number(process.env.N ?? 1_000_000)
const RUNS = Number(process.env.RUNS ?? 5)
const PAGE = 100
const TOKEN = 'bench-token'
const BROWSER = 'bench-browser'

type Msg = { kind: string; [k: string]: unknown }

function next(child: ChildProcess, kind: string): Promise<Msg> {
  return new Promise(resolve => {
    const on = (m: Msg) => {
      if (m.kind === kind) {
        child.off('message', on)
        resolve(m)
      }
    }
    child.on('message', on)
  })
}

/** Child: seed the log, serve it, answer {kind:'raw'} with the time of a raw drain of the same pages. */
async function daemon(dir: string): Promise<void> {
  const { createApiApp } = await import('../src/api/app.js')
  const { ALL_SCOPES, TokenSet } = await import('../src/identity/tokens.js')
  const { startApiServer } = await import('../src/api/server.js')
  const { CONFIGURABLE_CATEGORIES } = await import('../src/events/index.js')
  const { Pipeline } = await import('../src/pipeline/pipeline.js')
  const { EventLog } = await import('../src/store/event-log.js')
  const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0, maxBytes: 64 * 1024 ** 3 })
  const pipeline = new Pipeline({ log, categories: CONFIGURABLE_CATEGORIES, shedding: false }) // seeding floods one page: no shedding gaps
  const t0 = performance.now()
  for (let i = 0; i < N; i++) {
    pipeline.emit(realisticEvent(i))
    if (i % 20_000 === 19_999) await log.flush() // keep the write buffer bounded while seeding
  }
  await log.flush()
  const seedS = (performance.now() - t0) / 1000
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  const app = createApiApp({ browserId: BROWSER, log, pipeline, tokens })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  process.on('message', (m: Msg) => void onMessage(m))
  async function onMessage(m: Msg): Promise<void> {
    if (m.kind === 'raw') {
      const sinceUs = Date.now() * 1000 - 24 * 3600e6
      const start = performance.now()
      let n = 0
      let page = await log.read({ order: 'asc', limit: PAGE, sinceUs })
      for (;;) {
        n += page.records.length
        if (!page.hasMore) break
        page = await log.read({ order: 'asc', limit: PAGE, cursor: page.nextCursor })
      }
      process.send!({ kind: 'raw', ms: performance.now() - start, n, rssMb: process.memoryUsage().rss / 1048576 })
    } else if (m.kind === 'stop') {
      await server.close()
      await log.close()
      process.exit(0)
    }
  }
  process.send!({
    kind: 'ready',
    url: server.url,
    seedS,
    events: log.lastSeq,
    mib: (await log.storedBytes()) / 1048576,
  })
}

if (process.argv[2] === '--daemon') {
  await daemon(process.argv[3]!)
} else {
  await withTempDir(async dir => {
    const child = fork(fileURLToPath(import.meta.url), ['--daemon', dir], { execArgv: ['--import', 'tsx'] })
    const ready = await next(child, 'ready')
    console.log(
      `daemon child seeded ${ready.events} events (~${fmt(ready.mib as number, 0)} MiB on disk) in ${fmt(ready.seedS as number, 1)} s`,
    )
    const client = new Kernel({ apiKey: TOKEN, baseURL: ready.url as string, maxRetries: 0 })
    async function http(): Promise<number> {
      let n = 0
      let last = 0
      for await (const e of client.browsers.telemetry.events(BROWSER, { since: '24h', limit: PAGE })) {
        if (e.seq !== last + 1) throw new Error(`out of order: ${e.seq} after ${last}`)
        last = e.seq
        n++
      }
      return n
    }
    const rawTimes: number[] = []
    const httpTimes: number[] = []
    for (let run = 0; run < RUNS; run++) {
      child.send({ kind: 'raw' })
      const raw = await next(child, 'raw')
      rawTimes.push(raw.ms as number)
      const t0 = performance.now()
      const n = await http()
      httpTimes.push(performance.now() - t0)
      if (raw.n !== N || n !== N) throw new Error(`drained raw=${raw.n} http=${n}, expected ${N}`)
      console.log(
        `run ${run + 1}: raw ${fmt(rawTimes[run]! / 1000)} s, http ${fmt(httpTimes[run]! / 1000)} s, daemon RSS ${fmt(raw.rssMb as number, 0)} MB`,
      )
    }
    const rawMs = median(rawTimes)
    const httpMs = median(httpTimes)
    console.log(
      `raw log.read pages of ${PAGE} (daemon process): ${fmt(N / (rawMs / 1000), 0)} events/s (median of ${RUNS})`,
    )
    console.log(
      `HTTP + real client pages of ${PAGE}:          ${fmt(N / (httpMs / 1000), 0)} events/s, ${fmt(N / PAGE / (httpMs / 1000), 0)} pages/s`,
    )
    console.log(`ratio http/raw = ${fmt(rawMs / httpMs, 3)} (goal >= 0.25)`)
    child.send({ kind: 'stop' })
    await new Promise(r => child.once('exit', r))
  })
}
