// Extension metadata in its own small LevelDB (<dataDir>/extensions-meta), apart from the telemetry
// log: retention, compaction or wiping the event log can never touch an extension record.
import { ClassicLevel } from 'classic-level'
import type { ExtensionMetaDb, ExtensionRecord } from './extension-store.js'

export class ExtensionMetaStore implements ExtensionMetaDb {
  private constructor(private readonly db: ClassicLevel<string, ExtensionRecord>) {}

  /**
   * Opens (creating) the database. `legacy` moves records an older version kept inside the event
   * log's database (EventLog.moveOutLegacySublevel) into this one, once.
   */
  static async open(
    path: string,
    legacy?: (into: (entries: [string, ExtensionRecord][]) => Promise<void>) => Promise<unknown>,
  ): Promise<ExtensionMetaStore> {
    const db = new ClassicLevel<string, ExtensionRecord>(path, { keyEncoding: 'utf8', valueEncoding: 'json' })
    await db.open()
    const store = new ExtensionMetaStore(db)
    try {
      await legacy?.(async entries => {
        await db.batch(
          entries.map(([key, value]) => ({ type: 'put' as const, key, value })),
          { sync: true } as never,
        )
      })
    } catch (err) {
      await db.close()
      throw err
    }
    return store
  }

  put(key: string, value: ExtensionRecord): Promise<void> {
    return this.db.put(key, value, { sync: true } as never)
  }
  del(key: string): Promise<void> {
    return this.db.del(key, { sync: true } as never)
  }
  values(): AsyncIterable<ExtensionRecord> {
    return this.db.values()
  }
  close(): Promise<void> {
    return this.db.close()
  }
}
