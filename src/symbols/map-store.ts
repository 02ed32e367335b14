// Source maps on disk (`<data-dir>/sourcemaps`): the maps users uploaded and the maps the daemon
// fetched, one file per distinct content (`maps/<id>.map`, id = the first 32 hex digits of its
// SHA-256) and one index (`index.json`, written whole or not at all). Together they stay under a
// byte bound: fetched maps are a cache and go oldest first to make room; uploads never push out
// uploads (the PUT is refused instead). The index also keeps the Debug IDs read from scripts, so
// a map uploaded by Debug ID still applies to old events after a restart. One change at a time.
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ServiceError } from '../errors.js'
import { writeFileAtomic } from '../util/atomic-file.js'

export type MapKind = 'uploaded' | 'fetched'

export interface StoredMap {
  /** Content id: also the file name (`maps/<id>.map`). */
  id: string
  kind: MapKind
  /** The script URL the map is for (an upload without it is matched by Debug ID only). */
  url?: string
  debug_id?: string
  /** Where a fetched map came from (data: URLs shortened). */
  map_url?: string
  bytes: number
  /** When it was uploaded or fetched (RFC 3339). */
  at: string
}

interface Index {
  version: 1
  maps: StoredMap[]
  /** Script URL -> the Debug ID its text carries, oldest first. */
  scripts: [string, string][]
}

/** Fetched maps kept at most (the oldest go first). */
const MAX_FETCHED = 2000
/** Script Debug IDs remembered at most (the oldest are forgotten first): with URLs of at most 2,048
 * characters (what is learned), the index stays within a few MB. */
const MAX_SCRIPT_IDS = 1000

export class MapStore {
  private maps: StoredMap[] = []
  private readonly scriptIds = new Map<string, string>()
  private chain: Promise<unknown> = Promise.resolve()

  private constructor(
    readonly dir: string,
    readonly maxBytes: number,
  ) {}

  /** Opens (or creates) the store; files the index does not name (an interrupted write) are removed. */
  static async open(dir: string, maxBytes: number): Promise<MapStore> {
    const store = new MapStore(dir, maxBytes)
    await mkdir(join(dir, 'maps'), { recursive: true, mode: 0o700 })
    let index: Index | undefined
    try {
      index = JSON.parse(await readFile(join(dir, 'index.json'), 'utf8')) as Index
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new Error(`${dir}/index.json: ${(err as Error).message}`)
    }
    if (index?.version === 1) {
      store.maps = index.maps.filter(m => typeof m.id === 'string' && /^[0-9a-f]{32}$/.test(m.id))
      for (const [url, id] of index.scripts ?? []) store.scriptIds.set(url, id)
    }
    const named = new Set(store.maps.map(m => `${m.id}.map`))
    for (const f of await readdir(join(dir, 'maps'))) if (!named.has(f)) await rm(join(dir, 'maps', f), { force: true })
    return store
  }

  /** Maps stored (uploaded and fetched). */
  get size(): number {
    return this.maps.length
  }

  /** Bytes of every distinct file. */
  get bytes(): number {
    return sumFiles(this.maps)
  }

  uploadedByUrl(url: string): StoredMap | undefined {
    return this.maps.find(m => m.kind === 'uploaded' && m.url === url)
  }
  uploadedByDebugId(id: string): StoredMap | undefined {
    return this.maps.find(m => m.kind === 'uploaded' && m.debug_id === id)
  }
  fetchedByUrl(url: string): StoredMap | undefined {
    return this.maps.find(m => m.kind === 'fetched' && m.url === url)
  }
  uploaded(): StoredMap[] {
    return this.maps.filter(m => m.kind === 'uploaded')
  }
  scriptDebugId(url: string): string | undefined {
    return this.scriptIds.get(url)
  }

  /** The stored bytes of a map (undefined when it is gone). */
  async read(id: string): Promise<Buffer | undefined> {
    if (!/^[0-9a-f]{32}$/.test(id)) return undefined
    try {
      return await readFile(join(this.dir, 'maps', `${id}.map`))
    } catch {
      return undefined
    }
  }

  /**
   * Stores an upload, replacing the upload for the same script URL (or, without one, for the same
   * Debug ID). Fetched maps make room; 507 when uploads alone would pass the bound.
   */
  upload(bytes: Buffer, key: { url?: string; debugId?: string }, at = new Date()): Promise<StoredMap> {
    return this.serial(async () => {
      const keep = this.maps.filter(m =>
        m.kind !== 'uploaded'
          ? true
          : key.url !== undefined
            ? m.url !== key.url
            : m.url !== undefined || m.debug_id !== key.debugId,
      )
      const id = contentId(bytes)
      const uploads = sumFiles([...keep.filter(m => m.kind === 'uploaded'), { id, bytes: bytes.length }])
      if (uploads > this.maxBytes)
        throw new ServiceError(
          507,
          'insufficient_storage',
          `uploaded source maps would hold ${uploads} bytes, over the store's bound of ${this.maxBytes} (--sourcemap-store-bytes); delete some first`,
        )
      const entry: StoredMap = { id, kind: 'uploaded', bytes: bytes.length, at: at.toISOString() }
      if (key.url !== undefined) entry.url = key.url
      if (key.debugId !== undefined) entry.debug_id = key.debugId
      await this.commit([...keep, entry], bytes)
      return entry
    })
  }

  /** Stores a fetched map for a script (replacing the one it had); undefined when uploads leave no room. */
  putFetched(
    bytes: Buffer,
    entry: Omit<StoredMap, 'id' | 'kind' | 'bytes' | 'at'>,
    at = new Date(),
  ): Promise<StoredMap | undefined> {
    return this.serial(async () => {
      const id = contentId(bytes)
      const next: StoredMap = { id, kind: 'fetched', ...entry, bytes: bytes.length, at: at.toISOString() }
      const maps = this.maps.filter(m => !(m.kind === 'fetched' && m.url === entry.url))
      maps.push(next)
      // Oldest fetched maps go first until everything fits (the new one is the last to go), and past
      // MAX_FETCHED of them: the index is rewritten whole on each change, so its length is bounded too.
      while (sumFiles(maps) > this.maxBytes || maps.filter(m => m.kind === 'fetched').length > MAX_FETCHED) {
        const i = maps.findIndex(m => m.kind === 'fetched')
        if (maps[i] === next) return undefined
        maps.splice(i, 1)
      }
      await this.commit(maps, bytes)
      return next
    })
  }

  /** Removes uploads by script URL or Debug ID; how many went. */
  removeUploaded(key: { url?: string; debugId?: string }): Promise<StoredMap[]> {
    return this.serial(async () => {
      const gone = this.maps.filter(
        m =>
          m.kind === 'uploaded' &&
          (key.url !== undefined ? m.url === key.url : key.debugId !== undefined && m.debug_id === key.debugId),
      )
      if (gone.length > 0)
        await this.commit(
          this.maps.filter(m => !gone.includes(m)),
          undefined,
        )
      return gone
    })
  }

  /** Remembers the Debug ID a script carries (persisted with the next change, or now when new). */
  noteScriptDebugId(url: string, debugId: string): Promise<void> {
    if (this.scriptIds.get(url) === debugId) return Promise.resolve()
    this.scriptIds.delete(url)
    this.scriptIds.set(url, debugId)
    while (this.scriptIds.size > MAX_SCRIPT_IDS) this.scriptIds.delete(this.scriptIds.keys().next().value!)
    return this.serial(() => this.commit(this.maps, undefined))
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work)
    this.chain = run.catch(() => undefined)
    return run
  }

  /** Writes the new file (if any), then the index, then removes files nothing names any more. */
  private async commit(maps: StoredMap[], bytes: Buffer | undefined): Promise<void> {
    if (bytes) {
      const id = contentId(bytes)
      const path = join(this.dir, 'maps', `${id}.map`)
      if (!this.maps.some(m => m.id === id)) await writeFile(path, bytes, { mode: 0o600 })
    }
    const index: Index = { version: 1, maps, scripts: [...this.scriptIds] }
    await writeFileAtomic(join(this.dir, 'index.json'), JSON.stringify(index))
    const before = this.maps
    this.maps = maps
    const named = new Set(maps.map(m => m.id))
    for (const m of before) if (!named.has(m.id)) await rm(join(this.dir, 'maps', `${m.id}.map`), { force: true })
  }
}

export function contentId(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 32)
}

function sumFiles(maps: readonly { id: string; bytes: number }[]): number {
  const seen = new Set<string>()
  let n = 0
  for (const m of maps) {
    if (seen.has(m.id)) continue
    seen.add(m.id)
    n += m.bytes
  }
  return n
}
