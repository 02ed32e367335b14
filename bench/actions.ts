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
import { fmt, median } from './common.js'

const COMMANDS = Number(process.env.COMMANDS ?? 10_000)
const EVENTS = Number(process.env.EVENTS ?? 50_000)
const RUNS = Number(process.env.RUNS ?? 7)
const T0 = Date.UTC(2026, 11, 1) * 1000
const SPAN_US = 30 * 60 * 1_000_000

/** The session as stored JSON lines, in seq order (ts never decreases). */
function session(): string[] {
  const out: { ts: number; event: Record<string, unknown> }[] = []
  // A cycle sends 4.5 commands on average (a goto 1, a click 7, a fill 6, a press and an evaluate 4).
  const cycles = Math.ceil(COMMANDS / 4.5)
  const perCycleUs = SPAN_US / cycles
  const eventsPerCycle = Math.round(EVENTS / cycles)
  let commands = 0
  const cmd = (ts: number, target: string, method: string, extra: Record<string, unknown> = {}) => {
    commands++
    out.push({
      ts,
      event: {
        ts,
        type: 'cdp_command',
        category: 'control',
        source: { kind: 'local_process' },
        data: {
          connection_id: 'c0ffee00-0000-4000-8000-000000000001',
          id: commands,
          method,
          session_id: `S-${target}`,
          target_id: target,
          duration_ms: 1.5,
          outcome: commands % 97 === 0 ? 'error' : 'ok',
          request_bytes: 120,
          response_bytes: 300,
          ...extra,
        },
      },
    })
  }
  const page = (ts: number, target: string, type: string, category: string, data: Record<string, unknown>) =>
    out.push({
      ts,
      event: {
        ts,
        type,
        category,
        source: { kind: 'cdp' },
        data: { target_id: target, target_type: 'page', session_id: `S-${target}`, nav_seq: 1, ...data },
      },
    })
  for (const target of ['T-A', 'T-B'])
    for (const m of [
      'Page.enable',
      'Runtime.enable',
      'Network.enable',
      'Page.getFrameTree',
      'Emulation.setFocusEmulationEnabled',
    ])
      cmd(T0, target, m)
  for (let c = 0; c < cycles && commands < COMMANDS; c++) {
    const target = c % 5 === 4 ? 'T-B' : 'T-A'
    let ts = T0 + Math.round(c * perCycleUs) + 1000
    const step = `step-${Math.floor(c / 10)}`
    const next = (ms: number) => (ts += ms * 1000)
    switch (c % 4) {
      case 0:
        cmd(next(20), target, 'Page.navigate', { step_id: step, duration_ms: 20 })
        page(next(1), target, 'page_navigation', 'page', { url: `https://shop.example.com/p/${c}`, frame_id: 'F' })
        break
      case 1:
        for (const m of [
          'Runtime.callFunctionOn',
          'Runtime.callFunctionOn',
          'DOM.scrollIntoViewIfNeeded',
          'DOM.getContentQuads',
        ])
          cmd(next(2), target, m, { step_id: step })
        for (const t of ['mouseMoved', 'mousePressed', 'mouseReleased'])
          cmd(next(2), target, 'Input.dispatchMouseEvent', { step_id: step, input_type: t })
        page(next(1), target, 'interaction_click', 'interaction', {
          x: 10,
          y: 20,
          selector: `#b${c}`,
          tag: 'BUTTON',
          text: 'Buy',
        })
        break
      case 2:
        for (let i = 0; i < 5; i++) cmd(next(2), target, 'Runtime.callFunctionOn', { step_id: step })
        cmd(next(2), target, 'Input.insertText', { step_id: step, input_chars: 12 })
        break
      default:
        cmd(next(2), target, 'Runtime.callFunctionOn', { step_id: step })
        cmd(next(2), target, 'Input.dispatchKeyEvent', {
          step_id: step,
          input_type: 'keyDown',
          input_key: 'Enter',
          input_chars: 1,
        })
        cmd(next(2), target, 'Input.dispatchKeyEvent', { step_id: step, input_type: 'keyUp', input_key: 'Enter' })
        cmd(next(500), target, 'Runtime.evaluate', { step_id: step })
    }
    // The page's own traffic after the action: requests with responses, console lines.
    for (let i = 0; i < eventsPerCycle; i++) {
      next(perCycleUs / 1000 / (eventsPerCycle + 20))
      const id = `${c}.${i >> 1}`
      if (i % 5 === 4)
        page(ts, target, 'console_log', 'console', {
          level: i % 20 === 4 ? 'error' : 'log',
          text: `line ${i}`,
          args: [],
        })
      else if (i % 2 === 0)
        page(ts, target, 'network_request', 'network', {
          request_id: id,
          method: 'GET',
          url: `https://shop.example.com/api/${id}`,
          headers: {},
        })
      else
        page(ts, target, 'network_response', 'network', {
          request_id: id,
          status: i % 50 === 1 ? 500 : 200,
          status_text: 'OK',
          headers: { 'content-type': 'application/json' },
          mime_type: 'application/json',
          body: '{"items":[1,2,3]}',
        })
    }
  }
  out.sort((a, b) => a.ts - b.ts)
  return out.map((e, i) => JSON.stringify({ seq: i + 1, event: e.event }))
}

const lines = session()
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
