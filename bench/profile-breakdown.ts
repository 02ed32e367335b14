// Where the daemon's main-thread time goes: reads `.cpuprofile` files written by `node --cpu-prof`
// (e.g. overhead.ts with DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") and sums self time into
// the stages of the flow: CDP frame read, JSON parse, dispatch, each collector, envelope build,
// validation, redaction, fit, serialisation, store write, fan-out, GC. A sample is charged to the
// stage of its innermost frame of ours (or of a library we call); JSON.parse / JSON.stringify and
// GC are their own rows. Samples before the daemon's first CDP message (startup) are left out.
//
// Usage: npx tsx bench/profile-breakdown.ts LOADS DIR_OR_FILES...   (LOADS: page loads the
// profiled daemons served in all, warm-up loads included, to print ms per load)
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fmt } from './common.js'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** Stage rules on a frame's file (first match wins), for frames of ours and of libraries we call. */
const STAGES: [RegExp, string][] = [
  [/node_modules\/ws\//, 'CDP frame read (ws)'],
  [/\/monitor\/(cdp-client|console-frame-cut)\.js/, 'CDP message intake (queue, cut, unread drop)'],
  [/\/monitor\//, 'dispatch to sessions and handlers'],
  [/\/collectors\/console[^/]*\.js/, 'collector: console'],
  [/\/collectors\/network[^/]*\.js/, 'collector: network'],
  [/\/collectors\/page[^/]*\.js/, 'collector: page'],
  [/\/collectors\/(interaction|selector)[^/]*\.js/, 'collector: interaction'],
  [/\/collectors\/(recording|screenshot)\.js/, 'collector: recording/screenshot'],
  [/\/collectors\//, 'collector: other'],
  [/\/events\/validate\.js|node_modules\/@sinclair\/typebox/, 'validation'],
  [/\/events\/redact\.js/, 'redaction'],
  [/\/pipeline\/envelope-fit\.js/, 'fit'],
  [/\/pipeline\/(pipeline|shedding|bounds)\.js/, 'envelope build, gate, shedding'],
  [/\/store\/|node_modules\/(classic-level|abstract-level|level-)/, 'store write'],
  [/\/api\/|node_modules\/koa/, 'SSE and API'],
  [/\/ship\/|node_modules\/(nats|@nats-io)/, 'sinks'],
  [/\/symbols\//, 'source maps'],
  [/\/proxy\/|\/agent\//, 'proxy and steps'],
  [/\/(metrics|daemon)\/|node_modules\/prom-client/, 'metrics and wiring'],
  [/node_modules\/pino|\/log\.js/, 'logging'],
]

function stageOf(chain: ProfileNode[]): string {
  const leaf = chain[0]!.callFrame
  if (leaf.functionName === '(garbage collector)') return 'GC'
  if (leaf.functionName === '(program)') return 'V8/native (program)'
  if (leaf.url === '' && (leaf.functionName === 'parse' || leaf.functionName === 'stringify')) {
    const caller = chain.find(n => n.callFrame.url !== '')?.callFrame.url ?? ''
    const base = `JSON.${leaf.functionName}`
    if (/\/monitor\//.test(caller)) return `${base} (CDP messages)`
    if (/\/pipeline\/|\/store\//.test(caller)) return `${base} (envelopes)`
    return `${base} (other)`
  }
  // Node's own frames (streams, buffers, timers) are charged to the first caller of ours or of a library.
  for (const n of chain) {
    const url = n.callFrame.url
    if (url === '' || url.startsWith('node:')) continue
    for (const [re, stage] of STAGES) if (re.test(url)) return stage
    return 'other'
  }
  return chain.some(n => n.callFrame.url.startsWith('node:')) ? 'node internals (no caller of ours)' : 'V8 builtins'
}

function files(args: string[]): string[] {
  return args.flatMap(a =>
    statSync(a).isDirectory()
      ? readdirSync(a)
          .filter(f => f.endsWith('.cpuprofile'))
          .map(f => join(a, f))
      : [a],
  )
}

const [loadsArg, ...paths] = process.argv.slice(2)
const loads = Number(loadsArg)
if (!(loads > 0) || paths.length === 0) {
  console.error('usage: npx tsx bench/profile-breakdown.ts LOADS DIR_OR_FILES...')
  process.exit(2)
}
const totals = new Map<string, number>()
/** DETAIL=<stage prefix>: also the leaf functions of that stage. */
const detail = process.env.DETAIL
const leaves = new Map<string, number>()
for (const file of files(paths)) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(p.nodes.map(n => [n.id, n]))
  const parent = new Map<number, ProfileNode>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n)
  const chainCache = new Map<number, string>()
  const stage = (id: number) => {
    let s = chainCache.get(id)
    if (s === undefined) {
      const chain: ProfileNode[] = []
      for (let n: ProfileNode | undefined = byId.get(id); n; n = parent.get(n.id)) chain.push(n)
      s = stageOf(chain)
      chainCache.set(id, s)
    }
    return s
  }
  const isCdp = (id: number) => {
    for (let n: ProfileNode | undefined = byId.get(id); n; n = parent.get(n.id))
      if (/\/monitor\/cdp-client\.js/.test(n.callFrame.url)) return true
    return false
  }
  let started = false
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!
    if (!started) started = isCdp(id)
    if (!started) continue
    const s = stage(id)
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue
    totals.set(s, (totals.get(s) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000)
    if (detail && s.startsWith(detail)) {
      const f = byId.get(id)!.callFrame
      const k = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|node_modules)\//, '')}`
      leaves.set(k, (leaves.get(k) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000)
    }
  }
}
const all = [...totals.values()].reduce((a, b) => a + b, 0)
console.log(`| Stage | ms per load | share |`)
console.log(`| --- | --- | --- |`)
for (const [s, ms] of [...totals].sort((a, b) => b[1] - a[1]))
  console.log(`| ${s} | ${fmt(ms / loads, 1)} | ${fmt((ms / all) * 100, 1)}% |`)
console.log(`| **main thread, all** | **${fmt(all / loads, 1)}** | 100% |`)
if (detail)
  for (const [k, ms] of [...leaves].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${fmt(ms / loads, 2)}  ${k}`)
