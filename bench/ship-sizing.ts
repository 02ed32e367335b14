// Sizing the fleet stream from a real session: the compiled daemon attached to a headless Chromium
// ships to a nats-server (JetStream, file storage, one replica) while an outside CDP client loads the
// heavy bench page (the one bench/overhead.ts loads) LOADS times, each in a fresh tab. Measured:
// events and stream bytes per page load, stream bytes per event (the stream's own accounting and
// the store directory on disk), and the nats-server's CPU per stored event (every thread, /proc).
// Then the server's cost per event at R1 and R3: one shipper catches up a log of N ~500-byte events
// into a single nats-server and into a 3-node cluster (stream replicas 3); CPU of every server
// process per event (all nodes summed) and the catch-up rate.
// Extrapolated (printed apart, from an assumed LOADS_PER_HOUR): stream storage per VM-hour.
// Needs dist/ (SKIP_BUILD=1 uses it as it is) and nats-server. Env: LOADS (default 30), LOADS_PER_HOUR (360), N (50,000).
import { execFileSync } from 'node:child_process'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { launchChromium } from '../src/monitor/launch.js'
import { Shipper } from '../src/ship/shipper.js'
import { startNatsCluster, startNatsServer, type NatsServer } from '../test/helpers/nats.js'
import { filledLog, fmt, withTempDir } from './common.js'
import { ALL_BUT_SCREENSHOT, Cdp, loadOnce, root, startDaemon, startSite, threadsCpuMs } from './watchers.js'

const LOADS = Number(process.env.LOADS ?? 30)
const LOADS_PER_HOUR = Number(process.env.LOADS_PER_HOUR ?? 360)
const STREAM = 'SIZING'
const N = Number(process.env.N ?? 50_000)

/** One shipper catching up N events into `servers`: events/s and the servers' CPU µs per event (all summed). */
async function serverCostPerEvent(servers: NatsServer[], replicas: number): Promise<{ rate: number; cpuUs: number }> {
  return withTempDir(async dir => {
    const { log } = await filledLog(dir, N)
    const shipper = new Shipper({
      log,
      browserId: `sizing-r${replicas}`,
      nats: { servers: servers.map(s => s.url) },
      stream: `COST${replicas}`,
      subjectPrefix: `cost${replicas}`,
      limits: { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas },
    })
    const acked = (seq: number) =>
      new Promise<void>(resolve => {
        if (shipper.ackedSeq >= seq) return resolve()
        const off = shipper.onAcked(a => {
          if (a >= seq) {
            off()
            resolve()
          }
        })
      })
    await shipper.start()
    await acked(1)
    const cpu = () => servers.reduce((n, s) => n + threadsCpuMs(s.proc!.pid!), 0)
    const c0 = cpu()
    const t0 = performance.now()
    await acked(log.lastSeq)
    const seconds = (performance.now() - t0) / 1000
    const cpuMs = cpu() - c0
    await shipper.stop()
    await log.close()
    return { rate: (log.lastSeq - 1) / seconds, cpuUs: (cpuMs * 1000) / (log.lastSeq - 1) }
  })
}

async function duBytes(dir: string): Promise<number> {
  let total = 0
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name))).size
  return total
}

if (!process.env.SKIP_BUILD) execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })

const nats = await startNatsServer()
const site = await startSite()
const browser = await launchChromium()
const driver = await Cdp.connect(browser.wsUrl)
try {
  await withTempDir(async dir => {
    const daemon = await startDaemon(join(dir, 'data'), browser.wsUrl, ALL_BUT_SCREENSHOT, root, undefined, undefined, [
      '--nats-url',
      nats.url,
      '--nats-stream',
      STREAM,
    ])
    const health = async () =>
      (await (await fetch(`${daemon.api!.url}/healthz`)).json()) as {
        store: { lastSeq: number }
        sinks: { nats: { acked_seq: number } }
      }
    try {
      for (let i = 0; i < 3; i++) await loadOnce(driver, site.url(`warm${i}`))
      const shipped = async () => {
        for (;;) {
          const h = await health()
          if (h.store.lastSeq > 0 && h.sinks.nats.acked_seq >= h.store.lastSeq) return h.store.lastSeq
          await new Promise(r => setTimeout(r, 100))
        }
      }
      const nc = await connect({ servers: nats.url })
      const jsm = await jetstreamManager(nc)
      const seqBefore = await shipped()
      const before = (await jsm.streams.info(STREAM)).state
      const serverCpu0 = threadsCpuMs(nats.proc!.pid!)
      const t0 = performance.now()
      for (let l = 0; l < LOADS; l++) await loadOnce(driver, site.url(`load${l}`))
      const seqAfter = await shipped()
      const seconds = (performance.now() - t0) / 1000
      const serverCpuMs = threadsCpuMs(nats.proc!.pid!) - serverCpu0
      const after = (await jsm.streams.info(STREAM)).state
      await nc.close()
      const events = after.messages - before.messages
      const bytes = after.bytes - before.bytes
      const onDisk = await duBytes(nats.storeDir)
      const perLoad = events / LOADS
      const bytesPerEvent = bytes / events
      const diskPerEvent = onDisk / after.messages
      console.log(`heavy page loaded ${LOADS} times in ${fmt(seconds, 1)} s; daemon seqs ${seqBefore} -> ${seqAfter}`)
      console.log('measured:')
      console.log(`  events shipped per page load ${fmt(perLoad, 0)} (${events} events)`)
      console.log(
        `  stream bytes per event ${fmt(bytesPerEvent, 0)} (JetStream's accounting: subject, headers, payload), ` +
          `${fmt(diskPerEvent, 0)} on disk (store dir ${fmt(onDisk / 2 ** 20, 1)} MiB for ${after.messages} messages)`,
      )
      console.log(
        `  nats-server CPU ${fmt((serverCpuMs * 1000) / events, 1)} µs per stored event while the page loaded ` +
          `(${fmt(serverCpuMs, 0)} ms for ${events} events, every thread)`,
      )
      const perHour = perLoad * LOADS_PER_HOUR
      console.log(`extrapolated (assuming ${LOADS_PER_HOUR} heavy page loads per VM-hour):`)
      console.log(
        `  ${fmt(perHour, 0)} events per VM-hour, ${fmt((perHour * bytesPerEvent) / 2 ** 20, 1)} MiB of stream per VM-hour ` +
          `(${fmt((perHour * diskPerEvent) / 2 ** 20, 1)} MiB on disk per replica)`,
      )
    } finally {
      await daemon.stop()
    }
  })
} finally {
  driver.close()
  await browser.close()
  site.server.close()
}
try {
  const r1 = await serverCostPerEvent([nats], 1)
  console.log(
    `server cost, one shipper catching up ${N} ~500-byte events: R1 (one node) ${fmt(r1.rate, 0)} events/s, ` +
      `${fmt(r1.cpuUs, 1)} µs of nats-server CPU per event = ${fmt(1e6 / r1.cpuUs, 0)} events/s per core`,
  )
} finally {
  await nats.dispose()
}
const cluster = await startNatsCluster(3, 'bt-sizing')
try {
  const r3 = await serverCostPerEvent(cluster.nodes, 3)
  console.log(
    `  R3 (3 nodes, replicas 3) ${fmt(r3.rate, 0)} events/s, ${fmt(r3.cpuUs, 1)} µs of CPU per event over the three ` +
      `nodes = ${fmt(1e6 / r3.cpuUs, 0)} events/s per core of the cluster`,
  )
} finally {
  await cluster.dispose()
}
