// Sizing the fleet stream from a real session: the compiled daemon attached to a headless Chromium
// ships to a nats-server (JetStream, file storage, one replica) while an outside CDP client loads the
// heavy bench page (the one bench/overhead.ts loads) LOADS times, each in a fresh tab. Measured:
// events and stream bytes per page load, stream bytes per event (the stream's own accounting and
// the store directory on disk), and the nats-server's CPU per stored event (every thread, /proc).
// Extrapolated (printed apart, from an assumed LOADS_PER_HOUR): stream storage per VM-hour, and
// the events/s one core of nats-server stores at this mix.
// Needs dist/ (SKIP_BUILD=1 uses it as it is) and nats-server. Env: LOADS (default 30), LOADS_PER_HOUR (360).
import { execFileSync } from 'node:child_process'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { launchChromium } from '../src/monitor/launch.js'
import { startNatsServer } from '../test/helpers/nats.js'
import { fmt, withTempDir } from './common.js'
import { ALL_BUT_SCREENSHOT, Cdp, loadOnce, root, startDaemon, startSite, threadsCpuMs } from './watchers.js'

const LOADS = Number(process.env.LOADS ?? 30)
const LOADS_PER_HOUR = Number(process.env.LOADS_PER_HOUR ?? 360)
const STREAM = 'SIZING'

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
      (await (await fetch(`${daemon.api.url}/healthz`)).json()) as {
        store: { lastSeq: number }
        shipping: { acked_seq: number }
      }
    try {
      for (let i = 0; i < 3; i++) await loadOnce(driver, site.url(`warm${i}`))
      const shipped = async () => {
        for (;;) {
          const h = await health()
          if (h.store.lastSeq > 0 && h.shipping.acked_seq >= h.store.lastSeq) return h.store.lastSeq
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
  await nats.dispose()
}
