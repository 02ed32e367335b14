// Write options shared by the LevelDB databases (the event log, extension metadata).
import type { ChainedBatchWriteOptions } from 'classic-level'

/** fsync before the write resolves: for records that must survive power loss, not only a kill. */
export const SYNC_WRITE: Readonly<ChainedBatchWriteOptions> = Object.freeze({ sync: true })
