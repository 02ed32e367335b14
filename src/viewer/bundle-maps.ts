// A bundle's source maps in the page: sourcemaps/index.json names each map file and the scripts it
// covers; every console stack frame of the bundle that has no original position yet is mapped with
// them, by the same code the daemon maps with (src/symbols), so an offline viewer shows what the
// daemon's readers show. Bounded like the other files of a bundle, and by the maps' own limits.
import { isMappable, mapStack } from '../symbols/frames.js'
import { MapError, parseSourceMap, type ParsedMap } from '../symbols/source-map.js'
import type { StackTrace } from '../events/index.js'
import type { Envelope } from './model.js'

/** Bounds of one map in the page: sources, and its estimated heap once decoded (lines, segments, names). */
const LIMITS = { maxSources: 10_000, maxBytes: 100 * 1024 * 1024 }

/** Reads an entry's text (bounded by the caller's per-file cap). */
export type EntryText<E> = (e: E) => Promise<string>

/** Maps the bundle's unmapped console stacks; returns how many events changed. Problems go to `warnings`. */
export async function mapBundleStacks<E extends { name: string }>(
  entries: Map<string, E>,
  text: EntryText<E>,
  events: Envelope[],
  warnings: string[],
): Promise<number> {
  const indexEntry = entries.get('sourcemaps/index.json')
  if (!indexEntry) return 0
  let index: unknown
  try {
    index = JSON.parse(await text(indexEntry))
  } catch {
    warnings.push('sourcemaps/index.json is not valid JSON: stacks are shown as stored')
    return 0
  }
  if (!Array.isArray(index)) return 0
  const byScript = new Map<string, ParsedMap>()
  const breathe = () => new Promise<void>(r => setTimeout(r, 0))
  for (const item of index as { file?: unknown; scripts?: unknown }[]) {
    const e = typeof item?.file === 'string' ? entries.get(item.file) : undefined
    if (!e || !Array.isArray(item.scripts)) continue
    try {
      const map = await parseSourceMap(await text(e), LIMITS, breathe)
      for (const s of item.scripts) if (typeof s === 'string') byScript.set(s, map)
    } catch (err) {
      warnings.push(`${e.name} could not be used: ${err instanceof MapError ? err.message : (err as Error).message}`)
    }
  }
  if (byScript.size === 0) return 0
  let changed = 0
  for (const env of events) {
    const data = env.event.data as { level?: unknown; stack_trace?: StackTrace }
    if (env.event.category !== 'console' || !isMappable(env.event.type, data)) continue
    const mapped = mapStack(data.stack_trace!, url => byScript.get(url))
    if (!mapped) continue
    data.stack_trace = mapped
    changed++
  }
  return changed
}
