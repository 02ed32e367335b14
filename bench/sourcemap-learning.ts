// Benchmark: what learning source maps costs the daemon when a page announces new ones without end.
// A page loads COUNT scripts, RATE a second (the per-page learning rate), each throwing once; in the
// "maps" run each script carries a new Debug ID and names its own map (also carrying the ID), which
// the daemon fetches, parses and stores; in the "plain" run the same scripts name nothing. Both
// runs wait until every script was read for its map (/metrics), then report the daemon's CPU.
// Goal: maps <= 2x plain. Runs alternate, RUNS of each, medians. The compiled daemon in a child
// process with a real Chromium (test/helpers/hostile.ts), so `npm run build` first.
// Knobs: RUNS (3), COUNT (1000), RATE (scripts/s, 20).
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { runHostileCase, TOKEN, type HostileCase } from '../test/helpers/hostile.js'
import { waitFor } from '../test/helpers/http.js'
import { fmt, median } from './common.js'

const RUNS = Number(process.env.RUNS ?? 3)
const COUNT = Number(process.env.COUNT ?? 1000)
const RATE = Number(process.env.RATE ?? 20)

function learningCase(withMaps: boolean): HostileCase {
  const ids = Array.from({ length: COUNT }, () => randomUUID())
  const script = (i: number) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' })
    const comments = withMaps ? `\n//# debugId=${ids[i]}\n//# sourceMappingURL=/maps/${i}.map\n` : '\n'
    res.end(`(function chunk${i}(){throw new Error('chunk ${i}')})()${comments}`)
  }
  const map = (i: number) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    res.end(
      JSON.stringify({ version: 3, sources: [`src/chunk-${i}.ts`], names: [], mappings: 'AAAA', debugId: ids[i] }),
    )
  }
  const pages: HostileCase['pages'] = {
    '/': `<!doctype html><title>chunks</title><script>
      let i = 0
      const add = () => {
        for (let k = 0; k < ${RATE} && i < ${COUNT}; k++, i++) {
          const s = document.createElement('script'); s.src = '/js/' + i + '.js'; document.head.append(s)
        }
        if (i < ${COUNT}) setTimeout(add, 1000)
      }
      add()
    </script>`,
  }
  for (let i = 0; i < COUNT; i++) {
    pages[`/js/${i}.js`] = script(i)
    pages[`/maps/${i}.map`] = map(i)
  }
  return {
    name: withMaps ? 'maps' : 'plain',
    pages,
    async run(ctx) {
      await ctx.openWatchedTab(ctx.site.url)
      const read = async () => {
        const text = await (
          await fetch(`${ctx.daemonUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
        ).text()
        let n = 0
        for (const m of text.matchAll(/^browser_telemetry_sourcemap_scripts_total\{outcome="(\w+)"\} (\d+)$/gm)) {
          ctx.notes[m[1]!] = Number(m[2])
          n += Number(m[2])
        }
        const bytes = /^browser_telemetry_sourcemap_index_written_bytes_total (\d+)$/m.exec(text)
        ctx.notes.indexBytes = Number(bytes?.[1] ?? 0)
        return n >= COUNT
      }
      await waitFor(read, COUNT * 1000, `${COUNT} scripts read for their maps`)
    },
  }
}

const reg = { teardown: (fn: () => unknown) => void cleanups.push(fn) }
const cleanups: (() => unknown)[] = []
const rows: Record<string, { cpu: number[]; wall: number[]; notes: Record<string, number>[] }> = {
  maps: { cpu: [], wall: [], notes: [] },
  plain: { cpu: [], wall: [], notes: [] },
}
for (let run = 0; run < RUNS; run++) {
  for (const withMaps of run % 2 === 0 ? [true, false] : [false, true]) {
    const r = await runHostileCase(reg, learningCase(withMaps))
    for (const fn of cleanups.splice(0).reverse()) await fn()
    const row = rows[r.name]!
    row.cpu.push(r.cpuMs)
    row.wall.push(r.elapsedMs)
    row.notes.push(r.notes)
    console.log(
      `${r.name}: daemon CPU ${fmt(r.cpuMs, 0)} ms over ${fmt(r.elapsedMs / 1000, 1)} s; scripts ${JSON.stringify(r.notes)}; peak RSS ${fmt(r.peakRssMb, 1)} MB`,
    )
  }
}
const maps = median(rows.maps!.cpu)
const plain = median(rows.plain!.cpu)
console.log(
  `\n${COUNT} scripts at ${RATE}/s: daemon CPU median ${fmt(maps, 0)} ms with new Debug IDs and maps, ${fmt(plain, 0)} ms without: ` +
    `ratio ${fmt(maps / plain, 2)} (goal <= 2)`,
)
