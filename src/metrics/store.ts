// The event log: bytes on disk, retained seq range, what waits to be committed, writability.
import { Gauge } from 'prom-client'
import type { Family } from './sources.js'

export function storeMetrics({ registers, source }: Family) {
  const storeBytes = new Gauge({
    name: 'browser_telemetry_store_bytes',
    help: 'Approximate on-disk bytes of stored events (LevelDB estimate)',
    registers,
    async collect() {
      if (source.deps) this.set(await source.deps.log.storedBytes().catch(() => 0))
    },
  })
  const storeOldestSeq = new Gauge({
    name: 'browser_telemetry_store_oldest_seq',
    help: 'Seq of the oldest retained event (newest + 1 when empty)',
    registers,
    collect() {
      if (source.deps) this.set(source.deps.log.firstSeq)
    },
  })
  const storeNewestSeq = new Gauge({
    name: 'browser_telemetry_store_newest_seq',
    help: 'Seq of the newest committed event (0 when none ever)',
    registers,
    collect() {
      if (source.deps) this.set(source.deps.log.lastSeq)
    },
  })
  const storePendingEvents = new Gauge({
    name: 'browser_telemetry_store_pending_events',
    help: 'Events accepted but not yet committed',
    registers,
    collect() {
      if (source.deps) this.set(source.deps.log.health().pendingEvents)
    },
  })
  const storePendingBytes = new Gauge({
    name: 'browser_telemetry_store_pending_bytes',
    help: 'Encoded bytes of events accepted but not yet committed (what load shedding watches)',
    registers,
    collect() {
      if (source.deps) this.set(source.deps.log.pendingBytes)
    },
  })
  const storeWritable = new Gauge({
    name: 'browser_telemetry_store_writable',
    help: '1 when the last event log write succeeded, else 0',
    registers,
    collect() {
      if (source.deps) this.set(source.deps.log.health().writable ? 1 : 0)
    },
  })

  return { storeBytes, storeOldestSeq, storeNewestSeq, storePendingEvents, storePendingBytes, storeWritable }
}
