// The actions derivation (src/actions) on a synthesized 30-minute agent session: 10,000
// cdp_commands (Playwright-like clicks, fills, presses, gotos, evaluates and their setup, on two
// tabs, in steps) with 50,000 page, network, console and interaction events. Prints the median of
// RUNS derivations (goal <= 200 ms) and, as the baseline of the same process, the time to
// JSON.parse the same envelopes once (what any reader of the window pays anyway); then the heap
// the builder holds per record when fed parsed lines one at a time (with --expose-gc).
//   npx tsx --expose-gc bench/actions.ts        (COMMANDS=10000 EVENTS=50000 RUNS=7)
import { performance } from 'node:perf_hooks'
import { ActionBuilder, deriveActions } from '../src/actions/index.js'
import type { Envelope } from '../src/events/index.js'
import { agentSession } from './agent-session.js'
import { fmt, median } from './common.js'

const COMMANDS = Number(process.env.COMMANDS ?? 10_000)
const EVENTS = Number(process.env.EVENTS ?? 50_000)
const RUNS = Number(process.env.RUNS ?? 7)
const lines = agentSession(COMMANDS, EVENTS)
const envelopes = lines.map(l => JSON.parse(l) as Envelope)
const commandCount = envelopes.filter(e => e.event.type === 'cdp_command').length
process.stdout.write(
  `${commandCount} commands, ${envelopes.length - commandCount} other events, ${lines.length} in all\n`,
)

const parseMs: number[] = []
const deriveMs: number[] = []
let actions = 0
for (let r = 0; r < RUNS; r++) {
  // Interleaved: the baseline, then the derivation, round by round.
  let t0 = performance.now()
  let n = 0
  for (const l of lines) n += (JSON.parse(l) as Envelope).seq > 0 ? 1 : 0
  parseMs.push(performance.now() - t0)
  if (n !== lines.length) throw new Error('parse baseline lost envelopes')
  t0 = performance.now()
  actions = deriveActions(envelopes).length
  deriveMs.push(performance.now() - t0)
}
const d = median(deriveMs)
const p = median(parseMs)
process.stdout.write(
  `derive: ${fmt(d, 1)} ms (median of ${RUNS}; runs ${deriveMs.map(x => fmt(x, 0)).join(', ')}), ${actions} actions\n` +
    `JSON.parse of the same envelopes: ${fmt(p, 1)} ms; ratio derive / parse ${fmt(d / p)}\n`,
)

const gc = (globalThis as { gc?: () => void }).gc
if (gc) {
  // Five builders held at once, so the figure stands out of the heap's noise.
  const settle = () => {
    for (let i = 0; i < 4; i++) gc()
    return process.memoryUsage().heapUsed
  }
  const before = settle()
  // Fed as the API and the bundle feed it: each stored line parsed, then let go.
  const builders = Array.from({ length: 5 }, () => {
    const b = new ActionBuilder()
    for (const l of lines) b.add(JSON.parse(l) as Envelope)
    return b
  })
  const held = settle() - before
  const records = builders.reduce((n, b) => n + b.size, 0)
  process.stdout.write(`builder: ${builders[0]!.size} records, ${fmt(held / records, 0)} bytes of heap each\n`)
  if (builders[0]!.finish().length !== actions) throw new Error('builder and deriveActions disagree')
}
