// Hostile pages against a real Chromium and the compiled daemon in a child process.
// Each case asserts: /healthz answered within 200 ms at every probe, daemon peak RSS (VmHWM) under
// 150 MB, every stored envelope within the 1 MiB cap and valid, drops counted and visible as gaps
// (seqs with no envelope = over_budget + shed drops in /metrics, exactly). /healthz is probed the way a
// supervisor would: a separate process, a fresh connection per probe, 20 ms apart, a 2 s timeout
// counted as a failure; latency = request sent to last body byte. The daemon and the probe run at
// the daemon's deployed priority (Nice=-5, docs/limits.md). A probe during which the machine
// starved either of CPU for over 50 ms (the prober's own event-loop delay; the daemon main thread's
// kernel run-queue wait; the hypervisor's steal time on a VM) is counted apart, not used as a
// latency sample: it has to be answered (200, within 2 s) but its latency is the machine's, which
// a test on a shared 2-core machine cannot bound.
// Counts are the issue's, except COUNTS below (suite time; bench/hostile.ts runs the full counts).
// Needs dist/ (npm test builds it first).
import t, { type Test } from 'tap'
import { hostileCases, runHostileCase, ENVELOPE_CAP, type CaseResult } from './helpers/hostile.js'
import { expectedRefusals, SOURCE_MAP_CASES } from './helpers/hostile-sourcemaps.js'

// Scaled down for suite time on a 2-core machine (bench/hostile.ts runs the full counts).
const COUNTS = { requests: 1000, iframes: 250, depth: 300 }

// Nine cases, each a fresh browser and daemon: more than the default per-file 180 s.
t.setTimeout(900_000)

// Measured over 11 fresh-clone suite runs (quiet to load 14, one with two CPU burners; 95 case
// results): /healthz max 9-100 ms, median 47; over 3 runs of this file at load 7-11: 12-102 ms. 2x
// under this bound at the worst (probes during which the machine starved the prober or the daemon
// are not samples).
const HEALTHZ_MAX_MS = 200
// A product bound of the README's that this suite pins (bench/hostile.ts reports it at full
// counts). Measured over 11 fresh-clone suite runs (quiet to load 14; 95 case results): 88.7-130
// MB, median 110 MB; the console case, the highest, 117-130 MB: 1.15x under this bound at its max
// (3 runs of this file at load 7-11: 90.5-125.8 MB).
// Thin, and kept: it is the product's goal, not a test-only bound. Earlier, at a load average of
// 2.5-5.7: the console case 116-134 MB over 19 runs, median 123 MB; the other six cases 88-122 MB
// (3 runs). RSS does not follow the machine's load the way latency does; it follows V8's
// collections. The console case's page taken apart (3-6 runs each, before the change below): only
// small lines 89-93 MB, with the 8 MB argument 106 MB (cut in the raw frame, it costs ws's
// reassembly of the frame), with the ten 5,000-argument calls 115-150 MB (each call's parsed
// arguments outlive young collections and wait for a mark-compact). Before large CDP frames gave
// their bytes back once parsed (releaseFrame in src/monitor/cdp-client.ts) the whole case measured
// median 133 MB, max 148 MB over 16 runs, interleaved with 16 of those above.
const RSS_MAX_MB = 150

const extra: Record<string, (t: Test, r: CaseResult) => void> = {
  // The source-map cases (test/helpers/hostile-sourcemaps.ts) are held to the same /healthz and RSS
  // bounds: measured over 9 fresh-clone suite runs (quiet to load 14), /healthz max 33-80 ms, peak
  // RSS 114-129 MB (10 million segments read whole at a 24 MiB cap: 1.17x under the bound). Since
  // the text is scanned as it arrives, at load 3-5: 97-127 MB; the 20 maps at the cap 113 MB.
  ...Object.fromEntries(
    SOURCE_MAP_CASES.map(spec => [
      spec.name,
      (t: Test, r: CaseResult) =>
        t.same(r.notes, expectedRefusals(spec), 'each map refused once, with its reason (sourcemap_failed)'),
    ]),
  ),
  'source maps: 20 at the cap': (t, r) => {
    // Every error stored once, as it was thrown: nothing could map it.
    t.equal(r.storedByType.console_error, 20, 'each script’s error stored')
  },
  'console: 5,000': (t, r) => {
    t.ok(r.truncated >= 11, `the 10 huge calls and the 8 MB argument were cut (${r.truncated} truncated)`)
    t.ok(r.largestEnvelope > ENVELOPE_CAP - 64 * 1024, `cut close to the cap, not far below: ${r.largestEnvelope}`)
  },
  'console flood': (t, r) => {
    // Every line the page logged is stored or is a gap (the one other console line: hostile-done).
    const lines = (r.storedByType.console_log ?? 0) - 1
    t.equal(lines + r.missing, r.notes.floodSent, `stored ${lines} + gaps ${r.missing} = sent ${r.notes.floodSent}`)
  },
  'requests with 64 KiB URLs': (t, r) => {
    t.ok(r.metrics.evictions > 0, `URL cuts counted: ${r.metrics.evictions}`)
  },
  'tabs opened in a loop': (t, r) => {
    t.ok(r.metrics.targetsRefused > 0, `targets refused: ${r.metrics.targetsRefused}`)
    t.ok(
      r.logLines.some(l => l.includes('attached target cap reached')),
      'a warning was logged',
    )
  },
  'interaction binding': (t, r) => {
    const clicks = r.storedByType.interaction_click ?? 0
    // The interaction budget's burst and rate over a wall-clock span that contains the flood: a bound
    // of the code, which load cannot break (it only lengthens the span). Measured over 11 suite runs
    // (quiet to load 14): 108-131 clicks against bounds of 177-190 (1.42-1.70x); over 3 runs of this
    // file at load 7-11: 114-169 against 180-195 (1.15x at load 10). Thin, and not widened: the
    // bound is the bucket's own rule (100 + 50/s), which no timing can exceed.
    const most = Math.floor(100 + 50 * (r.elapsedMs / 1000) + 5)
    t.ok(clicks <= most, `forged clicks rate-limited: ${clicks} <= ${most} in ${(r.elapsedMs / 1000).toFixed(1)} s`)
    // Stopped at the source: the binding removed on the first drop, and the script looping over it
    // (Chromium applies the removal only between tasks) terminated, once.
    t.equal(r.notes.floodTerminated, 1, 'the flooding evaluation was terminated')
    t.equal(r.metrics.bindingTerminated, 1, 'one termination')
    t.equal(r.metrics.bindingPaused, 1, 'the binding removed once')
    t.equal(r.metrics.bindingResumed, 1, 'and added back once')
    // Measured over 11 suite runs (quiet to load 14): 1,822-8,694 calls, 5.8x under the bound.
    t.ok(r.notes.pageCalls! < 200_000 / 4, `the page made ${r.notes.pageCalls} of 200,000 calls`)
    // Every call the page made reached the daemon (the removal only lands after the terminated task)
    // and is either stored or an over-budget drop (a gap); the counter is bumped after each call,
    // so the page may have made one more than it counted. The one real click after the flood is
    // stored too.
    const received = clicks - 1 + r.metrics.interactionOverBudget
    t.ok(
      received - r.notes.pageCalls! >= 0 && received - r.notes.pageCalls! <= 1,
      `calls received (${received} = ${clicks - 1} stored + ${r.metrics.interactionOverBudget} dropped) = calls made (${r.notes.pageCalls}, +1)`,
    )
  },
}

for (const c of hostileCases(COUNTS)) {
  t.test(c.name, async t => {
    // Nine cases of at most 120 s each would not all fit the file's 900 s at their bound; each takes
    // under 10 s unloaded (20 s for the source-map cases), so the suite stays far inside it.
    t.setTimeout(120_000)
    const r = await runHostileCase(t, c)
    t.comment(
      JSON.stringify({
        elapsedMs: Math.round(r.elapsedMs),
        healthz: r.healthz,
        peakRssMb: Math.round(r.peakRssMb),
        stored: r.stored,
        lastSeq: r.lastSeq,
        missing: r.missing,
        largest: r.largestEnvelope,
        metrics: r.metrics,
      }),
    )
    // Probed throughout: every answered probe counts, also one the machine starved. Measured over 11
    // fresh-clone suite runs (quiet to load 14): 5-421 latency samples a case; the deep-DOM case, the
    // shortest (about 1 s), 5-29, and 4-12 (plus 1-4 starved) over 3 runs of this file at load 7-11.
    // A minimum of 3 keeps that case 1.7x clear and still shows the probe ran beside it.
    t.ok(
      r.healthz.n + r.healthz.machineStalled >= 3,
      `/healthz probed throughout (${r.healthz.n} latency samples; ${r.healthz.machineStalled} more while the machine starved the prober or the daemon of ` +
        `CPU for over 50 ms; steal up to ${r.healthz.machineStealMaxMs} ms)`,
    )
    // Every probe, stalled ones too: the slowest answered 12-328 ms over 3 runs of this file at load
    // 8-17, 6.1x under the 2 s timeout.
    t.equal(
      r.healthz.failures,
      0,
      `every probe answered 200 within its 2 s timeout (slowest ${r.healthz.answeredMaxMs.toFixed(0)} ms)`,
    )
    t.ok(
      r.healthz.maxMs < HEALTHZ_MAX_MS,
      `/healthz max ${r.healthz.maxMs.toFixed(0)} ms (p50 ${r.healthz.p50Ms.toFixed(0)}, p95 ${r.healthz.p95Ms.toFixed(0)}) < ${HEALTHZ_MAX_MS} ms`,
    )
    t.ok(r.peakRssMb < RSS_MAX_MB, `daemon peak RSS ${r.peakRssMb.toFixed(1)} MB < ${RSS_MAX_MB} MB`)
    t.ok(r.largestEnvelope <= ENVELOPE_CAP, `largest envelope ${r.largestEnvelope} <= ${ENVELOPE_CAP}`)
    t.equal(r.invalidEnvelopes, 0, 'every envelope valid against its schema')
    t.equal(r.metrics.storeDropped, 0)
    t.equal(
      r.missing,
      r.metrics.overBudget + r.metrics.shed,
      `gaps (${r.missing}) = drops (${r.metrics.overBudget} over a cap + ${r.metrics.shed} shed)`,
    )
    for (const [prefix, check] of Object.entries(extra))
      if (c.name.startsWith(prefix) || c.name.includes(prefix)) check(t, r)
  })
}
