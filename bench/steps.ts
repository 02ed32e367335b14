// Agent steps: latency of POST /telemetry/steps + /end at 100 steps a second through the real API
// app and store, against publishing one event (POST /telemetry/events, the same app, the same rate)
// as the baseline; and BrowserTelemetry.startStep/endStep answered by the CDP proxy against a
// command the proxy relays to a browser stand-in that answers at once (the relay's own round trip).
// Client and servers share this process, so the figures include the client's own work. Prints the
// median of RUNS runs of p50 and p99 per side and the ratio.
//
//   npx tsx bench/steps.ts            STEPS=1000 RUNS=5 npx tsx bench/steps.ts
import { WebSocket, WebSocketServer } from 'ws'
import { createApiApp } from '../src/api/app.js'
import { TokenSet } from '../src/identity/tokens.js'
import { startApiServer } from '../src/api/server.js'
import { registerIngestRoutes } from '../src/api/routes/ingest.js'
import { registerStepRoutes } from '../src/api/routes/steps.js'
import { StepRegistry } from '../src/agent/step-registry.js'
import { CdpProxy } from '../src/proxy/cdp-proxy.js'
import { join } from 'node:path'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { median, withTempDir } from './common.js'

const STEPS = Number(process.env.STEPS ?? 500)
const RUNS = Number(process.env.RUNS ?? 5)
const PACE_MS = 10 // 100 steps (200 calls) a second

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))

async function main(): Promise<void> {
  await withTempDir(async dir => {
    const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0 })
    const pipeline = new Pipeline({ log, categories: CONFIGURABLE_CATEGORIES })
    const steps = new StepRegistry({ emit: pipeline.emit })
    const tokens = new TokenSet()
    tokens.add('tok', ['publish'])
    const app = createApiApp({
      browserId: 'br',
      log,
      pipeline,
      tokens,
      routes: [r => registerStepRoutes(r, { steps }), r => registerIngestRoutes(r, { pipeline })],
    })
    const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
    const post = async (path: string, body: object): Promise<Record<string, unknown>> => {
      const res = await fetch(`${server.url}/browsers/br/telemetry${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer tok' },
        body: JSON.stringify(body),
      })
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`)
      return (await res.json()) as Record<string, unknown>
    }
    const timed = async (fn: () => Promise<unknown>) => {
      const t0 = performance.now()
      const r = await fn()
      return { ms: performance.now() - t0, r }
    }

    // A browser stand-in that answers every command at once, behind the real proxy.
    const browser = new WebSocketServer({ host: '127.0.0.1', port: 0 })
    browser.on('connection', ws =>
      ws.on('message', d => {
        const { id } = JSON.parse(d.toString()) as { id: number }
        ws.send(`{"id":${id},"result":{}}`)
      }),
    )
    await new Promise(r => browser.once('listening', r))
    const upstream = `ws://127.0.0.1:${(browser.address() as { port: number }).port}/devtools/browser/x`
    const proxy = new CdpProxy({
      listen: { host: '127.0.0.1', port: 0 },
      upstream: () => upstream,
      emit: pipeline.emit,
      steps,
    })
    const { port } = await proxy.start()
    const ws = new WebSocket(`ws://127.0.0.1:${port}/devtools/browser/x`)
    await new Promise(r => ws.once('open', r))
    let nextId = 0
    const waiting = new Map<number, (m: Record<string, unknown>) => void>()
    ws.on('message', d => {
      const m = JSON.parse(d.toString()) as { id: number }
      waiting.get(m.id)?.(m)
      waiting.delete(m.id)
    })
    const cdp = (method: string, params: object = {}) =>
      new Promise<Record<string, unknown>>(resolve => {
        const id = ++nextId
        waiting.set(id, resolve)
        ws.send(JSON.stringify({ id, method, params }))
      })

    const http = { steps: [] as number[][], events: [] as number[][] }
    const sock = { steps: [] as number[][], relayed: [] as number[][] }
    for (let run = 0; run < RUNS; run++) {
      const s: number[] = []
      const e: number[] = []
      const c: number[] = []
      const r: number[] = []
      // Interleaved call by call: each baseline call right after the call it is compared with.
      for (let i = 0; i < STEPS; i++) {
        const start = await timed(() => post('/steps', { name: `step ${i}`, attributes: { i } }))
        s.push(start.ms)
        e.push(
          (
            await timed(() =>
              post('/events', {
                type: 'live_view_connect',
                source: { kind: 'local_process' },
                data: { session_id: `s${i}` },
              }),
            )
          ).ms,
        )
        s.push((await timed(() => post(`/steps/${(start.r as { step_id: string }).step_id}/end`, {}))).ms)
        e.push(
          (
            await timed(() =>
              post('/events', {
                type: 'live_view_disconnect',
                source: { kind: 'local_process' },
                data: { session_id: `s${i}`, duration_ms: 1 },
              }),
            )
          ).ms,
        )
        const cs = await timed(() => cdp('BrowserTelemetry.startStep', { name: `cdp ${i}` }))
        c.push(cs.ms)
        r.push((await timed(() => cdp('Runtime.evaluate', { expression: '1' }))).ms)
        c.push(
          (
            await timed(() =>
              cdp('BrowserTelemetry.endStep', { stepId: (cs.r as { result: { stepId: string } }).result.stepId }),
            )
          ).ms,
        )
        r.push((await timed(() => cdp('Runtime.evaluate', { expression: '2' }))).ms)
        await sleep(PACE_MS)
      }
      http.steps.push(s)
      http.events.push(e)
      sock.steps.push(c)
      sock.relayed.push(r)
    }
    const row = (name: string, runs: number[][]) => {
      const p50 = median(runs.map(x => quantile(x, 0.5)))
      const p99 = median(runs.map(x => quantile(x, 0.99)))
      console.log(`${name.padEnd(44)} p50 ${p50.toFixed(3)} ms   p99 ${p99.toFixed(3)} ms`)
      return p99
    }
    console.log(`${STEPS} steps per run at ${1000 / PACE_MS} steps/s, median of ${RUNS} runs`)
    const a = row('HTTP step start/end', http.steps)
    const b = row('HTTP publish event (baseline)', http.events)
    const c = row('BrowserTelemetry.startStep/endStep (proxy)', sock.steps)
    const d = row('relayed command (baseline)', sock.relayed)
    console.log(
      `p99 ratio HTTP steps / publish ${(a / b).toFixed(2)}; BrowserTelemetry / relayed ${(c / d).toFixed(2)}`,
    )
    ws.close()
    await proxy.close()
    browser.close()
    steps.close()
    await server.close(500)
    await log.close()
  })
}

await main()
