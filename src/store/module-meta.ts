// Small named values other modules keep next to the log's own metadata (e.g. the fleet shipper's
// acknowledged seq). Kept under 'm' 'x:' + name, so they can never overwrite 'seq' or 'clean'.
import type { ClassicLevel } from 'classic-level'
import { SYNC_WRITE } from '../util/level.js'
import { metaKey } from './keys.js'

/** Namespace of module values inside the 'm' prefix. */
const MODULE_META_PREFIX = 'x:'

export class ModuleMeta {
  constructor(
    private readonly db: ClassicLevel<Buffer, Buffer>,
    private readonly isOpen: () => boolean,
  ) {}

  async read(name: string): Promise<Buffer | undefined> {
    return this.db.get(metaKey(MODULE_META_PREFIX + name))
  }

  /** Writes one named value durably (sync), outside the event batches. Throws once the log is closed. */
  async write(name: string, value: Buffer): Promise<void> {
    if (!this.isOpen()) throw new Error('event log is closed')
    await this.db.put(metaKey(MODULE_META_PREFIX + name), value, SYNC_WRITE)
  }
}
