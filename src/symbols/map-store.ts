// Source maps on disk (`<data-dir>/sourcemaps`): the maps users uploaded and the maps the daemon
// fetched, one file per distinct content (`maps/<id>.map`, id = the first 32 hex digits of its
// SHA-256) and one index. Together they stay under a byte bound: fetched maps are a cache and go
// oldest first to make room; uploads never push out uploads (the PUT is refused instead). The
// index also keeps the Debug IDs read from scripts, so a map uploaded by Debug ID still applies to
// old events after a restart. One change at a time.
//
// The index is a snapshot (`index.json`, written whole or not at all) and a journal of the changes
// since (`index-<generation>.log`, one JSON line each, appended): a new Debug ID or fetched map
// costs one short append, not a rewrite of the whole index. The journal is folded into a new
// snapshot once it outgrows the snapshot (and 256 KiB), so its replay at open stays small too.
// Uploads and deletions are fsynced before they are answered; what the daemon learned itself is
// not (a crash loses at most the last few, learned again from the next errors).
import { createHash } from 'node:crypto'
import { appendFile, mkdir, open as openFile, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises'
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
  /** The journal that continues this snapshot (`index-<gen>.log`); absent in older snapshots. */
  gen?: number
}

/** One journal line: a map entry set (replacing the one with its key), removed, or a script's Debug ID. */
type JournalOp = { set: StoredMap } | { del: string } | { script: [string, string] }

/** The journal is folded into the snapshot past this size and the snapshot's own. */
const JOURNAL_MIN_FOLD_BYTES = 256 * 1024

/** What makes an entry unique in the index: an upload by its URL (else its Debug ID), a fetched map by its URL. */
export function entryKey(m: Pick<StoredMap, 'kind' | 'url' | 'debug_id'>): string {
  return m.kind === 'uploaded' && m.url === undefined ? `uploaded id ${m.debug_id}` : `${m.kind} url ${m.url}`
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
  private gen = 0
  private journalBytes = 0
  private snapshotBytes = 0
  /** Index writes so far, by kind (the bench and tests read them). */
  readonly writes = { appends: 0, snapshots: 0, bytes: 0 }

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
      const text = await readFile(join(dir, 'index.json'), 'utf8')
      store.snapshotBytes = Buffer.byteLength(text)
      index = JSON.parse(text) as Index
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new Error(`${dir}/index.json: ${(err as Error).message}`)
    }
    if (index?.version === 1) {
      store.maps = index.maps.filter(validEntry)
      for (const [url, id] of index.scripts ?? []) store.scriptIds.set(url, id)
      store.gen = Number.isSafeInteger(index.gen) ? index.gen! : 0
    }
    const journal = await readFile(store.journalPath(), 'utf8').catch(() => '')
    // A line cut short by a crash (the last one) or damaged is skipped: the rest still applies.
    for (const line of journal.split('\n')) {
      if (line === '') continue
      let op: JournalOp
      try {
        op = JSON.parse(line) as JournalOp
      } catch {
        continue
      }
      store.apply(op)
    }
    // A cut line is also cut from the file: the next append starts a line of its own.
    const whole = journal.lastIndexOf('\n') + 1
    if (whole < journal.length) await truncate(store.journalPath(), Buffer.byteLength(journal.slice(0, whole)))
    store.journalBytes = Buffer.byteLength(journal.slice(0, whole))
    const named = new Set(store.maps.map(m => `${m.id}.map`))
    for (const f of await readdir(join(dir, 'maps'))) if (!named.has(f)) await rm(join(dir, 'maps', f), { force: true })
    for (const f of await readdir(dir))
      if (/^index-\d+\.log$/.test(f) && f !== `index-${store.gen}.log`) await rm(join(dir, f), { force: true })
    return store
  }

  private journalPath(gen = this.gen): string {
    return join(this.dir, `index-${gen}.log`)
  }

  /** An operation on the in-memory index (also a journal line replayed at open). */
  private apply(op: JournalOp): void {
    if ('set' in op) {
      if (!validEntry(op.set)) return
      const key = entryKey(op.set)
      this.maps = this.maps.filter(m => entryKey(m) !== key)
      this.maps.push(op.set)
    } else if ('del' in op) this.maps = this.maps.filter(m => entryKey(m) !== op.del)
    else if (Array.isArray(op.script)) this.rememberScript(op.script[0], op.script[1])
  }

  private rememberScript(url: string, debugId: string): void {
    this.scriptIds.delete(url)
    this.scriptIds.set(url, debugId)
    while (this.scriptIds.size > MAX_SCRIPT_IDS) this.scriptIds.delete(this.scriptIds.keys().next().value!)
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
      // The upload it replaces (the `keep` filter above) has its key: setting the entry replaces it.
      await this.commit([{ set: entry }], bytes, true)
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
      const kept = new Set(maps)
      const evicted = this.maps.filter(m => !kept.has(m) && entryKey(m) !== entryKey(next)).map(entryKey)
      await this.commit([...evicted.map(del => ({ del })), { set: next }], bytes, false)
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
          gone.map(m => ({ del: entryKey(m) })),
          undefined,
          true,
        )
      return gone
    })
  }

  /** Remembers the Debug ID a script carries (persisted with the next change, or now when new). */
  noteScriptDebugId(url: string, debugId: string): Promise<void> {
    if (this.scriptIds.get(url) === debugId) return Promise.resolve()
    return this.serial(() => this.commit([{ script: [url, debugId] }], undefined, false))
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work)
    this.chain = run.catch(() => undefined)
    return run
  }

  /**
   * Writes the new file (if any), then the index change (a journal append; a new snapshot when the
   * journal has grown past it), then removes files nothing names any more. `durable`: fsynced
   * before it resolves.
   */
  private async commit(ops: JournalOp[], bytes: Buffer | undefined, durable: boolean): Promise<void> {
    if (bytes) {
      const id = contentId(bytes)
      const path = join(this.dir, 'maps', `${id}.map`)
      if (!this.maps.some(m => m.id === id)) await writeFile(path, bytes, { mode: 0o600 })
    }
    const before = this.maps
    const text = ops.map(op => `${JSON.stringify(op)}\n`).join('')
    if (this.journalBytes + text.length > Math.max(JOURNAL_MIN_FOLD_BYTES, this.snapshotBytes)) {
      for (const op of ops) this.apply(op)
      await this.snapshot()
    } else {
      if (durable) {
        const fh = await openFile(this.journalPath(), 'a', 0o600)
        try {
          await fh.appendFile(text)
          await fh.sync()
        } finally {
          await fh.close()
        }
      } else await appendFile(this.journalPath(), text, { mode: 0o600 })
      this.journalBytes += Buffer.byteLength(text)
      this.writes.appends++
      this.writes.bytes += Buffer.byteLength(text)
      for (const op of ops) this.apply(op)
    }
    const named = new Set(this.maps.map(m => m.id))
    for (const m of before) if (!named.has(m.id)) await rm(join(this.dir, 'maps', `${m.id}.map`), { force: true })
  }

  /** The index whole, continued by a new (empty) journal; the old journal goes once the snapshot is down. */
  private async snapshot(): Promise<void> {
    const old = this.journalPath()
    const index: Index = { version: 1, maps: this.maps, scripts: [...this.scriptIds], gen: this.gen + 1 }
    const text = JSON.stringify(index)
    await writeFileAtomic(join(this.dir, 'index.json'), text)
    this.gen++
    this.snapshotBytes = Buffer.byteLength(text)
    this.journalBytes = 0
    this.writes.snapshots++
    this.writes.bytes += this.snapshotBytes
    await rm(old, { force: true })
  }
}

function validEntry(m: unknown): m is StoredMap {
  const e = m as StoredMap
  return (
    !!e &&
    typeof e.id === 'string' &&
    /^[0-9a-f]{32}$/.test(e.id) &&
    (e.kind === 'uploaded' || e.kind === 'fetched') &&
    typeof e.bytes === 'number'
  )
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
