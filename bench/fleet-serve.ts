// Benchmark: drain one browser's events in pages of 100 with the real client (@onkernel/sdk)
// through `fleet serve` (the fleet stream in NATS JetStream) vs through the VM's own API over the
// log that shipped them, in the same run, interleaved; prints the ratio fleet/VM (goal >= 0.5).
// Then the cost of a seek by seq at random cursors: JetStream requests and ms per seek.
// OTHERS=k ships k other browsers of the same size into the same stream first, interleaved
// (a browser that is 1/(k+1) of the stream). Needs nats-server.
//   N=50000 RUNS=3 OTHERS=0 SEEKS=50 npx tsx bench/fleet-serve.ts
import Kernel from '@onkernel/sdk'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { loadavg } from 'node:os'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import { startApiServer } from '../src/api/server.js'
import { startFleetServe } from '../src/fleet/serve.js'
import { silentLogger } from '../src/log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { Shipper } from '../src/ship/shipper.js'
import type { EventLog } from '../src/store/event-log.js'
import { startNatsServer } from '../test/helpers/nats.js'
import { filledLog, fmt, median, withTempDir } from './common.js'
import { threadsCpuMs } from './watchers.js'

const N = Number(process.env.N ?? 50_000)
const RUNS = Number(process.env.RUNS ?? 3)
const OTHERS = Number(process.env.OTHERS ?? 0)
const SEEKS = Number(process.env.SEEKS ?? 50)
const TOKEN = 'bench-token'
const BROWSER = 'bench-vm'
const LIMITS = { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 }

async function ship(url: string, log: EventLog, browserId: string): Promise<Shipper> {
  const s = new Shipper({
    log,
    browserId,
    nats: { servers: [url] },
    stream: 'BT',
    subjectPrefix: 'telemetry',
    limits: LIMITS,
  })
  await s.start()
  return s
}

async function acked(shippers: Shipper[], logs: EventLog[]): Promise<void> {
  while (shippers.some((s, i) => s.ackedSeq < logs[i]!.lastSeq)) await new Promise(r => setTimeout(r, 50))
}

/** One paged drain; its CPU in this process (the client and the server it reads) and in nats-server. */
async function drain(
  client: Kernel,
  natsPid: number,
): Promise<{ ms: number; n: number; cpuMs: number; natsCpuMs: number }> {
  const start = performance.now()
  const cpu0 = process.cpuUsage()
  const nats0 = threadsCpuMs(natsPid)
  let n = 0
  for await (const _ of client.browsers.telemetry.events(BROWSER, { since: '24h', limit: 100 } as never)) n++
  const cpu = process.cpuUsage(cpu0)
  return {
    ms: performance.now() - start,
    n,
    cpuMs: (cpu.user + cpu.system) / 1000,
    natsCpuMs: threadsCpuMs(natsPid) - nats0,
  }
}

const nats = await startNatsServer()
try {
  await withTempDir(async dir => {
    console.log(
      `load average at start: ${loadavg()
        .map(l => l.toFixed(2))
        .join(' ')}`,
    )
    // Other browsers first, then this one, shipped at the same time so their messages interleave.
    const logs: EventLog[] = []
    const ids: string[] = []
    for (let k = 0; k < OTHERS; k++) {
      logs.push((await filledLog(join(dir, `other-${k}`), N)).log)
      ids.push(`other-${k}`)
    }
    const { log } = await filledLog(dir, N)
    logs.push(log)
    ids.push(BROWSER)
    const t0 = performance.now()
    const shippers = await Promise.all(logs.map((l, i) => ship(nats.url, l, ids[i]!)))
    await acked(shippers, logs)
    console.log(
      `shipped ${fmt((N * logs.length) / 1000, 0)}k events (${logs.length} browsers) in ${fmt((performance.now() - t0) / 1000, 1)} s`,
    )
    await Promise.all(shippers.map(s => s.stop()))

    const tokens = new TokenSet()
    tokens.add(TOKEN, ALL_SCOPES)
    const app = createApiApp({ browserId: BROWSER, log, pipeline: new Pipeline({ log }), tokens })
    const vm = await startApiServer(app, { host: '127.0.0.1', port: 0 })
    const tokenFile = join(dir, 'tokens')
    await writeFile(tokenFile, `${TOKEN} read\n`)
    const fleet = await startFleetServe(
      {
        listen: { host: '127.0.0.1', port: 0 },
        tokenFile,
        nats: { servers: [nats.url] },
        stream: 'BT',
        subjectPrefix: 'telemetry',
        requestTimeoutMs: 5000,
        maxStreamClients: 4,
        logLevel: 'silent',
      },
      { logger: silentLogger },
    )
    await fleet.source.connected(10_000)
    const vmClient = new Kernel({ apiKey: TOKEN, baseURL: vm.url, maxRetries: 0, timeout: 60_000 })
    const fleetClient = new Kernel({ apiKey: TOKEN, baseURL: fleet.url, maxRetries: 0, timeout: 60_000 })

    const vmRates: number[] = []
    const fleetRates: number[] = []
    const vmCpuUs: number[] = []
    const fleetCpuUs: number[] = []
    const natsCpuUs: number[] = []
    for (let run = 0; run < RUNS; run++) {
      const a = await drain(vmClient, nats.proc!.pid!)
      const b = await drain(fleetClient, nats.proc!.pid!)
      vmCpuUs.push((a.cpuMs * 1000) / N)
      fleetCpuUs.push((b.cpuMs * 1000) / N)
      natsCpuUs.push((b.natsCpuMs * 1000) / N)
      if (a.n !== N || b.n !== N) throw new Error(`drained ${a.n} (VM) and ${b.n} (fleet serve), expected ${N}`)
      vmRates.push((N / a.ms) * 1000)
      fleetRates.push((N / b.ms) * 1000)
      console.log(
        `run ${run + 1}: VM ${fmt(vmRates[run]!, 0)} events/s, fleet serve ${fmt(fleetRates[run]!, 0)} events/s`,
      )
    }
    console.log(
      `paged drain (pages of 100, ${N} events): VM ${fmt(median(vmRates), 0)}/s, fleet serve ${fmt(median(fleetRates), 0)}/s, ratio ${fmt(median(fleetRates) / median(vmRates))} (goal >= 0.5)`,
    )
    console.log(
      `CPU per drained event: VM path ${fmt(median(vmCpuUs), 1)} µs (client + API), fleet path ${fmt(median(fleetCpuUs), 1)} µs ` +
        `(client + fleet serve) + nats-server ${fmt(median(natsCpuUs), 1)} µs; fleet serve with its client: ` +
        `${fmt(1e6 / median(fleetCpuUs), 0)} events/s per core, nats-server ${fmt(1e6 / median(natsCpuUs), 0)} events/s per core`,
    )

    // One seek by seq: a page of one event at a random cursor; the requests it made.
    const reader = fleet.source.browser(BROWSER)
    const stats = fleet.source.stats
    const info = await fleet.source.log.stream.bounds()
    const gets: number[] = []
    const ms: number[] = []
    for (let i = 0; i < SEEKS; i++) {
      const cursor = 1 + Math.floor(Math.random() * N)
      const g0 = stats.gets
      const t = performance.now()
      await reader.seek('seq', cursor, info.first, info.last + 1)
      ms.push(performance.now() - t)
      gets.push(stats.gets - g0)
    }
    console.log(
      `seek by seq over ${info.last - info.first + 1} stream messages: ${fmt(median(gets), 0)} requests (max ${Math.max(...gets)}), ${fmt(median(ms))} ms median (${SEEKS} seeks)`,
    )
    console.log(
      `load average at end: ${loadavg()
        .map(l => l.toFixed(2))
        .join(' ')}`,
    )
    await fleet.close()
    await vm.close()
    for (const l of logs) await l.close()
  })
} finally {
  await nats.dispose()
}
