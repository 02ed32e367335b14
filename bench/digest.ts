// The digest of a synthesized 30-minute agent session (bench/agent-session.ts: 10,000 commands,
// 50,000 page, network and console events) stored in a real event log and asked for through the
// real route over HTTP, as an agent asks. Goal: <= 1 s. Baselines of the same process, interleaved
// round by round: reading the same window from the log page by page (what any reader pays) and
// JSON.parse of every envelope once; then the digest's own work on records already in memory.
//   npx tsx bench/digest.ts        (COMMANDS=10000 EVENTS=50000 RUNS=5)
import { performance } from 'node:perf_hooks'
import type { Category, TelemetryEvent } from '../src/events/index.js'
import { EventLog } from '../src/store/event-log.js'
import { createApiApp } from '../src/api/app.js'
import { startApiServer } from '../src/api/server.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { TokenSet } from '../src/identity/tokens.js'
import { registerDigestRoutes } from '../src/api/routes/digest.js'
import { DigestCollector, renderDigest } from '../src/digest/index.js'
import { agentSession } from './agent-session.js'
import { fmt, median, withTempDir } from './common.js'

const COMMANDS = Number(process.env.COMMANDS ?? 10_000)
const EVENTS = Number(process.env.EVENTS ?? 50_000)
const RUNS = Number(process.env.RUNS ?? 5)

await withTempDir(async dir => {
  const lines = agentSession(COMMANDS, EVENTS)
  const log = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
  for (const l of lines) {
    const event = (JSON.parse(l) as { event: TelemetryEvent }).event
    log.append(event, JSON.stringify(event))
  }
  await log.flush()
  const tokens = new TokenSet()
  tokens.add('bench-token', ['read'])
  const pipeline = new Pipeline({ log })
  const app = createApiApp({
    browserId: 'bench',
    log,
    pipeline,
    tokens,
    routes: [r => registerDigestRoutes(r, { reader: log, flush: () => log.flush() })],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  const first = log.firstSeq
  const since = new Date(Math.floor(JSON.parse(lines[0]!).event.ts / 1000) - 1000).toISOString()
  const url = `${server.url}/browsers/bench/telemetry/digest?since=${encodeURIComponent(since)}&until=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`
  const route: number[] = []
  const read: number[] = []
  const parse: number[] = []
  const own: number[] = []
  let chars = 0
  let events = 0
  for (let r = 0; r < RUNS; r++) {
    let t0 = performance.now()
    const res = await fetch(url, { headers: { authorization: 'Bearer bench-token' } })
    const md = await res.text()
    route.push(performance.now() - t0)
    if (res.status !== 200) throw new Error(`digest answered ${res.status}: ${md}`)
    chars = md.length
    t0 = performance.now()
    const records: { seq: number; category: Category; json: string }[] = []
    for (let cursor = first; ;) {
      const page = await log.read({ order: 'asc', cursor, limit: 2000, maxBytes: 4 * 1024 * 1024 })
      for (const rec of page.records) records.push(rec)
      if (!page.hasMore || page.records.length === 0) break
      cursor = page.nextCursor
    }
    read.push(performance.now() - t0)
    t0 = performance.now()
    for (const rec of records) JSON.parse(rec.json)
    parse.push(performance.now() - t0)
    t0 = performance.now()
    const c = new DigestCollector()
    for (const rec of records) c.add(rec)
    renderDigest(c.finish({ since_ts: 0, until_ts: Date.now() * 1000 })!)
    own.push(performance.now() - t0)
    events = c.events
  }
  await server.close()
  await log.close()
  const m = median(route)
  process.stdout.write(
    `${events} events in the window; digest ${chars} characters\n` +
      `route over HTTP: ${fmt(m, 0)} ms median of ${RUNS} (runs ${route.map(x => fmt(x, 0)).join(', ')}); goal <= 1000 ms: ${m <= 1000 ? 'met' : 'NOT met'}\n` +
      `baselines: log read ${fmt(median(read), 0)} ms, JSON.parse of every envelope ${fmt(median(parse), 0)} ms\n` +
      `digest work on records in memory: ${fmt(median(own), 0)} ms; route / (read + parse) ${fmt(m / (median(read) + median(parse)))}\n`,
  )
})
