// The log's own metadata under 'm': the seq meta, the durable seq reservation, the idle-sync key and
// the clean-shutdown marker; and the recovery at open that turns them into the next seq.
import type { ClassicLevel } from 'classic-level'
import { SYNC_WRITE } from '../util/level.js'
import { metaKey, seqOfEventKey, tsOfRecord, writeSeq, EVENT_RANGE_START, EVENT_RANGE_END } from './keys.js'

export const SEQ_META = metaKey('seq')
/** Highest seq that may have been handed out, written with sync: true before any seq above it is committed. */
export const RESERVE_META = metaKey('rsv')
/** Written (empty, synced) when the log goes idle after unsynced writes: the fsync is the point. */
export const SYNC_META = metaKey('sync')
const CLEAN_META = metaKey('clean')

export function u64(n: number): Buffer {
  const b = Buffer.allocUnsafe(8)
  writeSeq(b, n, 0)
  return b
}
/** The seq meta: the highest seq consumed (8 bytes BE) and the highest ts stored (float64 BE); recover() reads it back. */
export function seqMeta(seq: number, ts: number): Buffer {
  const b = Buffer.allocUnsafe(16)
  writeSeq(b, seq, 0)
  b.writeDoubleBE(ts, 8)
  return b
}

/** Where a freshly opened log stands. */
export interface RecoveredState {
  nextSeq: number
  lastTs: number
  committedSeq: number
  reservedSeq: number
  firstSeq: number
  /** The previous process using this data dir stopped without closing the log. */
  unclean: boolean
}

/**
 * Reads the last committed position and the reservation, decides the next seq, and removes the
 * clean marker before any write is accepted (from here on a crash must read as unclean).
 */
export async function recover(db: ClassicLevel<Buffer, Buffer>): Promise<RecoveredState> {
  // Last committed position: the seq meta (written in every batch) survives retention emptying the log.
  let committedSeq = 0
  let lastTs = 0
  const meta = await db.get(SEQ_META)
  if (meta) {
    committedSeq = Number(meta.readBigUInt64BE(0))
    lastTs = meta.readDoubleBE(8)
  }
  const [lastEntry] = await db.iterator({ gte: EVENT_RANGE_START, lt: EVENT_RANGE_END, reverse: true, limit: 1 }).all()
  if (lastEntry) {
    committedSeq = Math.max(committedSeq, seqOfEventKey(lastEntry[0]))
    lastTs = Math.max(lastTs, tsOfRecord(lastEntry[1]))
  }
  const [firstKey] = await db.keys({ gte: EVENT_RANGE_START, lt: EVENT_RANGE_END, limit: 1 }).all()
  const firstSeq = firstKey ? seqOfEventKey(firstKey) : committedSeq + 1
  const reserved = await db.get(RESERVE_META)
  const reservedSeq = reserved ? Number(reserved.readBigUInt64BE(0)) : 0
  const hadData = committedSeq > 0 || reservedSeq > 0
  const clean = (await db.get(CLEAN_META)) !== undefined
  // An unclean stop may have lost buffered events: skip at least one seq so clients see a gap.
  // After power loss the last unsynced writes may be gone while readers already saw their seqs;
  // the synced reservation is above all of them, so starting past it never reuses one.
  const unclean = hadData && !clean
  const nextSeq = unclean ? Math.max(committedSeq + 2, reservedSeq + 1) : committedSeq + 1
  await db.del(CLEAN_META, SYNC_WRITE)
  return { nextSeq, lastTs, committedSeq, reservedSeq, firstSeq, unclean }
}

/** The last write of a clean close: the next open continues without a gap. */
export async function markClean(db: ClassicLevel<Buffer, Buffer>): Promise<void> {
  await db.put(CLEAN_META, Buffer.from('1'), SYNC_WRITE)
}
