// Benchmark: what the screen recording costs, and how much it stores.
//
// 1. Cost: the heavy bench page (bench/overhead.ts's, watchers.ts) loaded again and again in a fresh
//    tab by an outside CDP client, under the compiled daemon (all categories but screenshot) with
//    recording off and on (`--recording` at the defaults), blocks interleaved
//    round by round so machine drift hits both alike. Per block: median navigate->load time, its
//    ratio to "off", the daemon's CPU ms per load and Chromium's (every process of the browser,
//    /proc/<pid>/stat; medians of the rounds), frames Chromium sent per load (each one captured and
//    JPEG-encoded), frames and KiB stored per load.
// 2. Size: bytes per minute of recording for an idle page (static text), a scrolling page (a long
//    article scrolled continuously) and a "video" page (a canvas animation), each for DURATION_S
//    seconds in the visible tab; frames per minute too, the frames Chromium sent (each one encoded)
//    and Chromium's and the daemon's CPU ms per second, for "off" and each config, SIZE_ROUNDS rounds
//    (default 1). No network: pages from a local server.
//
// Knobs: ROUNDS (default 3), LOADS (loads per block per round, default 4), DURATION_S (per size page,
// default 30; 0 skips part 2), SKIP_BUILD=1 (run dist/ as it is), EXTRA_ARGS (more serve flags for
// every block), WINDOW (Chromium's window, e.g. 1280,720; default Chromium's own 800x600, which no
// size cap of 800x450 or more scales), CONFIGS (recording configs compared in one run, each
// interleaved with "recording off": `name=flags;name=flags`, flags after --recording; a leading
// `root:<checkout>` runs that built checkout's daemon, e.g. main before a change; default
// `recording on=`).
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { launchChromium } from '../src/monitor/launch.js'
import { fmt, median, withTempDir } from './common.js'
import { ALL_BUT_SCREENSHOT, Cdp, cpuMs, loadOnce, root, startDaemon, startSite, type Watcher } from './watchers.js'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const LOADS = Number(process.env.LOADS ?? 4)
const DURATION_S = Number(process.env.DURATION_S ?? 30)
const SIZE_ROUNDS = Number(process.env.SIZE_ROUNDS ?? 1)
const EXTRA = process.env.EXTRA_ARGS?.split(' ').filter(Boolean) ?? []
const WINDOW = process.env.WINDOW
const CONFIGS = (process.env.CONFIGS ?? 'recording on=')
  .split(';')
  .filter(c => c.trim())
  .map(c => {
    const [name, flags = ''] = c.split('=', 2) as [string, string?]
    const words = flags.split(' ').filter(Boolean)
    const checkout = words[0]?.startsWith('root:') ? words.shift()!.slice(5) : root
    return { name: name.trim(), args: ['--recording', ...words], checkout }
  })

/** CPU ms of a process and all its descendants (Chromium: browser, renderers, GPU, utility). */
function treeCpuMs(rootPid: number): number {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)])
    } catch {
      /* gone */
    }
  }
  let sum = 0
  const walk = (pid: number) => {
    try {
      sum += cpuMs(pid)
    } catch {
      return
    }
    for (const c of children.get(pid) ?? []) walk(c)
  }
  walk(rootPid)
  return sum
}

async function recordingState(w: Watcher): Promise<{ stored_total: number; bytes: number; received: number }> {
  const headers = { authorization: `Bearer ${w.api!.token}` }
  const res = await fetch(`${w.api!.url}/browsers/bench/recording`, { headers })
  const state = (await res.json()) as { stored_total: number; bytes: number }
  // Frames Chromium captured, encoded and sent (kept or not): its encoding work.
  const metrics = await (await fetch(`${w.api!.url}/metrics`, { headers })).text()
  const received = Number(
    /browser_telemetry_recording_frames_total\{outcome="received"\} (\d+)/.exec(metrics)?.[1] ?? 0,
  )
  return { ...state, received }
}

/** Frames (count, bytes) stored with ts in [fromUs, untilUs). */
async function framesIn(w: Watcher, fromUs: number, untilUs: number): Promise<{ frames: number; bytes: number }> {
  let q = `since=${new Date(fromUs / 1000).toISOString()}&until=${new Date(untilUs / 1000).toISOString()}&limit=1000`
  let frames = 0
  let bytes = 0
  for (;;) {
    const res = await fetch(`${w.api!.url}/browsers/bench/recording/frames?${q}`, {
      headers: { authorization: `Bearer ${w.api!.token}` },
    })
    const items = (await res.json()) as { bytes: number }[]
    frames += items.length
    for (const i of items) bytes += i.bytes
    if (res.headers.get('x-has-more') !== 'true') return { frames, bytes }
    q = `offset=${res.headers.get('x-next-offset')}&limit=1000`
  }
}

const PAGES: Record<string, string> = {
  idle: `<!doctype html><title>idle</title><h1>An idle page</h1><p>${'Nothing moves here. '.repeat(200)}</p>`,
  scrolling: `<!doctype html><title>scrolling</title><style>p{font:16px/1.5 sans-serif;margin:1em}</style>
${Array.from({ length: 400 }, (_, i) => `<p>Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(12)}</p>`).join('')}
<script>let y = 0; function s() { y += 3; if (y > document.body.scrollHeight - innerHeight) y = 0; scrollTo(0, y); requestAnimationFrame(s) } requestAnimationFrame(s)</script>`,
  video: `<!doctype html><title>video</title><style>html,body{margin:0;background:#111}</style>
<canvas id="c" width="800" height="450"></canvas><script>
const c = document.getElementById('c').getContext('2d'); let t = 0;
function f() { t += 1 / 60; const g = c.createLinearGradient(0, 0, 800, 450);
  g.addColorStop(0, 'hsl(' + (t * 40 % 360) + ',70%,40%)'); g.addColorStop(1, 'hsl(' + ((t * 40 + 120) % 360) + ',70%,30%)');
  c.fillStyle = g; c.fillRect(0, 0, 800, 450);
  for (let i = 0; i < 30; i++) { c.beginPath(); c.fillStyle = 'hsla(' + (i * 12) + ',80%,60%,0.8)';
    c.arc(400 + Math.cos(t + i) * (100 + i * 8), 225 + Math.sin(t * 1.3 + i) * (60 + i * 4), 12 + (i % 5) * 4, 0, 7); c.fill() }
  requestAnimationFrame(f) } requestAnimationFrame(f);
</script>`,
}

if (!process.env.SKIP_BUILD) {
  try {
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
  } catch {
    console.log('(tsc reported errors; using what it emitted into dist/)')
  }
}

await withTempDir(async tmp => {
  const site = await startSite()
  const browser = await launchChromium(WINDOW ? { extraArgs: [`--window-size=${WINDOW}`] } : {})
  const driver = await Cdp.connect(browser.wsUrl)
  let nonce = 0
  for (let i = 0; i < 3; i++) await loadOnce(driver, site.url(`warm${nonce++}`))

  // ---------- 1. cost on the heavy page ----------
  const blocks = [{ name: 'recording off', args: [] as string[], checkout: root }, ...CONFIGS]
  const startBlock = (dir: string, b: (typeof blocks)[number]) =>
    startDaemon(
      join(tmp, `${dir}-${b.name.replace(/\W/g, '_')}`),
      browser.wsUrl,
      ALL_BUT_SCREENSHOT,
      b.checkout,
      undefined,
      undefined,
      ['--browser-id', 'bench', ...b.args, ...EXTRA],
    )
  const samples = new Map(
    blocks.map(b => [
      b.name,
      {
        loadMs: [] as number[],
        daemonCpu: [] as number[],
        chromeCpu: [] as number[],
        loads: 0,
        frames: 0,
        bytes: 0,
        received: 0,
      },
    ]),
  )
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? blocks : [...blocks].reverse()
    for (const b of order) {
      const w = await startBlock(`d${round}`, b)
      await loadOnce(driver, site.url(`settle${nonce++}`))
      const s = samples.get(b.name)!
      const r0 = await recordingState(w)
      const d0 = cpuMs(w.pid)
      const c0 = treeCpuMs(browser.pid)
      for (let l = 0; l < LOADS; l++) s.loadMs.push(await loadOnce(driver, site.url(`${nonce++}`)))
      await new Promise(r => setTimeout(r, 1000)) // late frames and events land before counting
      s.daemonCpu.push((cpuMs(w.pid) - d0) / LOADS)
      s.chromeCpu.push((treeCpuMs(browser.pid) - c0) / LOADS)
      const r1 = await recordingState(w)
      s.frames += r1.stored_total - r0.stored_total
      s.bytes += r1.bytes - r0.bytes
      s.received += r1.received - r0.received
      s.loads += LOADS
      await w.stop()
    }
    process.stdout.write(`round ${round}/${ROUNDS} done\n`)
  }
  const off = samples.get('recording off')!
  const offLoad = median(off.loadMs)
  const width = Math.max(16, ...blocks.map(b => b.name.length))
  console.log(
    `\n${'heavy page'.padEnd(width)} ${'load ms'.padStart(8)} ${'/off'.padStart(6)} ${'daemon cpu ms/load'.padStart(18)} ${'chromium cpu ms/load'.padStart(20)} ${'sent/load'.padStart(9)} ${'frames/load'.padStart(11)} ${'KiB/load'.padStart(9)}`,
  )
  // CPU: the median over rounds of each round's ms per load (a round's loads are one block).
  const per = (xs: number[]) => `${fmt(median(xs), 1)} (${xs.map(x => fmt(x, 0)).join(', ')})`
  for (const b of blocks) {
    const s = samples.get(b.name)!
    console.log(
      `${b.name.padEnd(width)} ${fmt(median(s.loadMs), 1).padStart(8)} ${fmt(median(s.loadMs) / offLoad, 2).padStart(6)} ` +
        `${per(s.daemonCpu).padStart(18)} ${per(s.chromeCpu).padStart(20)} ${fmt(s.received / s.loads, 1).padStart(9)} ${fmt(s.frames / s.loads, 1).padStart(11)} ${fmt(s.bytes / s.loads / 1024, 1).padStart(9)}`,
    )
  }
  if (!DURATION_S) {
    site.server.close()
    driver.close()
    await browser.close()
    return
  }

  // ---------- 2. bytes per minute ----------
  const server = createServer((req, res) => {
    const name = (req.url ?? '/').slice(1)
    res.writeHead(PAGES[name] ? 200 : 404, { 'content-type': 'text/html' })
    res.end(PAGES[name] ?? 'not found')
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  // Each recording config (and "off", Chromium's own painting of the page) in turn, round by round.
  const sized = new Map(
    blocks.map(b => [
      b.name,
      new Map(
        Object.keys(PAGES).map(p => [
          p,
          {
            frames: [] as number[],
            bytes: [] as number[],
            sent: [] as number[],
            chrome: [] as number[],
            daemon: [] as number[],
          },
        ]),
      ),
    ]),
  )
  for (let round = 1; round <= SIZE_ROUNDS; round++) {
    for (const b of round % 2 ? blocks : [...blocks].reverse()) {
      const w = await startBlock(`size${round}`, b)
      for (const name of Object.keys(PAGES)) {
        const { targetId } = await driver.send('Target.createTarget', { url: `http://127.0.0.1:${port}/${name}` })
        await new Promise(r => setTimeout(r, 1500)) // loaded and painting
        const from = Date.now() * 1000
        const r0 = b.args.length ? (await recordingState(w)).received : 0
        const c0 = treeCpuMs(browser.pid)
        const d0 = cpuMs(w.pid)
        await new Promise(r => setTimeout(r, DURATION_S * 1000))
        const until = Date.now() * 1000
        const s = sized.get(b.name)!.get(name)!
        s.chrome.push((treeCpuMs(browser.pid) - c0) / ((until - from) / 1e6))
        s.daemon.push((cpuMs(w.pid) - d0) / ((until - from) / 1e6))
        await new Promise(r => setTimeout(r, 500))
        const perMin = 60e6 / (until - from)
        s.sent.push(b.args.length ? ((await recordingState(w)).received - r0) * perMin : 0)
        const { frames, bytes } = b.args.length ? await framesIn(w, from, until) : { frames: 0, bytes: 0 }
        s.frames.push(frames * perMin)
        s.bytes.push(bytes * perMin)
        await driver.send('Target.closeTarget', { targetId })
      }
      await w.stop()
    }
    process.stdout.write(`size round ${round}/${SIZE_ROUNDS} done\n`)
  }
  console.log(
    `\n${'page'.padEnd(width + 11)} ${'sent/min'.padStart(8)} ${'frames/min'.padStart(10)} ${'bytes/min'.padStart(12)} ${'avg frame'.padStart(10)} ${'chromium cpu ms/s'.padStart(17)} ${'daemon cpu ms/s'.padStart(15)}  (${DURATION_S} s each, medians of ${SIZE_ROUNDS})`,
  )
  for (const name of Object.keys(PAGES))
    for (const b of blocks) {
      const s = sized.get(b.name)!.get(name)!
      const [frames, bytes] = [median(s.frames), median(s.bytes)]
      console.log(
        `${`${name} ${b.name}`.padEnd(width + 11)} ${fmt(median(s.sent), 0).padStart(8)} ${fmt(frames, 0).padStart(10)} ${`${fmt(bytes / 1024 / 1024, 2)} MiB`.padStart(12)} ${`${fmt(frames ? bytes / frames / 1024 : 0, 1)} KiB`.padStart(10)} ${fmt(median(s.chrome), 0).padStart(17)} ${fmt(median(s.daemon), 1).padStart(15)}`,
      )
    }
  server.close()
  site.server.close()
  driver.close()
  await browser.close()
})
