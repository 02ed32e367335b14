// Benchmark: what the monitor adds on top of a bare chrome-remote-interface client, in the same run.
//  1. Attach latency: Target.createTarget -> the new tab's first console event captured (the page logs
//     as its first script), monitor + a console collector vs a bare client doing the same auto-attach dance.
//  2. CDP round-trip: Runtime.evaluate("1") through TargetSession.send vs client.send on a bare flattened session.
// Median of RUNS runs each; prints the ratios monitor/bare.
import CDP from 'chrome-remote-interface'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { launchChromium } from '../src/monitor/launch.js'
import { Monitor, type BrowserScope, type Collector, type TargetSession } from '../src/monitor/index.js'
import { median, fmt } from './common.js'

const RUNS = 7
const TABS_PER_RUN = 5
const ROUND_TRIPS = 200

interface BareClient {
  send(method: string, params?: object, sessionId?: string): Promise<any>
  on(event: 'event', h: (m: { method: string; params: any; sessionId?: string }) => void): void
  close(): Promise<void>
}

const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' })
  res.end('<script>console.log("first")</script>')
})
await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
const browser = await launchChromium()

/** Monitor path: ms from createTarget to the console event reaching emit(), per tab. */
async function monitorAttach(): Promise<number[]> {
  let scope: BrowserScope | undefined
  let onFirst: ((targetId: string) => void) | undefined
  const collector: Collector = {
    name: 'bench-console',
    attachBrowser(b) {
      scope = b
      return () => undefined
    },
    async attach(s) {
      const off = s.on('Runtime.consoleAPICalled', () => onFirst?.(s.targetId))
      await s.send('Runtime.enable')
      return off
    },
  }
  const monitor = new Monitor({
    cdpUrl: browser.wsUrl,
    emit: () => ({ dropped: 'category_disabled' }),
    collectors: [collector],
  })
  await monitor.start()
  const times: number[] = []
  for (let i = 0; i < TABS_PER_RUN; i++) {
    const t0 = performance.now()
    const seen = new Promise<string>(r => {
      onFirst = r
    })
    const { targetId } = await scope!.send('Target.createTarget', { url: pageUrl })
    while ((await seen) !== targetId) {
      /* an older tab's log */
    }
    times.push(performance.now() - t0)
    await scope!.send('Target.closeTarget', { targetId })
  }
  await monitor.stop()
  return times
}

/** Bare path: the same auto-attach + Runtime.enable + resume, hand-written on one client. */
async function bareAttach(): Promise<number[]> {
  const client = (await CDP({ target: browser.wsUrl, local: true })) as unknown as BareClient
  let onFirst: ((targetId: string) => void) | undefined
  const targetOf = new Map<string, string>()
  client.on('event', m => {
    if (m.method === 'Target.attachedToTarget') {
      const { sessionId, targetInfo } = m.params
      targetOf.set(sessionId, targetInfo.targetId)
      void client
        .send('Runtime.enable', {}, sessionId)
        .catch(() => undefined)
        .then(() => client.send('Runtime.runIfWaitingForDebugger', {}, sessionId))
        .catch(() => undefined)
    } else if (m.method === 'Runtime.consoleAPICalled' && m.sessionId) {
      onFirst?.(targetOf.get(m.sessionId)!)
    }
  })
  await client.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true })
  const times: number[] = []
  for (let i = 0; i < TABS_PER_RUN; i++) {
    const t0 = performance.now()
    const seen = new Promise<string>(r => {
      onFirst = r
    })
    const { targetId } = await client.send('Target.createTarget', { url: pageUrl })
    while ((await seen) !== targetId) {
      /* an older tab's log */
    }
    times.push(performance.now() - t0)
    await client.send('Target.closeTarget', { targetId })
  }
  await client.close()
  return times
}

async function timeRoundTrips(send: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await send() // warm-up
  const xs: number[] = []
  for (let i = 0; i < ROUND_TRIPS; i++) {
    const t0 = performance.now()
    await send()
    xs.push(performance.now() - t0)
  }
  return median(xs)
}

/** Round-trip medians, monitor session vs bare flattened session on the same tab, same run. */
async function roundTrips(): Promise<{ monitor: number; bare: number }> {
  const sessions = new Map<string, TargetSession>()
  const monitor = new Monitor({
    cdpUrl: browser.wsUrl,
    emit: () => ({ dropped: 'category_disabled' }),
    collectors: [
      {
        name: 'grab',
        attach(s) {
          sessions.set(s.sessionId, s)
          return () => undefined
        },
      },
    ],
  })
  await monitor.start()
  // The start tab (tabs of the attach runs may still be closing).
  const session = sessions.get(
    monitor.targets().find(x => x.targetType === 'page' && x.context.url === 'about:blank')!.sessionId,
  )
  const client = (await CDP({ target: browser.wsUrl, local: true })) as unknown as BareClient
  const { sessionId } = await client.send('Target.attachToTarget', { targetId: session!.targetId, flatten: true })
  const m = await timeRoundTrips(() => session!.send('Runtime.evaluate', { expression: '1' }))
  const b = await timeRoundTrips(() => client.send('Runtime.evaluate', { expression: '1' }, sessionId))
  await client.close()
  await monitor.stop()
  return { monitor: m, bare: b }
}

const attachMonitor: number[] = []
const attachBare: number[] = []
const rtMonitor: number[] = []
const rtBare: number[] = []
try {
  for (let run = 0; run < RUNS; run++) {
    // Alternate which path goes first so warm caches favour neither.
    if (run % 2) {
      attachBare.push(median(await bareAttach()))
      attachMonitor.push(median(await monitorAttach()))
    } else {
      attachMonitor.push(median(await monitorAttach()))
      attachBare.push(median(await bareAttach()))
    }
    const rt = await roundTrips()
    rtMonitor.push(rt.monitor)
    rtBare.push(rt.bare)
  }
} finally {
  await browser.close()
  server.close()
}
const am = median(attachMonitor)
const ab = median(attachBare)
const rm = median(rtMonitor)
const rb = median(rtBare)
console.log(`runs: ${RUNS} (x${TABS_PER_RUN} tabs, x${ROUND_TRIPS} round-trips)`)
console.log(
  `new tab -> first captured event: monitor ${fmt(am)} ms, bare client ${fmt(ab)} ms, ratio ${fmt(am / ab)} (overhead ${fmt(am - ab)} ms)`,
)
console.log(
  `CDP round-trip (Runtime.evaluate): monitor ${fmt(rm, 3)} ms, bare client ${fmt(rb, 3)} ms, ratio ${fmt(rm / rb)} (overhead ${fmt((rm - rb) * 1000, 0)} us)`,
)
