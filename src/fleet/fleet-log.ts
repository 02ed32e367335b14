// The fleet stream as a set of browser logs: one JetStream view of one NATS connection and the
// continuations that make next pages cheap, shared by every browser's reads.
import type { NatsConnection } from '@nats-io/transport-node'
import { FleetBrowserLog } from './browser-log.js'
import { Continuations } from './continuations.js'
import { FleetStream, type FleetLogOptions, type FleetLogStats } from './jetstream.js'

export type { FleetLogOptions, FleetLogStats } from './jetstream.js'
export type { FleetBrowserLog } from './browser-log.js'

export class FleetLog {
  readonly stream: FleetStream
  private readonly kept: Continuations

  constructor(nc: () => NatsConnection | undefined, opts: FleetLogOptions) {
    this.stream = new FleetStream(nc, opts)
    this.kept = new Continuations(this.stream.stats)
  }

  get stats(): FleetLogStats {
    return this.stream.stats
  }

  browser(browserId: string): FleetBrowserLog {
    return new FleetBrowserLog(this.stream, this.kept, browserId)
  }

  /** A new connection replaces the old one: forget what was bound to it. */
  reset(): void {
    this.stream.reset()
    this.kept.closeReaders()
  }
}
