// Benchmark: how long refusing a hostile source map takes, against JSON.parse of the same text (the
// least any reader of the map pays). Two maps the bounds refuse: 100,000 sources (4.6 MB) and
// 10 million mapping segments (20 MB). Goal: each refusal <= 5x its JSON.parse (the text is scanned
// and parsed once, nothing resolved or decoded; resolving or decoding them all would be far more). Runs alternate, RUNS of each, medians.
// Knobs: RUNS (5).
import { MapError, parseSourceMap } from '../src/symbols/source-map.js'
import { fmt, median } from './common.js'

const RUNS = Number(process.env.RUNS ?? 5)
const LIMITS = { maxSources: 10_000, maxBytes: 64 * 1024 * 1024 }

const cases: { name: string; text: string; reason: string }[] = [
  {
    name: '100,000 sources',
    text: JSON.stringify({
      version: 3,
      sources: Array.from({ length: 100_000 }, (_, i) => `webpack://app/./src/module-${i}/index.ts`),
      mappings: 'AAAA',
    }),
    reason: 'too_many_sources',
  },
  {
    name: '10 million segments',
    text: `{"version":3,"sources":["a.ts"],"names":[],"mappings":"${'A,'.repeat(10_000_000 - 1)}A"}`,
    reason: 'too_many_segments',
  },
]

async function refusalMs(text: string, reason: string): Promise<number> {
  const started = performance.now()
  try {
    await parseSourceMap(text, LIMITS)
  } catch (err) {
    if (err instanceof MapError && err.reason === reason) return performance.now() - started
    throw err
  }
  throw new Error('the map was accepted')
}

function parseMs(text: string): number {
  const started = performance.now()
  JSON.parse(text)
  return performance.now() - started
}

for (const c of cases) {
  const refused: number[] = []
  const parsed: number[] = []
  for (let i = 0; i < RUNS; i++) {
    parsed.push(parseMs(c.text))
    refused.push(await refusalMs(c.text, c.reason))
  }
  const r = median(refused)
  const p = median(parsed)
  console.log(`${c.name}: refused in ${fmt(r)} ms, JSON.parse ${fmt(p)} ms, ratio ${fmt(r / p)} (goal <= 5)`)
}
