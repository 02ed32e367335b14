// Older versions kept extension metadata in a '!extensions!' sublevel of the event log's LevelDB.
// At startup, before the log opens (LevelDB allows one opener), those records move into the
// extension metadata database and are then deleted from the log's. Safe to repeat after a crash in
// between: the move is a put of the same records again.
import { existsSync } from 'node:fs'
import { ClassicLevel } from 'classic-level'
import type { ExtensionRecord } from './extension-store.js'
import { ExtensionMetaStore } from './extension-meta.js'

/** Moves the legacy records from the log database at `logPath` to the store at `metaPath`; returns how many. */
export async function moveLegacyExtensionMeta(logPath: string, metaPath: string): Promise<number> {
  if (!existsSync(logPath)) return 0
  const db = new ClassicLevel<Buffer, Buffer>(logPath, {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
    createIfMissing: false,
  })
  try {
    await db.open()
  } catch {
    // Locked by another process or unreadable: opening the event log right after says which.
    return 0
  }
  try {
    const legacy = db.sublevel<string, ExtensionRecord>('extensions', { keyEncoding: 'utf8', valueEncoding: 'json' })
    const entries = await legacy.iterator().all()
    if (entries.length === 0) return 0
    const meta = await ExtensionMetaStore.open(metaPath)
    try {
      await meta.putAll(entries)
    } finally {
      await meta.close()
    }
    await legacy.clear()
    return entries.length
  } finally {
    await db.close()
  }
}
