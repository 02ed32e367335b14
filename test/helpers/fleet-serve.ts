// A VM's API and `fleet serve` over the same events: the VM's log (with a pinned clock and "now")
// shipped by the real shipper to a real nats-server, a second browser shipped into the same stream
// in between, and fleet serve started on that stream. Shared by the fleet serve tests and bench.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { EventInput } from '../../src/pipeline/pipeline.js'
import { Shipper } from '../../src/ship/shipper.js'
import { startFleetServe, type FleetServe } from '../../src/fleet/serve.js'
import { silentLogger } from '../../src/log.js'
import { BROWSER_ID, TOKEN, startApi, type TestApi } from './api.js'
import { startNatsServer, type NatsServer } from './nats.js'
import { until } from './ship.js'
import { openStore, tempDir } from './store.js'

export const OTHER_BROWSER_ID = 'vm.other'
export const BASE_US = Date.parse('2026-03-04T05:00:00Z') * 1000
export const STEP_US = 10_000 // 10 ms between events
/** Tokens both servers accept besides TOKEN: read only, and write only (403 on reads). */
export const READ_TOKEN = 'reader-token'
export const WRITE_TOKEN = 'writer-token'
export const LIMITS = { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 }
/**
 * How long one shipper may take to have the stream acknowledge what was emitted: a few hundred ms
 * here with nothing else running (3600 events and the other browser's 1200), so a wide margin.
 */
export const ACK_DEADLINE_MS = 30_000

/** Waits until the shipper's acked seq reaches the log's last seq; fails naming what and the shipper's state. */
async function acked(shipper: Shipper, lastSeq: () => number, what: string): Promise<void> {
  try {
    await until(shipper, () => shipper.ackedSeq >= lastSeq(), ACK_DEADLINE_MS)
  } catch (err) {
    throw new Error(
      `${what}: the stream did not acknowledge up to seq ${lastSeq()} (acked ${shipper.ackedSeq}); ${(err as Error).message}`,
    )
  }
}

/** Mostly connection events; network every 3rd, console every 7th, captcha every 500th, page every 1000th. */
export function mixedEvent(i: number): EventInput {
  if (i % 500 === 250)
    return { type: 'captcha_solve_result', data: { captcha_type: 'turnstile', status: 'success', duration_ms: i } }
  if (i % 1000 === 999) return { type: 'page_load', data: { cdp_timestamp: i, nav_seq: 1 } }
  if (i % 7 === 0) return { type: 'console_log', data: { level: 'log', text: `line ${i}`, args: [String(i)] } }
  if (i % 3 === 0)
    return {
      type: 'network_request',
      data: { request_id: `r${i}`, method: 'GET', url: `https://example.com/${i}`, headers: {} },
    } as unknown as EventInput
  return { type: 'cdp_connect', data: {} }
}

const CATEGORIES = ['console', 'network', 'page', 'connection', 'captcha', 'control'] as const

export interface FleetFixture {
  nats: NatsServer
  api: TestApi
  shipper: Shipper
  fleet: FleetServe
  /** Starts another fleet serve on the same stream. */
  startFleet(): Promise<FleetServe>
  /** Emits n more events on the VM (ts continues) and waits until they are in the stream. */
  emit(n: number): Promise<void>
  /** Emits these events on the VM (one step of ts each) and waits until they are in the stream. */
  emitEvents(inputs: EventInput[]): Promise<void>
  /** "now" of both servers: `nowAfter` events after the first one. */
  nowUs: number
}

/**
 * `n` events on the VM (browser BROWSER_ID) and n/3 on OTHER_BROWSER_ID, interleaved in the stream,
 * all acknowledged before it resolves. `now` is pinned to the time of event `nowAfter`.
 */
export async function fleetFixture(t: Test, n: number, nowAfter = n + 1000): Promise<FleetFixture> {
  const nats = await startNatsServer()
  t.teardown(() => nats.dispose())
  let i = 0
  const nowUs = BASE_US + nowAfter * STEP_US
  const api = await startApi(t, {
    tokens: { [READ_TOKEN]: ['read'], [WRITE_TOKEN]: ['write'] },
    pipeOpts: { clock: () => BASE_US + i * STEP_US, categories: [...CATEGORIES] },
    deps: { now: () => nowUs },
  })
  const other = await openStore(t, {}, { clock: () => BASE_US + i * STEP_US, categories: [...CATEGORIES] })
  const ship = (log: typeof other.log, browserId: string) => {
    const s = new Shipper({
      log,
      browserId,
      nats: { servers: [nats.url] },
      stream: 'BT',
      subjectPrefix: 'telemetry',
      limits: LIMITS,
      retryInitialMs: 50,
      retryMaxMs: 500,
    })
    t.teardown(() => s.stop())
    return s
  }
  const shipper = ship(api.log, BROWSER_ID)
  const otherShipper = ship(other.log, OTHER_BROWSER_ID)
  await shipper.start()
  await otherShipper.start()
  const emit = async (count: number) => {
    const end = i + count
    for (; i < end; i++) {
      if (api.pipeline.emit(mixedEvent(i)).dropped !== undefined) throw new Error(`event ${i} dropped`)
      if (i % 3 === 1) other.pipeline.emit(mixedEvent(i + 1))
      // Small commits, so the two browsers' messages interleave in the stream.
      if (i % 50 === 49) {
        await api.log.flush()
        await other.log.flush()
      }
    }
    await api.log.flush()
    await other.log.flush()
    await acked(shipper, () => api.log.lastSeq, `emit(${count}): the VM's events`)
    await acked(otherShipper, () => other.log.lastSeq, `emit(${count}): the other browser's events`)
  }
  await emit(n)
  const emitEvents = async (inputs: EventInput[]) => {
    for (const input of inputs) {
      if (api.pipeline.emit(input).dropped !== undefined) throw new Error(`event ${i} dropped`)
      i++
    }
    await api.log.flush()
    await acked(shipper, () => api.log.lastSeq, `emitEvents(${inputs.length})`)
  }

  const dir = await tempDir(t, 'bt-fleet-serve-')
  const tokenFile = join(dir, 'tokens')
  await writeFile(tokenFile, `${TOKEN} read,write,publish,cdp\n${READ_TOKEN} read\n${WRITE_TOKEN} write\n`)
  const startFleet = async () => {
    const f = await startFleetServe(
      {
        listen: { host: '127.0.0.1', port: 0 },
        tokenFile,
        nats: { servers: [nats.url] },
        stream: 'BT',
        subjectPrefix: 'telemetry',
        requestTimeoutMs: 2000,
        maxStreamClients: 4,
        logLevel: 'silent',
      },
      { logger: silentLogger, now: () => nowUs },
    )
    t.teardown(() => f.close())
    if (!(await f.source.connected(10_000))) throw new Error('fleet serve did not connect to NATS')
    return f
  }
  const fleet = await startFleet()
  return { nats, api, shipper, fleet, startFleet, emit, emitEvents, nowUs }
}

export { BROWSER_ID, TOKEN }
