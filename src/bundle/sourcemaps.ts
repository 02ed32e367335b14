// sourcemaps/ of a bundle: the maps the window's stacks use, one file each (the stored bytes), and
// sourcemaps/index.json naming each file's scripts, so a viewer without the daemon maps the same
// frames the same way.
import type { StoredRecord } from '../store/event-log.js'

/** What a bundle needs of the daemon's source maps (src/symbols' SourceMaps). */
export interface BundleSourceMaps {
  /** Records as the events API serves them; `used` collects the script URLs a map covers. */
  mapRecords(records: readonly StoredRecord[], used?: Set<string>): Promise<StoredRecord[]>
  /** The stored maps covering these scripts, one per file. */
  bundleMaps(scripts: Iterable<string>): {
    id: string
    map: { kind: string; url?: string; debug_id?: string; map_url?: string } | undefined
    scripts: string[]
  }[]
  read(id: string): Promise<Buffer | undefined>
}

/** One entry of sourcemaps/index.json. */
export interface BundledMap {
  /** `sourcemaps/<id>.map`. */
  file: string
  /** The script URLs (as stack frames name them) the map covers. */
  scripts: string[]
  bytes: number
  /** uploaded or fetched. */
  kind?: string
  url?: string
  debug_id?: string
  map_url?: string
}

/** Adds the map files, then the index, through the bundle's `entry`; returns how many maps went in. */
export async function writeSourceMaps(
  maps: BundleSourceMaps,
  scripts: ReadonlySet<string>,
  entry: (name: string, chunks: Buffer[] | string[]) => Promise<void>,
  signal: AbortSignal,
): Promise<number> {
  const index: BundledMap[] = []
  for (const m of maps.bundleMaps(scripts)) {
    const bytes = await maps.read(m.id)
    signal.throwIfAborted()
    if (!bytes) continue // only in memory (the store was full), or removed since
    const file = `sourcemaps/${m.id}.map`
    await entry(file, [bytes])
    index.push({ file, scripts: m.scripts, bytes: bytes.length, ...m.map })
  }
  await entry('sourcemaps/index.json', [JSON.stringify(index, null, 1) + '\n'])
  return index.length
}
