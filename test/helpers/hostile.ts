// Hostile-page harness, shared by test/hostile-pages.test.ts and bench/hostile.ts.
// One case = a fresh headless Chromium + the compiled daemon in a child process attached to it
// (--cdp-url), a local site, /healthz probed throughout, the daemon's peak RSS (VmHWM) at the end,
// then a clean stop and every stored envelope read back from its data dir.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import CDP from 'chrome-remote-interface'
import { launchChromium, type LaunchedBrowser } from '../../src/monitor/launch.js'
import { EventLog } from '../../src/store/event-log.js'
import { isValidEnvelope } from '../../src/events/index.js'
import { startServer, waitFor, type Handler, type TestServer } from './http.js'
import { SOURCE_MAP_CASES, sourceMapCase } from './hostile-sourcemaps.js'

export const TOKEN = 'hostile-token'
const root = join(import.meta.dirname, '..', '..')

export interface CaseContext {
  daemonUrl: string
  browserId: string
  site: TestServer
  /** Same server under another site (localhost instead of 127.0.0.1): cross-site iframes are OOPIFs. */
  crossOrigin: string
  browser: LaunchedBrowser
  /** A browser-level CDP client of the test (not the daemon's). */
  cdp: CDP.Client
  /** Opens a tab on url and returns a CDP client attached to it. */
  openTab(url: string): Promise<CDP.Client>
  /**
   * Opens a blank tab, waits until the daemon watches it, then navigates it to url: for cases whose
   * first output must be seen live (Chromium keeps only ~10 MB of console messages for a late Runtime.enable).
   */
  openWatchedTab(url: string): Promise<CDP.Client>
  /** Figures a case reports (CaseResult.notes). */
  notes: Record<string, number>
  /** The daemon's log lines so far (for a failure's comment). */
  logLines(): string[]
  /** Events of the daemon's API (GET events), newest first. */
  events(
    query: string,
  ): Promise<
    { seq: number; event: { type: string; category: string; data: Record<string, unknown>; truncated?: boolean } }[]
  >
}

export interface HostileCase {
  name: string
  pages: Record<string, Handler | string>
  daemonArgs?: string[]
  chromiumArgs?: string[]
  /** Drives the page; resolves once the daemon has seen the case's end marker. */
  run(ctx: CaseContext): Promise<void>
  /** Sees every stored envelope when they are read back at the end. */
  inspect?(envelope: { seq: number; event: { type: string; data: Record<string, unknown> } }): void
}

export interface CaseResult {
  name: string
  elapsedMs: number
  /** The daemon's CPU (user + system) while the case ran, from /proc/<pid>/stat. */
  cpuMs: number
  /**
   * /healthz as a separate probe process saw it: latency of each probe from sending the request on a
   * fresh connection to the last body byte (ms); failures = non-200, errors and timeouts (2 s);
   * answeredMaxMs = the slowest probe answered 200, stalled ones included (what the 2 s bounds);
   * machineStalled = answered probes that are no latency sample because meanwhile the prober could
   * not run, or the daemon waited for a CPU, or the hypervisor took CPU time from the machine
   * (steal), for over MACHINE_STALL_MS; proberLagMaxMs = the prober's event-loop delay maximum;
   * daemonRunDelayMaxMs = the daemon's longest run-queue wait in one probe; machineStealMaxMs = the
   * most steal time during one probe.
   */
  healthz: {
    n: number
    p50Ms: number
    p95Ms: number
    maxMs: number
    failures: number
    timeouts: number
    answeredMaxMs: number
    machineStalled: number
    proberLagMaxMs: number
    daemonRunDelayMaxMs: number
    machineStealMaxMs: number
  }
  peakRssMb: number
  stored: number
  lastSeq: number
  /** Seqs in [1, lastSeq] with no stored envelope. */
  missing: number
  largestEnvelope: number
  invalidEnvelopes: number
  truncated: number
  metrics: Record<string, number>
  logLines: string[]
  storedByType: Record<string, number>
  /** What the case itself counted (e.g. the binding calls the page made). */
  notes: Record<string, number>
}

export const ENVELOPE_CAP = 1024 * 1024

/** The node flags of the `browser-telemetry` shebang (`#!/usr/bin/env -S node <flags>`): how the daemon runs. */
function shebangFlags(): string[] {
  const first = readFileSync(join(root, 'src/cli.ts'), 'utf8').split('\n', 1)[0]!
  const m = /^#!\/usr\/bin\/env -S node(.*)$/.exec(first)
  if (!m) throw new Error(`unexpected shebang in src/cli.ts: ${first}`)
  return m[1]!.trim().split(/\s+/).filter(Boolean)
}

/**
 * The daemon runs at the priority its systemd unit gives it (Nice=-5: a flooding page can keep it
 * busy; see docs/limits.md), and the /healthz probe beside it, as a
 * supervisor's probe would. nice(1) keeps the current niceness where lowering it is not permitted.
 */
const DAEMON_NICE = ['-n', '-5']
/**
 * A probe during which the prober could not run for longer than this, or the daemon waited longer
 * than this for a CPU (kernel run-queue delay), or the hypervisor took more CPU time than this from
 * the machine (steal), measures the machine, not the daemon.
 */
export const MACHINE_STALL_MS = 50

interface Registrar {
  teardown(fn: () => unknown): void
}

/** Sum of every sample of a metric whose name and labels match (e.g. 'browser_telemetry_events_dropped_total{' + 'reason="over_budget"'). */
export function metricSum(text: string, name: string, labelPart = ''): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || line.startsWith('#')) continue
    const rest = line.slice(name.length)
    if (rest[0] !== '{' && rest[0] !== ' ') continue
    if (labelPart && !rest.includes(labelPart)) continue
    sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

export async function runHostileCase(reg: Registrar, c: HostileCase): Promise<CaseResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bt-hostile-'))
  reg.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const site = await startServer(reg as never, c.pages)
  const browser = await launchChromium({ extraArgs: c.chromiumArgs })
  reg.teardown(() => browser.close())
  // The daemon's runtime settings (the shebang's node flags, scripts/start.sh, the systemd unit).
  // HOSTILE_NODE_FLAGS: extra node flags for the daemon when measuring (--cpu-prof, --trace-gc, ...).
  const measureFlags = (process.env.HOSTILE_NODE_FLAGS ?? '').split(' ').filter(Boolean)
  // Through env(1), which execs node under the same pid without NODE_OPTIONS: under tap, spawn() adds
  // tap's process-tracking loader there, and it would run inside the daemon (~35 MB of its RSS).
  const child = spawn(
    'nice',
    [
      ...DAEMON_NICE,
      'env',
      '-u',
      'NODE_OPTIONS',
      process.execPath,
      ...shebangFlags(),
      ...measureFlags,
      join(root, 'dist/src/cli.js'),
      'serve',
      '--cdp-url',
      browser.wsUrl,
      '--data-dir',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      '--proxy-listen',
      'off',
      '--token',
      TOKEN,
      '--browser-id',
      'hostile',
      '--log-level',
      'info',
      ...(c.daemonArgs ?? []),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        MALLOC_ARENA_MAX: '2',
        ...(process.env.HOSTILE_MALLOC_MMAP ? { MALLOC_MMAP_THRESHOLD_: process.env.HOSTILE_MALLOC_MMAP } : {}),
      },
    },
  )
  const exited = new Promise<number | null>(r => child.once('exit', code => r(code)))
  reg.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  const lines: string[] = []
  let buf = ''
  const onData = (d: Buffer) => {
    buf += d
    const parts = buf.split('\n')
    buf = parts.pop()!
    for (const l of parts) if (lines.length < 5000) lines.push(l)
  }
  child.stdout!.on('data', onData)
  child.stderr!.on('data', onData)
  const daemonUrl = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode}: ${lines.slice(-10).join('\n')}`)
      for (const l of lines) {
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*browser-telemetry listening/.exec(l)
        if (m) return m[1]
      }
      return undefined
    },
    60_000,
    'the daemon to listen',
  )
  const auth = { authorization: `Bearer ${TOKEN}` }
  await waitFor(
    async () =>
      ((await (await fetch(`${daemonUrl}/healthz`)).json()) as { monitor?: { state?: string } }).monitor?.state ===
      'collecting',
    30_000,
    'monitor collecting',
  )

  const cdp = await CDP({ target: browser.wsUrl })
  reg.teardown(() => cdp.close().catch(() => undefined))
  const ctx: CaseContext = {
    daemonUrl,
    browserId: 'hostile',
    site,
    notes: {},
    logLines: () => lines,
    crossOrigin: `http://localhost:${site.port}`,
    browser,
    cdp,
    async openTab(url) {
      const { targetId } = await cdp.Target.createTarget({ url })
      const tab = await CDP({ target: `ws://127.0.0.1:${browser.port}/devtools/page/${targetId}` })
      reg.teardown(() => tab.close().catch(() => undefined))
      return tab
    },
    async openWatchedTab(url) {
      const watched = async () =>
        ((await (await fetch(`${daemonUrl}/healthz`)).json()) as { monitor?: { targets?: number } }).monitor?.targets ??
        0
      const before = await watched()
      const tab = await ctx.openTab('about:blank')
      await waitFor(async () => (await watched()) > before, 30_000, 'the daemon to attach the new tab')
      await tab.Page.navigate({ url })
      return tab
    },
    async events(query) {
      const res = await fetch(`${daemonUrl}/browsers/hostile/telemetry/events?${query}`, { headers: auth })
      if (res.status !== 200) throw new Error(`GET events ${res.status}: ${await res.text()}`)
      return (await res.json()) as never
    },
  }

  // /healthz probed throughout by a separate process, as a real probe: a fresh connection per probe,
  // 20 ms apart, a 2 s timeout counted as a failure; probes during which the machine starved the
  // prober or the daemon are counted apart (test/helpers/healthz-probe.mjs).
  const prober = spawn(
    'nice',
    [
      ...DAEMON_NICE,
      'env',
      '-u',
      'NODE_OPTIONS',
      process.execPath,
      join(root, 'test/helpers/healthz-probe.mjs'),
      `${daemonUrl}/healthz`,
      '20',
      '2000',
      String(MACHINE_STALL_MS),
      String(child.pid),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  reg.teardown(() => {
    if (prober.exitCode === null) prober.kill('SIGKILL')
  })
  let proberOut = ''
  prober.stdout!.on('data', (d: Buffer) => {
    proberOut += d
  })
  const proberExited = new Promise<void>(r => prober.once('exit', () => r()))
  const cpuAtStart = await processCpuMs(child.pid!)
  const t0 = performance.now()
  await c.run(ctx)
  const elapsedMs = performance.now() - t0
  const cpuMs = (await processCpuMs(child.pid!)) - cpuAtStart
  prober.stdin!.end()
  await proberExited
  const probe = JSON.parse(proberOut) as {
    latencies: number[]
    failures: number
    timeouts: number
    answeredMaxMs: number
    stalled: number
    selfLagMaxMs: number
    daemonRunDelayMaxMs: number
    machineStealMaxMs: number
  }

  const status = await readFile(`/proc/${child.pid}/status`, 'utf8')
  const peakRssMb = Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024
  // A last event that is never shed (api_call of this read) lands after every skipped seq: all gaps are inside [1, lastSeq].
  const cfg = await fetch(`${daemonUrl}/browsers/hostile/telemetry`, { headers: auth })
  await cfg.arrayBuffer()
  await waitFor(
    async () =>
      (await ctx.events('category=control&order=desc&limit=1')).some(
        e => e.event.data.operation_id === 'getBrowserTelemetryConfig',
      ),
    30_000,
    'the closing api_call',
  )
  const metricsText = await (await fetch(`${daemonUrl}/metrics`, { headers: auth })).text()
  const metrics = {
    overBudget: metricSum(metricsText, 'browser_telemetry_events_dropped_total', 'reason="over_budget"'),
    shed: metricSum(metricsText, 'browser_telemetry_events_dropped_total', 'reason="shed"'),
    storeDropped: metricSum(metricsText, 'browser_telemetry_events_dropped_total', 'reason="store"'),
    /** Console events shed or over a cap (drops are counted per category: what a per-kind account can use). */
    consoleDropped:
      metricSum(metricsText, 'browser_telemetry_events_dropped_total', 'category="console",reason="shed"') +
      metricSum(metricsText, 'browser_telemetry_events_dropped_total', 'category="console",reason="over_budget"'),
    truncated: metricSum(metricsText, 'browser_telemetry_events_truncated_total'),
    targetsRefused: metricSum(metricsText, 'browser_telemetry_targets_refused_total'),
    evictions: metricSum(metricsText, 'browser_telemetry_state_evictions_total'),
    interactionOverBudget: metricSum(
      metricsText,
      'browser_telemetry_events_dropped_total',
      'category="interaction",reason="over_budget"',
    ),
    bindingPaused: metricSum(metricsText, 'browser_telemetry_interaction_binding_total', 'action="paused"'),
    bindingResumed: metricSum(metricsText, 'browser_telemetry_interaction_binding_total', 'action="resumed"'),
    bindingTerminated: metricSum(metricsText, 'browser_telemetry_interaction_binding_total', 'action="terminated"'),
  }
  child.kill('SIGTERM')
  const code = await exited
  if (code !== 0) throw new Error(`daemon exited ${code} on SIGTERM: ${lines.slice(-5).join('\n')}`)

  const log = await EventLog.open({ path: join(dataDir, 'events'), retentionIntervalMs: 0 })
  let stored = 0,
    largest = 0,
    invalid = 0,
    truncated = 0
  const storedByType: Record<string, number> = {}
  try {
    for (let cursor: number | undefined = 1; cursor;) {
      const page = await log.read({ order: 'asc', limit: 2000, cursor })
      for (const r of page.records) {
        stored++
        largest = Math.max(largest, Buffer.byteLength(r.json))
        const env = JSON.parse(r.json)
        c.inspect?.(env)
        if (!isValidEnvelope(env)) invalid++
        if (env.event.truncated) truncated++
        storedByType[env.event.type] = (storedByType[env.event.type] ?? 0) + 1
      }
      cursor = page.hasMore ? page.nextCursor : undefined
    }
  } finally {
    await log.close()
  }
  const lastSeq = log.lastSeq
  const sorted = [...probe.latencies].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0
  return {
    name: c.name,
    elapsedMs,
    cpuMs,
    healthz: {
      n: sorted.length,
      p50Ms: at(0.5),
      p95Ms: at(0.95),
      maxMs: sorted[sorted.length - 1] ?? 0,
      failures: probe.failures,
      timeouts: probe.timeouts,
      answeredMaxMs: probe.answeredMaxMs,
      machineStalled: probe.stalled,
      proberLagMaxMs: probe.selfLagMaxMs,
      daemonRunDelayMaxMs: probe.daemonRunDelayMaxMs,
      machineStealMaxMs: probe.machineStealMaxMs,
    },
    peakRssMb,
    stored,
    lastSeq,
    missing: lastSeq - stored,
    largestEnvelope: largest,
    invalidEnvelopes: invalid,
    truncated,
    metrics,
    logLines: lines,
    storedByType,
    notes: ctx.notes,
  }
}

/**
 * Waits until a console_log with exactly `text` is stored among the newest `newest` console events
 * (1 where the marker is the page's last line and the lines before it are 1 MB each).
 */
export async function consoleMarker(ctx: CaseContext, text: string, timeoutMs = 120_000, newest = 3): Promise<void> {
  await waitFor(
    gently(async () =>
      (await ctx.events(`category=console&order=desc&limit=${newest}`)).some(e => e.event.data.text === text),
    ),
    timeoutMs,
    `console marker ${text}`,
  )
}

/**
 * A marker check polled every 100 ms with a small page: the reader must not be the load. (Polled
 * every 10 ms for the newest 20 console events, it read ~20 MB of 1 MB envelopes per poll in the
 * huge-arguments case: most of the daemon's RSS and event-loop time there was this test's reads.)
 */
export function gently<T>(check: () => Promise<T>): () => Promise<T | undefined> {
  let last = 0
  return async () => {
    const wait = last + 100 - performance.now()
    if (wait > 0) await new Promise(r => setTimeout(r, wait))
    last = performance.now()
    return check()
  }
}

const html = (body: string) => `<!doctype html><meta charset="utf-8"><title>hostile</title><body>${body}</body>`

export interface HostileCounts {
  /** 64 KiB-URL requests (the issue: 10,000). */
  requests: number
  /** iframes (the issue: 500, 20 of them cross-site). */
  iframes: number
  /** Nesting depth of the deep-DOM page. */
  depth: number
}
export const FULL_COUNTS: HostileCounts = { requests: 10_000, iframes: 500, depth: 300 }

/** The pathological pages. */
export function hostileCases(counts: HostileCounts = FULL_COUNTS): HostileCase[] {
  const n = (x: number) => x
  // The console flood's lines as the page counted them (notes.floodSent).
  let floodSent = 0
  return [
    {
      name: 'console: 5,000 arguments of 300 chars x 10, and one 8 MB argument',
      pages: {
        '/': html(`<script>
        const a = Array.from({ length: 5000 }, (_, i) => String(i).padEnd(300, 'x'))
        for (let k = 0; k < 10; k++) console.log(...a)
        console.log('y'.repeat(8 << 20))
        console.log('hostile-done')
      </script>`),
      },
      async run(ctx) {
        await ctx.openWatchedTab(ctx.site.url)
        // Counted in /metrics first: polling the newest event meanwhile would read 1 MB envelopes
        // ten times a second, the reader's memory, not the page's. 12 lines: 10 + the 8 MB one + the marker.
        await waitFor(
          gently(
            async () =>
              metricSum(
                await (
                  await fetch(`${ctx.daemonUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
                ).text(),
                'browser_telemetry_events_stored_total',
                'category="console"',
              ) >= 12,
          ),
          120_000,
          '12 console lines stored',
        )
        await consoleMarker(ctx, 'hostile-done', 30_000, 1)
      },
    },
    {
      name: `console flood: as many lines as the page can log for ${n(3)} s (asks for 100k/s)`,
      pages: {
        '/': html(`<script>
          const end = performance.now() + ${n(3) * 1000}
          let i = 0
          function burst() {
            const stop = i + 10000
            for (; i < stop; i++) console.log('flood', i)
            if (performance.now() < end) setTimeout(burst, 0); else fetch('/done?n=' + i).then(() => console.log('hostile-done'))
          }
          burst()
        </script>`),
        '/done': (q, r) => {
          floodSent = Number(new URL(q.url!, 'http://x').searchParams.get('n'))
          r.writeHead(200, { 'content-type': 'text/plain' })
          r.end('ok')
        },
      },
      async run(ctx) {
        await ctx.openTab(ctx.site.url)
        await waitFor(() => floodSent, 120_000, 'the page to report its lines')
        await consoleMarker(ctx, 'hostile-done')
        ctx.notes.floodSent = floodSent
      },
    },
    {
      name: `${counts.requests} requests with 64 KiB URLs`,
      pages: {
        '/': html(`<script>
          const pad = 'a'.repeat(65536)
          let left = ${counts.requests}, next = 0
          // 32 in flight at a time: Chromium queues the rest anyway; this keeps the page's own memory sane.
          function one() { if (next >= ${counts.requests}) return; const i = next++; fetch('/r/' + i + '?' + pad).catch(() => {}).finally(() => { if (--left === 0) console.log('hostile-done'); else one() }) }
          for (let k = 0; k < 32; k++) one()
        </script>`),
      },
      async run(ctx) {
        await ctx.openTab(ctx.site.url)
        await consoleMarker(ctx, 'hostile-done', 240_000)
      },
    },
    {
      name: `${counts.iframes} iframes (${n(20)} cross-site)`,
      pages: {
        '/': html('set in run()'),
        '/child': html('<p>child</p><script>console.log("child")</script>'),
      },
      async run(ctx) {
        // The cross-site origin is only known once the server listens.
        ctx.site.route(
          '/',
          html(`<script>
          let loaded = 0
          const total = ${counts.iframes}
          for (let i = 0; i < total; i++) {
            const f = document.createElement('iframe')
            f.src = (i < ${n(20)} ? '${ctx.crossOrigin}' : '') + '/child?' + i
            f.onload = () => { if (++loaded === total) console.log('hostile-done') }
            document.body.appendChild(f)
          }
        </script>`),
        )
        await ctx.openTab(ctx.site.url)
        await consoleMarker(ctx, 'hostile-done', 240_000)
      },
    },
    {
      name: `deep DOM (${counts.depth} levels): 20 clicks on the deepest element`,
      pages: {
        '/': html(`<script>
        let el = document.body
        for (let i = 0; i < ${counts.depth}; i++) { const d = document.createElement('div'); d.style.cssText = 'padding-left:0'; el.appendChild(d); el = d }
        el.textContent = 'deepest'; el.style.cssText = 'position:fixed;left:10px;top:10px;width:100px;height:40px'
        console.log('hostile-ready')
      </script>`),
      },
      async run(ctx) {
        const tab = await ctx.openTab(ctx.site.url)
        await consoleMarker(ctx, 'hostile-ready')
        for (let i = 0; i < 20; i++) {
          await tab.Input.dispatchMouseEvent({ type: 'mousePressed', x: 50, y: 30, button: 'left', clickCount: 1 })
          await tab.Input.dispatchMouseEvent({ type: 'mouseReleased', x: 50, y: 30, button: 'left', clickCount: 1 })
        }
        await waitFor(
          gently(
            async () =>
              (await ctx.events('category=interaction&limit=100&since=10m')).filter(
                e => e.event.type === 'interaction_click',
              ).length >= 20,
          ),
          60_000,
          '20 clicks stored',
        )
      },
    },
    {
      name: `tabs opened in a loop: ${n(60)} window.open (daemon --max-targets 40)`,
      daemonArgs: ['--max-targets', '40'],
      chromiumArgs: ['--disable-popup-blocking'],
      pages: {
        '/': html(`<script>
          for (let i = 0; i < ${n(60)}; i++) window.open('/blank?' + i)
          console.log('hostile-done')
        </script>`),
        '/blank': html('<p>tab</p>'),
      },
      async run(ctx) {
        await ctx.openTab(ctx.site.url)
        await consoleMarker(ctx, 'hostile-done')
        await waitFor(
          gently(
            async () =>
              metricSum(
                await (
                  await fetch(`${ctx.daemonUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
                ).text(),
                'browser_telemetry_targets_refused_total',
              ) > 0,
          ),
          60_000,
          'targets refused',
        )
      },
    },
    {
      name: `interaction binding called in a tight loop (${n(200_000)} calls)`,
      pages: { '/': html('<p style="margin:0">binding</p><script>console.log("hostile-ready")</script>') },
      async run(ctx) {
        const tab = await ctx.openTab(ctx.site.url)
        await consoleMarker(ctx, 'hostile-ready')
        // The binding lives in the daemon's isolated world; find that world's context like an attacker with a foothold would.
        const contexts: { id: number; name: string }[] = []
        tab.on('Runtime.executionContextCreated', (p: { context: { id: number; name: string } }) =>
          contexts.push(p.context),
        )
        await tab.Runtime.enable()
        const world = await waitFor(
          () => contexts.find(x => x.name.startsWith('browser-telemetry-interaction-')),
          10_000,
          'the interaction world',
        )
        const binding = '__browserTelemetryInteraction_' + world.name.slice('browser-telemetry-interaction-'.length)
        // The daemon stops it at the source (removes the binding, then terminates this busy script):
        // the evaluation ends early with "Execution was terminated".
        const flood = await tab.Runtime.evaluate({
          contextId: world.id,
          expression: `{ const b = window[${JSON.stringify(binding)}]; const p = JSON.stringify({ t: 'click', x: 1, y: 2, selector: 'body', tag: 'BODY', text: 'forged' })
            window.__calls = 0
            for (let i = 0; i < ${n(200_000)}; i++) { b(p); window.__calls++ } }`,
        }).then(
          () => 'completed',
          (e: Error) => e.message,
        )
        ctx.notes.floodTerminated = flood.includes('terminated') ? 1 : 0
        ctx.notes.pageCalls = (
          await tab.Runtime.evaluate({ contextId: world.id, expression: 'window.__calls', returnByValue: true })
        ).result.value as number
        // The binding comes back once the budget has refilled: a real click is reported again.
        const metric = async (action: string) =>
          metricSum(
            await (await fetch(`${ctx.daemonUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
            'browser_telemetry_interaction_binding_total',
            `action="${action}"`,
          )
        await waitFor(
          gently(async () => (await metric('resumed')) >= 1),
          30_000,
          'the binding added back',
        )
        await tab.Input.dispatchMouseEvent({ type: 'mousePressed', x: 20, y: 12, button: 'left', clickCount: 1 })
        await tab.Input.dispatchMouseEvent({ type: 'mouseReleased', x: 20, y: 12, button: 'left', clickCount: 1 })
        await waitFor(
          gently(async () =>
            (await ctx.events('category=interaction&order=desc&limit=1')).some(e => e.event.data.text === 'binding'),
          ),
          30_000,
          'the real click after the flood',
        )
        await tab.Runtime.evaluate({ expression: 'console.log("hostile-done")' })
        await consoleMarker(ctx, 'hostile-done')
      },
    },
    ...SOURCE_MAP_CASES.map(sourceMapCase),
  ]
}

/** A process's CPU so far (user + system), in ms: fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 a second). */
export async function processCpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
