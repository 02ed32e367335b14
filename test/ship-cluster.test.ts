// Fleet shipping to a 3-node JetStream cluster of Debian nats-server processes (127.0.0.1, random
// client and route ports, temp store dirs, stream replicas 3), one shipper given all three URLs.
// A node is killed with SIGKILL mid-flood and started again: every seq must reach the stream exactly once.
import t from 'tap'
import type { Test } from 'tap'
import { Shipper, type ShipperOptions } from '../src/ship/shipper.js'
import type { EventLog } from '../src/store/event-log.js'
import { openStore } from './helpers/store.js'
import { assertExactlyOnce, startNatsCluster, type NatsCluster } from './helpers/nats.js'
import { ackedUpTo, emitMany, until } from './helpers/ship.js'

const LIMITS = { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 3 }

async function cluster(t: Test): Promise<NatsCluster> {
  const c = await startNatsCluster(3)
  t.teardown(() => c.dispose())
  return c
}

function shipper(t: Test, log: EventLog, c: NatsCluster, over: Partial<ShipperOptions> = {}): Shipper {
  const s = new Shipper({
    log,
    browserId: 'vm-1',
    nats: { servers: c.urls },
    stream: 'BT',
    subjectPrefix: 'telemetry',
    limits: LIMITS,
    retryInitialMs: 50,
    retryMaxMs: 500,
    ...over,
  })
  t.teardown(() => s.stop())
  return s
}

t.test(
  'the stream leader is killed mid-flood: shipping resumes on the new leader without waiting out an ack timeout or a backoff',
  async t => {
    const c = await cluster(t)
    const { log, pipeline } = await openStore(t)
    // Neither an ack timeout nor a retry could fire within the test: only the new leader's advisory
    // (or a reconnect to a live node) can restart publishing.
    const s = shipper(t, log, c, { ackTimeoutMs: 600_000, retryInitialMs: 600_000, retryMaxMs: 600_000 })
    await s.start()
    await emitMany(pipeline, 0, 3000)
    await ackedUpTo(s, () => log.lastSeq)
    const leader = await c.leaderOf('BT')
    t.ok(leader, 'the stream has a leader')
    const midRun = emitMany(pipeline, 3000, 3000)
    await leader!.kill('SIGKILL')
    await midRun
    await emitMany(pipeline, 6000, 2000)
    t.equal(log.lastSeq, 8000, 'capture went on while the stream had no leader')
    await until(s, () => s.ackedSeq >= 8000, 60_000)
    const next = await c.leaderOf('BT')
    t.ok(next && next !== leader, 'another node leads the stream')
    t.equal(s.state(), 'connected')
    t.equal(s.health().last_error, undefined, '/healthz shows no stale error once acks flow again')
    t.not(`nats://${s.health().server}`, leader!.url, 'the connection is on a live node')
    await leader!.start()
    await c.ready()
    await c.caughtUp('BT')
    await assertExactlyOnce(t, c.urls, log)
  },
)

t.test('a follower is killed, then the node the shipper is connected to: nothing lost, nothing duplicated', async t => {
  const c = await cluster(t)
  const { log, pipeline } = await openStore(t)
  const s = shipper(t, log, c)
  await s.start()
  await emitMany(pipeline, 0, 2000)
  await ackedUpTo(s, () => log.lastSeq)
  const leader = await c.leaderOf('BT')
  const follower = c.nodes.find(n => n !== leader)!
  const midRun = emitMany(pipeline, 2000, 3000)
  await follower.kill('SIGKILL')
  await midRun
  await ackedUpTo(s, () => log.lastSeq)
  await follower.start()
  await c.ready()
  // Now the node this shipper talks to goes away: the client moves to another of the three URLs.
  const connected = c.nodes.find(n => n.url === `nats://${s.health().server}`)
  t.ok(connected, `connected to one of the cluster's nodes (${s.health().server})`)
  const midRun2 = emitMany(pipeline, 5000, 3000)
  await connected!.kill('SIGKILL')
  await midRun2
  await until(s, () => s.ackedSeq >= 8000 && `nats://${s.health().server}` !== connected!.url, 60_000)
  t.equal(s.state(), 'connected')
  await connected!.start()
  await c.ready()
  await c.caughtUp('BT')
  await assertExactlyOnce(t, c.urls, log)
})
