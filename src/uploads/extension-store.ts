// The extension store: archives as files under <dataDir>/extensions/<id>.zip, metadata records in a
// LevelDB sublevel. An upload is all-or-nothing: spool file -> fsync -> rename to <id>.zip -> fsync dir
// -> metadata put. A crash at any point leaves at most an archive or spool file without metadata,
// which open() sweeps. Records are few, so all of them are also kept in memory for lookups and lists.
import { randomBytes } from 'node:crypto'
import type { ReadStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { UploadError } from './errors.js'
import { DEFAULT_SPOOL_PREFIX, type SpooledFile } from './multipart-spool.js'
import { openZip, readSmallEntry, readZipEntries, type ZipEntryInfo, type ZipLimits } from './zip-entries.js'

export const DEFAULT_PROJECT = 'default'
export const EXTENSION_NAME_RE = /^[A-Za-z0-9._-]{1,255}$/
const MAX_MANIFEST_BYTES = 1024 * 1024

export interface ExtensionRecord {
  id: string
  project: string
  name?: string
  created_at: string
  size_bytes: number
  checksum: string
  last_used_at?: string
}

/** The Extension resource as the API answers it (no project: that is implied by the request). */
export interface ExtensionView {
  id: string
  created_at: string
  size_bytes: number
  name?: string
  checksum: string
  last_used_at?: string
}

/** The metadata store: ExtensionMetaStore (extension-meta.ts, its own LevelDB) in the daemon. */
export interface ExtensionMetaDb {
  put(key: string, value: ExtensionRecord): Promise<void>
  del(key: string): Promise<void>
  values(): AsyncIterable<ExtensionRecord>
}

export interface ListQuery {
  name?: string
  query?: string
  limit: number
  offset: number
}
export interface ListPage {
  items: ExtensionView[]
  hasMore: boolean
  nextOffset: number
}

export const view = (r: ExtensionRecord): ExtensionView => {
  const v: ExtensionView = { id: r.id, created_at: r.created_at, size_bytes: r.size_bytes, checksum: r.checksum }
  if (r.name !== undefined) v.name = r.name
  if (r.last_used_at !== undefined) v.last_used_at = r.last_used_at
  return v
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'
const newId = () => [...randomBytes(24)].map(b => ID_ALPHABET[b & 31]).join('')
const nameKey = (project: string, name: string) => `${project}\0${name.toLowerCase()}`
const ARCHIVE_RE = /^([a-z2-7]{24})\.zip$/

export const duplicateName = (name: string) =>
  new UploadError(
    'conflict',
    `an extension named "${name}" already exists in this project`,
    [{ code: 'conflict', message: `name: "${name}" is taken (names are unique within a project, case-insensitively)` }],
    { 'X-Should-Retry': 'false' },
  )

export class ExtensionStore {
  private byId = new Map<string, ExtensionRecord>()
  private byName = new Map<string, string>()
  /** Names claimed by uploads in flight, so two concurrent uploads cannot both take one name. */
  private reserved = new Set<string>()

  private constructor(
    readonly dir: string,
    private db: ExtensionMetaDb,
  ) {}

  /** Loads the records and removes what a crash may have left: spool files, archives without metadata, metadata without archive. */
  static async open(opts: { dir: string; db: ExtensionMetaDb }): Promise<ExtensionStore> {
    const store = new ExtensionStore(opts.dir, opts.db)
    await mkdir(opts.dir, { recursive: true })
    for await (const rec of opts.db.values()) store.index(rec)
    const present = new Set<string>()
    for (const file of await readdir(opts.dir)) {
      const m = ARCHIVE_RE.exec(file)
      if (m && store.byId.has(m[1]!)) present.add(m[1]!)
      else await rm(join(opts.dir, file), { force: true, recursive: true })
    }
    for (const id of [...store.byId.keys()]) {
      if (!present.has(id)) {
        await opts.db.del(id)
        store.unindex(store.byId.get(id)!)
      }
    }
    return store
  }

  /** Prefix of spool files written into dir by the upload route (swept by open()). */
  readonly spoolPrefix = DEFAULT_SPOOL_PREFIX

  private index(rec: ExtensionRecord) {
    this.byId.set(rec.id, rec)
    if (rec.name !== undefined) this.byName.set(nameKey(rec.project, rec.name), rec.id)
  }
  private unindex(rec: ExtensionRecord) {
    this.byId.delete(rec.id)
    if (rec.name !== undefined) this.byName.delete(nameKey(rec.project, rec.name))
  }

  nameTaken(project: string, name: string): boolean {
    const key = nameKey(project, name)
    return this.byName.has(key) || this.reserved.has(key)
  }

  /** By id first, then by name (case-insensitive), within the project. */
  find(project: string, idOrName: string): ExtensionRecord | undefined {
    const byId = this.byId.get(idOrName)
    if (byId && byId.project === project) return byId
    const id = this.byName.get(nameKey(project, idOrName))
    return id === undefined ? undefined : this.byId.get(id)
  }

  /** Oldest first (stable under new uploads, so offsets stay meaningful while paging). */
  list(project: string, q: ListQuery): ListPage {
    const name = q.name?.toLowerCase()
    const query = q.query?.toLowerCase()
    const all = [...this.byId.values()]
      .filter(r => r.project === project)
      .filter(r => name === undefined || r.name?.toLowerCase() === name)
      .filter(
        r => query === undefined || r.id === q.query || (r.name !== undefined && r.name.toLowerCase().includes(query)),
      )
      .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1))
    const items = all.slice(q.offset, q.offset + q.limit).map(view)
    const hasMore = q.offset + items.length < all.length
    return { items, hasMore, nextOffset: hasMore ? q.offset + items.length : 0 }
  }

  /**
   * Commits a spooled upload (a file inside this.dir) as a new extension. The caller validated the
   * archive; the name is checked again here, atomically with the reservation.
   */
  async create(project: string, name: string | undefined, file: SpooledFile): Promise<ExtensionRecord> {
    const key = name === undefined ? undefined : nameKey(project, name)
    if (name !== undefined && this.nameTaken(project, name)) throw duplicateName(name)
    if (key) this.reserved.add(key)
    const id = newId()
    const archive = join(this.dir, `${id}.zip`)
    try {
      const fh = await open(file.path, 'r+')
      try {
        await fh.sync()
      } finally {
        await fh.close()
      }
      await rename(file.path, archive)
      await syncDir(this.dir)
      const rec: ExtensionRecord = {
        id,
        project,
        created_at: new Date().toISOString(),
        size_bytes: file.size,
        checksum: file.sha256,
      }
      if (name !== undefined) rec.name = name
      try {
        await this.db.put(id, rec)
      } catch (err) {
        await rm(archive, { force: true })
        throw err
      }
      this.index(rec)
      return rec
    } finally {
      if (key) this.reserved.delete(key)
    }
  }

  /** Opens the archive for download and records the use. */
  async download(
    project: string,
    idOrName: string,
  ): Promise<{ record: ExtensionRecord; stream: ReadStream } | undefined> {
    const rec = this.find(project, idOrName)
    if (!rec) return undefined
    let fh
    try {
      fh = await open(join(this.dir, `${rec.id}.zip`), 'r')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined // deleted concurrently
      throw err
    }
    const updated: ExtensionRecord = { ...rec, last_used_at: new Date().toISOString() }
    try {
      await this.db.put(rec.id, updated)
    } catch (err) {
      await fh.close()
      throw err
    }
    if (this.byId.get(rec.id) === rec) this.byId.set(rec.id, updated)
    return { record: updated, stream: fh.createReadStream() }
  }

  /** Metadata first, then the archive: a crash in between leaves an orphan archive that open() sweeps. */
  async delete(project: string, idOrName: string): Promise<boolean> {
    const rec = this.find(project, idOrName)
    if (!rec) return false
    await this.db.del(rec.id)
    this.unindex(rec)
    await rm(join(this.dir, `${rec.id}.zip`), { force: true })
    return true
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

const manifestError = (message: string) =>
  new UploadError('bad_request', `invalid extension: ${message}`, [{ code: 'invalid_manifest', message }])

/**
 * Checks an uploaded extension archive: a safe, readable zip whose root, or single top-level folder,
 * holds a manifest.json that parses and has manifest_version, name and version.
 */
export async function validateExtensionArchive(
  path: string,
  limits: ZipLimits,
): Promise<{ name: string; version: string; manifest_version: number }> {
  const zip = await openZip(path)
  try {
    const { list } = await readZipEntries(zip, limits)
    const manifest = findManifest(list)
    if (!manifest) throw manifestError('no manifest.json at the archive root or in its single top-level folder')
    if (manifest.kind !== 'file') throw manifestError(`${manifest.rawName} is not a regular file`)
    if (manifest.entry.uncompressedSize > MAX_MANIFEST_BYTES)
      throw manifestError(`${manifest.rawName} is larger than ${MAX_MANIFEST_BYTES} bytes`)
    const text = (await readSmallEntry(zip, manifest, MAX_MANIFEST_BYTES)).toString('utf8').replace(/^\uFEFF/, '')
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (err) {
      throw manifestError(`${manifest.rawName} is not valid JSON: ${(err as Error).message}`)
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw manifestError(`${manifest.rawName} is not a JSON object`)
    const m = json as Record<string, unknown>
    const missing = ['manifest_version', 'name', 'version'].filter(k => m[k] === undefined)
    if (missing.length > 0) throw manifestError(`${manifest.rawName} lacks ${missing.map(k => `"${k}"`).join(', ')}`)
    if (typeof m.manifest_version !== 'number' || !Number.isInteger(m.manifest_version) || m.manifest_version < 1)
      throw manifestError(`${manifest.rawName}: "manifest_version" must be a positive integer`)
    if (typeof m.name !== 'string' || m.name.trim() === '')
      throw manifestError(`${manifest.rawName}: "name" must be a non-empty string`)
    if (typeof m.version !== 'string' || m.version.trim() === '')
      throw manifestError(`${manifest.rawName}: "version" must be a non-empty string`)
    return { name: m.name, version: m.version, manifest_version: m.manifest_version }
  } finally {
    zip.close()
  }
}

function findManifest(entries: ZipEntryInfo[]): ZipEntryInfo | undefined {
  const root = entries.find(e => e.path === 'manifest.json')
  if (root) return root
  const tops = new Set(entries.map(e => e.path.split('/')[0]!))
  if (tops.size !== 1) return undefined
  const top = [...tops][0]!
  return entries.find(e => e.path === `${top}/manifest.json`)
}
