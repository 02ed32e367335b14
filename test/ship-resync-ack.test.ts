// A watermark that moves in a resync is an advance like any other: onAcked hears it. The case: the
// stream stops answering (nats-server stopped with SIGSTOP), the sink's ack timeout rewinds it, and
// when the server runs again the resync finds everything stored already: the watermark jumps to
// the last seq without a single ack of its own. A waiter on onAcked (the fleet test fixture's) used
// to wait forever there.
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { Shipper } from '../src/ship/shipper.js'
import { LIMITS, mixedEvent } from './helpers/fleet-serve.js'
import { startNatsServer } from './helpers/nats.js'
import { ackedUpTo, until } from './helpers/ship.js'
import { openStore } from './helpers/store.js'

/**
 * Each wait's deadline: the ack timeout (1 s) plus the sweep (250 ms) and a resync take ~1.5 s here
 * with nothing else running, so 20 s is a wide margin.
 */
const DEADLINE_MS = 20_000

/** `p`, or a failure naming what was awaited and what was seen after DEADLINE_MS. */
async function within<T>(what: string, p: Promise<T>, seen: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not after ${DEADLINE_MS} ms; ${seen()}`)), DEADLINE_MS)
  })
  try {
    return await Promise.race([p, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Resolves once every thread of `pid` is in the stopped state (`T` in /proc): SIGSTOP takes effect
 * when each thread is next scheduled, which on a loaded machine can be after the sink published.
 */
async function stoppedNow(pid: number): Promise<void> {
  const states = () =>
    readdirSync(`/proc/${pid}/task`).map(tid => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    })
  const deadline = Date.now() + DEADLINE_MS
  while (!states().every(s => s === 'T')) {
    if (Date.now() > deadline) throw new Error(`nats-server not stopped: thread states ${states().join('')}`)
    await new Promise(r => setTimeout(r, 5))
  }
}

t.test('the watermark a resync moves is heard by onAcked', async t => {
  const nats = await startNatsServer()
  t.teardown(() => nats.dispose()) // SIGKILL: also ends a server still stopped
  const { log, pipeline } = await openStore(t)
  const s = new Shipper({
    log,
    browserId: 'vm-resync',
    nats: { servers: [nats.url] },
    stream: 'BT',
    subjectPrefix: 'telemetry',
    limits: LIMITS,
    retryInitialMs: 50,
    retryMaxMs: 500,
    ackTimeoutMs: 1000,
  })
  t.teardown(() => s.stop(0))
  await s.start()
  const state = () => `acked ${s.ackedSeq} of ${log.lastSeq}; ${JSON.stringify(s.health())}`
  for (let i = 0; i < 100; i++) pipeline.emit(mixedEvent(i))
  await log.flush()
  await within(
    'the first 100 events acked',
    ackedUpTo(s, () => log.lastSeq),
    state,
  )
  t.equal(s.ackedSeq, 100)

  const acks: [number, number][] = []
  s.onAcked((seq, ts) => acks.push([seq, ts]))
  const timeoutsBefore = s.stats.errors.timeout ?? 0
  process.kill(nats.proc!.pid!, 'SIGSTOP')
  await stoppedNow(nats.proc!.pid!)
  for (let i = 100; i < 200; i++) pipeline.emit(mixedEvent(i))
  await log.flush()
  // The sweep notices the missing acks and rewinds to the watermark (100).
  await until(s, () => (s.stats.errors.timeout ?? 0) > timeoutsBefore, DEADLINE_MS)
  t.same(acks, [], 'no ack while the server is stopped')
  const heard = ackedUpTo(s, () => log.lastSeq)
  process.kill(nats.proc!.pid!, 'SIGCONT')
  await within('onAcked reaching the last seq after the server ran again', heard, state)
  t.equal(s.ackedSeq, 200, 'the watermark is the last seq')
  t.same(acks.at(-1)?.[0], 200, 'and the last advance onAcked heard is it')
  t.ok(
    acks.every(([seq], i) => i === 0 || seq > acks[i - 1]![0]),
    `advances only: ${JSON.stringify(acks.map(a => a[0]))}`,
  )
})
