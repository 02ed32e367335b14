// Benchmark: hostile input, time and memory.
// Part 1, envelope fit: the largest pathological events through fitEvent (1 MiB cap), median time
// against one JSON.stringify of the same event (the baseline: fit may not cost more than a few
// serialisations) and against the same event at 1/4 size (linear work: ratio ~4, not ~16; a quarter
// that already fits the cap is not cut, so its ratio says nothing).
// Part 2, hostile pages: each case of test/helpers/hostile.ts against a real Chromium and the
// compiled daemon in a child process; prints time, /healthz max/p95/p50 (a separate probe process,
// fresh connections: see the harness), the daemon's peak RSS, stored / dropped, with a quiet page as
// the baseline in the same run. Several runs: medians per case (PAGE_RUNS).
// Knobs: RUNS (default 3 for part 1, 1 for part 2: PAGE_RUNS), SCALE (hostile counts, default 1),
// ONLY=fit|pages, CASES (comma-separated parts of case names, e.g. CASES=requests,iframes; the quiet
// baseline always runs).
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { categoryOf, type TelemetryEvent } from '../src/events/index.js'
import { fitEvent } from '../src/pipeline/envelope-fit.js'
import {
  hostileCases,
  runHostileCase,
  FULL_COUNTS,
  type CaseResult,
  type HostileCase,
} from '../test/helpers/hostile.js'
import { fmt, median } from './common.js'

const RUNS = Number(process.env.RUNS ?? 3)
const PAGE_RUNS = Number(process.env.PAGE_RUNS ?? 1)
const SCALE = Number(process.env.SCALE ?? 1)
const CAP = 1024 * 1024

function ev(type: TelemetryEvent['type'], data: unknown): TelemetryEvent {
  return { ts: 1, type, category: categoryOf(type), source: { kind: 'cdp' }, data } as TelemetryEvent
}

const FIT_CASES: [string, (k: number) => TelemetryEvent][] = [
  [
    'console_log 5,000 args x 300 chars',
    k =>
      ev('console_log', {
        level: 'log',
        text: 'a',
        args: Array.from({ length: 5000 * k }, (_, i) => `${i}:`.padEnd(300, 'x')),
      }),
  ],
  [
    'console_log one 8 MB argument',
    k => ev('console_log', { level: 'log', text: 'y'.repeat((8 * k) << 20), args: [] }),
  ],
  [
    'console_log 1,000,000 x 2-char args',
    k => ev('console_log', { level: 'log', text: 'a', args: Array.from({ length: 1_000_000 * k }, () => 'ab') }),
  ],
  [
    'network_request 64 KiB URL, 2 MB post data, 2,000 headers',
    k =>
      ev('network_request', {
        request_id: '1',
        method: 'POST',
        url: 'http://a/' + 'u'.repeat(65536 * k),
        post_data: 'p'.repeat((2 * k) << 20),
        headers: Object.fromEntries(Array.from({ length: 2000 * k }, (_, i) => [`x-h${i}`, 'v'.repeat(100)])),
      }),
  ],
  [
    'console_error stack of 200,000 frames, 1 Mi multi-byte chars of text',
    k =>
      ev('console_error', {
        text: 'é'.repeat(1 << 20),
        stack_trace: {
          callFrames: Array.from({ length: 200_000 * k }, (_, i) => ({
            functionName: `f${i}`,
            scriptId: '1',
            url: 'http://a/x.js',
            lineNumber: i,
            columnNumber: 1,
          })),
        },
      }),
  ],
]

function timeIt(fn: () => void): number {
  const t0 = performance.now()
  fn()
  return performance.now() - t0
}

if (process.env.ONLY !== 'pages') {
  console.log(`envelope fit, cap ${CAP} bytes, median of ${RUNS} runs (k = 1 vs k = 1/4 of the size)`)
  for (const [name, make] of FIT_CASES) {
    const fits: number[] = [],
      base: number[] = [],
      quarter: number[] = []
    let bytesIn = 0,
      bytesOut = 0
    for (let r = 0; r < RUNS; r++) {
      const big = make(1)
      base.push(
        timeIt(() => {
          bytesIn = Buffer.byteLength(JSON.stringify(big))
        }),
      )
      fits.push(
        timeIt(() => {
          bytesOut = Buffer.byteLength(fitEvent(big, CAP).json)
        }),
      )
      const small = make(0.25)
      quarter.push(timeIt(() => fitEvent(small, CAP)))
    }
    console.log(
      `  ${name}: ${fmt(bytesIn / 1048576, 1)} MB -> ${bytesOut} B; fit ${fmt(median(fits), 0)} ms, ` +
        `one JSON.stringify ${fmt(median(base), 0)} ms (ratio ${fmt(median(fits) / median(base), 1)}), quarter size ${fmt(median(quarter), 0)} ms (size ` +
        `x4 -> time x${fmt(median(fits) / median(quarter), 1)})`,
    )
  }
}

if (process.env.ONLY !== 'fit') {
  const root = join(import.meta.dirname, '..')
  try {
    execFileSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', cwd: root })
  } catch {
    console.log('(tsc reported errors; using what it emitted into dist/)')
  }
  const quiet: HostileCase = {
    name: 'baseline: a quiet page (one console line)',
    pages: { '/': '<!doctype html><title>quiet</title><script>console.log("hostile-done")</script>' },
    async run(ctx) {
      await ctx.openTab(ctx.site.url)
      const { consoleMarker } = await import('../test/helpers/hostile.js')
      await consoleMarker(ctx, 'hostile-done')
    },
  }
  console.log(
    `\nhostile pages (SCALE ${SCALE}, ${PAGE_RUNS} run(s) each; daemon = compiled dist/ in a child process with its runtime flags)`,
  )
  const only = process.env.CASES?.split(',').filter(Boolean)
  const cases = hostileCases({
    ...FULL_COUNTS,
    requests: Math.round(FULL_COUNTS.requests * SCALE),
    iframes: Math.round(FULL_COUNTS.iframes * SCALE),
  })
  for (const c of [quiet, ...cases.filter(x => !only || only.some(part => x.name.includes(part)))]) {
    const rows: CaseResult[] = []
    for (let r = 0; r < PAGE_RUNS; r++) {
      const stops: (() => unknown)[] = []
      try {
        rows.push(
          await runHostileCase(
            {
              teardown: fn => {
                stops.push(fn)
              },
            },
            c,
          ),
        )
      } finally {
        for (const s of stops.reverse()) await s()
      }
    }
    const m = (f: (x: (typeof rows)[number]) => number) => median(rows.map(f))
    console.log(
      `  ${c.name}: ${fmt(m(x => x.elapsedMs) / 1000, 1)} s; /healthz max ${fmt(
        m(x => x.healthz.maxMs),
        0,
      )} ms, p95 ${fmt(
        m(x => x.healthz.p95Ms),
        0,
      )} ms, p50 ${fmt(
        m(x => x.healthz.p50Ms),
        0,
      )} ms (${m(x => x.healthz.n)} probes, ${m(x => x.healthz.machineStalled)} more while the machine starved the prober or the daemon); ` +
        `daemon peak RSS ${fmt(
          m(x => x.peakRssMb),
          1,
        )} MB; stored ${m(x => x.stored)}, over a cap ${m(x => x.metrics.overBudget)}, shed ${m(x => x.metrics.shed)} (gaps ${m(x => x.missing)})${c.name.startsWith('console flood') ? `, lines sent ${m(x => x.notes.floodSent ?? 0)}, stored + gaps ${m(x => (x.storedByType.console_log ?? 0) - 1 + x.missing)}` : ''}, ` +
        `truncated ${m(x => x.truncated)}, largest envelope ${m(x => x.largestEnvelope)} B, state evictions ${m(x => x.metrics.evictions)}, targets refused ${m(x => x.metrics.targetsRefused)}`,
    )
  }
}
