// Extension metadata in its own small LevelDB (<dataDir>/extensions-meta), apart from the telemetry
// log: retention, compaction or wiping the event log can never touch an extension record.
import { ClassicLevel } from 'classic-level'
import { SYNC_WRITE } from '../util/level.js'
import type { ExtensionMetaDb, ExtensionRecord } from './extension-store.js'

export class ExtensionMetaStore implements ExtensionMetaDb {
  private constructor(private readonly db: ClassicLevel<string, ExtensionRecord>) {}

  /** Opens (creating) the database. */
  static async open(path: string): Promise<ExtensionMetaStore> {
    const db = new ClassicLevel<string, ExtensionRecord>(path, { keyEncoding: 'utf8', valueEncoding: 'json' })
    await db.open()
    return new ExtensionMetaStore(db)
  }

  put(key: string, value: ExtensionRecord): Promise<void> {
    return this.db.put(key, value, SYNC_WRITE)
  }
  /** Puts many records in one synced write (the legacy move). */
  putAll(entries: readonly [string, ExtensionRecord][]): Promise<void> {
    return this.db.batch(
      entries.map(([key, value]) => ({ type: 'put' as const, key, value })),
      SYNC_WRITE,
    )
  }
  del(key: string): Promise<void> {
    return this.db.del(key, SYNC_WRITE)
  }
  values(): AsyncIterable<ExtensionRecord> {
    return this.db.values()
  }
  close(): Promise<void> {
    return this.db.close()
  }
}
