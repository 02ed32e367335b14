// A /healthz probe as a real one runs: its own process (not the test's event loop, which drives
// Chromium and reads the API meanwhile), a fresh TCP connection per probe (no keep-alive pool),
// a timeout that counts as a failure. Plain JS so node runs it without a TS loader.
// argv: url intervalMs timeoutMs maxStallMs daemonPid. Probes back to back (intervalMs between the
// end of one and the start of the next) until stdin closes, then prints one JSON line:
// { latencies: number[] (ms, send to last body byte), failures, timeouts, stalled, answeredMaxMs,
//   selfLagMaxMs, daemonRunDelayMaxMs, machineStealMaxMs }.
// What the daemon cannot answer for is told apart: a probe during which the prober itself could
// not run for more than maxStallMs (a 5 ms timer watches its event loop), or the daemon's main
// thread waited more than maxStallMs in total for a CPU while runnable (the kernel's run-queue
// delay, /proc/<pid>/task/<pid>/schedstat), or the hypervisor took more than maxStallMs of CPU time
// from the machine's virtual CPUs (steal time, /proc/stat: a VM's CPUs frozen under the guest, which
// neither of the first two can see), measures the machine, not the daemon: it is no latency
// sample and is counted in `stalled` (its answer still has to come, as a 200, within the timeout).
import http from 'node:http'
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const [url, intervalArg, timeoutArg] = process.argv.slice(2)
const intervalMs = Number(intervalArg ?? 20)
const timeoutMs = Number(timeoutArg ?? 2000)
const maxSelfLagMs = Number(process.argv[5] ?? 50)
const daemonPid = process.argv[6]
/** The daemon main thread's total run-queue wait so far, ms (0 when unreadable). */
function daemonRunDelay() {
  if (!daemonPid) return 0
  try {
    return Number(readFileSync(`/proc/${daemonPid}/task/${daemonPid}/schedstat`, 'utf8').split(' ')[1]) / 1e6
  } catch {
    return 0
  }
}
/** CPU time the hypervisor took from all of the machine's virtual CPUs so far, ms (0 when unreadable). */
function machineSteal() {
  try {
    // cpu user nice system idle iowait irq softirq steal ...: clock ticks of 10 ms (USER_HZ = 100).
    return Number(readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/)[8] ?? 0) * 10
  } catch {
    return 0
  }
}
let runDelayMax = 0
let answeredMax = 0 // the slowest answered probe, stalled ones too: what the timeout bounds
let stealMax = 0
let lastTick = performance.now()
let probeLag = 0 // the longest gap between ticks during the current probe
const ticker = setInterval(() => {
  const now = performance.now()
  probeLag = Math.max(probeLag, now - lastTick - 5)
  lastTick = now
}, 5)
const lag = monitorEventLoopDelay({ resolution: 5 })
lag.enable()
const latencies = []
let failures = 0
let timeouts = 0
let stalled = 0
let running = true
process.stdin.on('end', () => {
  running = false
})
process.stdin.resume()

function probe() {
  return new Promise(resolve => {
    const delay0 = daemonRunDelay()
    const steal0 = machineSteal()
    const t0 = performance.now()
    lastTick = t0
    probeLag = 0
    let done = false
    const finish = (ok, timedOut) => {
      if (done) return
      done = true
      clearTimeout(timer)
      const latency = performance.now() - t0
      probeLag = Math.max(probeLag, performance.now() - lastTick - 5)
      const runDelay = daemonRunDelay() - delay0
      runDelayMax = Math.max(runDelayMax, runDelay)
      const steal = machineSteal() - steal0
      stealMax = Math.max(stealMax, steal)
      if (ok) answeredMax = Math.max(answeredMax, latency)
      if ((probeLag > maxSelfLagMs || runDelay > maxSelfLagMs || steal > maxSelfLagMs) && ok) stalled++
      else latencies.push(latency)
      if (!ok) failures++
      if (timedOut) timeouts++
      resolve()
    }
    const req = http.get(url, { agent: false, headers: { connection: 'close' } }, res => {
      res.on('data', () => undefined)
      res.on('end', () => finish(res.statusCode === 200, false))
      res.on('error', () => finish(false, false))
    })
    req.on('error', () => finish(false, false))
    const timer = setTimeout(() => {
      finish(false, true)
      req.destroy()
    }, timeoutMs)
  })
}

while (running) {
  await probe()
  await new Promise(r => setTimeout(r, intervalMs))
}
clearInterval(ticker)
lag.disable()
process.stdout.write(
  JSON.stringify({
    latencies,
    failures,
    timeouts,
    stalled,
    answeredMaxMs: answeredMax,
    selfLagMaxMs: lag.max / 1e6,
    daemonRunDelayMaxMs: runDelayMax,
    machineStealMaxMs: stealMax,
  }) + '\n',
)
process.stdin.destroy()
