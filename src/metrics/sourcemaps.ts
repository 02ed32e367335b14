// Source-map learning: what became of each script the daemon read for its map, how many loads it
// made through the page, and what the map store wrote to its index (a steady climb is a page
// announcing new scripts faster than it should).
import { Counter } from 'prom-client'
import { setCounter, type Family } from './sources.js'

export function sourceMapMetrics({ registers, source }: Family): void {
  new Counter({
    name: 'browser_telemetry_sourcemap_scripts_total',
    help: 'Scripts read for their source map, by outcome (mapped, none: names no map, failed: sourcemap_failed)',
    labelNames: ['outcome'],
    registers,
    collect() {
      const s = source.deps?.sourceMaps?.()
      if (!s) return
      this.reset()
      for (const [outcome, n] of Object.entries(s.scripts)) this.inc({ outcome }, n)
    },
  })
  new Counter({
    name: 'browser_telemetry_sourcemap_loads_total',
    help: 'Scripts and maps loaded through the page to learn source maps',
    registers,
    collect() {
      const s = source.deps?.sourceMaps?.()
      if (s) setCounter(this, s.loads)
    },
  })
  new Counter({
    name: 'browser_telemetry_sourcemap_index_written_bytes_total',
    help: 'Bytes written to the source-map index (journal appends and snapshots)',
    registers,
    collect() {
      const s = source.deps?.sourceMaps?.()
      if (s) setCounter(this, s.indexBytes)
    },
  })
}
