// A /healthz probe as a real one runs: its own process (not the test's event loop, which drives
// Chromium and reads the API meanwhile), a fresh TCP connection per probe (no keep-alive pool),
// a timeout that counts as a failure. Plain JS so node runs it without a TS loader.
// argv: url intervalMs timeoutMs. Probes back to back (intervalMs between the end of one and the
// start of the next) until stdin closes, then prints one JSON line:
// { latencies: number[] (ms, send to last body byte), failures: number, timeouts: number, selfLagMaxMs }
// selfLagMaxMs is this process's own event-loop delay maximum: how late the prober itself ran.
import http from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const [url, intervalArg, timeoutArg] = process.argv.slice(2)
const intervalMs = Number(intervalArg ?? 20)
const timeoutMs = Number(timeoutArg ?? 2000)
const lag = monitorEventLoopDelay({ resolution: 5 })
lag.enable()
const latencies = []
let failures = 0
let timeouts = 0
let running = true
process.stdin.on('end', () => { running = false })
process.stdin.resume()

function probe() {
  return new Promise((resolve) => {
    const t0 = performance.now()
    let done = false
    const finish = (ok, timedOut) => {
      if (done) return
      done = true
      clearTimeout(timer)
      latencies.push(performance.now() - t0)
      if (!ok) failures++
      if (timedOut) timeouts++
      resolve()
    }
    const req = http.get(url, { agent: false, headers: { connection: 'close' } }, (res) => {
      res.on('data', () => undefined)
      res.on('end', () => finish(res.statusCode === 200, false))
      res.on('error', () => finish(false, false))
    })
    req.on('error', () => finish(false, false))
    const timer = setTimeout(() => { finish(false, true); req.destroy() }, timeoutMs)
  })
}

while (running) {
  await probe()
  await new Promise((r) => setTimeout(r, intervalMs))
}
process.stdout.write(JSON.stringify({ latencies, failures, timeouts, selfLagMaxMs: lag.max / 1e6 }) + '\n')
