// perf-traces/ of a bundle: the performance traces started in the window, each file as stored
// (gzip JSON, not compressed again), and perf-traces/index.json describing them.
import type { Readable } from 'node:stream'
import type { StoredPerfTrace } from '../perf/trace-store.js'

export type BundledPerfTrace = StoredPerfTrace

/** What a bundle reads of the daemon's perf traces (src/perf's PerfTraceStore through PerfTraces). */
export interface BundlePerfTraces {
  stored(): BundledPerfTrace[]
  open(id: string): Promise<Readable | undefined>
}

/** Adds the traces started in [sinceUs, untilUs), then the index; returns how many went in. */
export async function writePerfTraces(
  traces: BundlePerfTraces,
  window: { sinceUs: number; untilUs?: number },
  entry: (name: string, chunks: Readable | string[], compress: boolean) => Promise<void>,
): Promise<number> {
  const index: (BundledPerfTrace & { file: string })[] = []
  for (const t of traces.stored()) {
    const startedUs = Date.parse(t.started_at) * 1000
    if (startedUs < window.sinceUs || (window.untilUs !== undefined && startedUs >= window.untilUs)) continue
    const file = await traces.open(t.trace_id)
    if (!file) continue // removed by the store bound since it was listed
    const name = `perf-traces/${t.trace_id}.json.gz`
    await entry(name, file, false)
    index.push({ file: name, ...t })
  }
  await entry('perf-traces/index.json', [JSON.stringify(index, null, 1) + '\n'], true)
  return index.length
}
