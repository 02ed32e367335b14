// Shipping to a 3-node JetStream cluster (Debian nats-server, stream replicas 3) while one node is
// killed with SIGKILL: first the stream's leader, then (after it is back) a follower. Events are
// committed at RATE/s throughout. Printed per kill: how long until a new leader answers a stream
// info request (asked by a separate client every 50 ms), how long shipping stood still (the longest
// gap between watermark advances after the kill) and how long after the new leader answered it
// resumed (goal <= 1 s). At the end every seq must be in the stream exactly once.
// Env: RATE (default 2,000 events/s), RUNS (default 3).
import { join } from 'node:path'
import { connect } from '@nats-io/transport-node'
import { jetstreamManager } from '@nats-io/jetstream'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { Shipper } from '../src/ship/shipper.js'
import { readStream, startNatsCluster, type NatsCluster, type NatsServer } from '../test/helpers/nats.js'
import { fmt, median, realisticEvent, withTempDir } from './common.js'

const RATE = Number(process.env.RATE ?? 2000)
const RUNS = Number(process.env.RUNS ?? 3)
const STREAM = 'BT'

interface KillFigures {
  electionMs: number
  stallMs: number
  resumedAfterLeaderMs: number
}

/** Kills `node`; returns when shipping has moved on past what was committed at the kill. */
async function killAndMeasure(
  cluster: NatsCluster,
  node: NatsServer,
  shipper: Shipper,
  log: EventLog,
  ackTimes: number[],
): Promise<KillFigures> {
  const live = cluster.nodes.filter(n => n !== node)
  const probe = await connect({ servers: live.map(n => n.url) })
  const jsm = await jetstreamManager(probe, { timeout: 1000 })
  const killedAt = performance.now()
  await node.kill('SIGKILL')
  let leaderAt = 0
  while (leaderAt === 0) {
    try {
      const info = await jsm.streams.info(STREAM)
      if (info.cluster?.leader && !info.cluster.leader.endsWith(String(cluster.nodes.indexOf(node))))
        leaderAt = performance.now()
    } catch {
      /* electing */
    }
    if (leaderAt === 0) await new Promise(r => setTimeout(r, 50))
  }
  await probe.close()
  const target = log.lastSeq
  await new Promise<void>(resolve => {
    if (shipper.ackedSeq >= target) return resolve()
    const off = shipper.onAcked(a => {
      if (a >= target) {
        off()
        resolve()
      }
    })
  })
  const after = ackTimes.filter(t => t >= killedAt)
  let stall = 0
  let resumedAt = killedAt
  let prev = killedAt
  for (const t of after) {
    if (t - prev > stall) {
      stall = t - prev
      resumedAt = t
    }
    prev = t
  }
  return { electionMs: leaderAt - killedAt, stallMs: stall, resumedAfterLeaderMs: resumedAt - leaderAt }
}

async function run(): Promise<{ leader: KillFigures; follower: KillFigures; exact: boolean }> {
  return withTempDir(async dir => {
    const cluster = await startNatsCluster(3)
    const log = await EventLog.open({ path: join(dir, 'log'), retentionIntervalMs: 0 })
    const pipeline = new Pipeline({ log, shedding: false })
    const shipper = new Shipper({
      log,
      browserId: 'vm-1',
      nats: { servers: cluster.urls },
      stream: STREAM,
      subjectPrefix: 'telemetry',
      limits: { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 3 },
    })
    const ackTimes: number[] = []
    shipper.onAcked(() => ackTimes.push(performance.now()))
    let producing = true
    let lastCommit: Promise<boolean> = Promise.resolve(true)
    const producer = (async () => {
      const t0 = performance.now()
      for (let i = 0; producing; i++) {
        const wait = t0 + (i * 1000) / RATE - performance.now()
        if (wait > 1) await new Promise(r => setTimeout(r, wait))
        const r = pipeline.emit(realisticEvent(i))
        if (r.dropped === undefined) lastCommit = r.committed
      }
    })()
    try {
      await shipper.start()
      await new Promise(r => setTimeout(r, 2000))
      const leaderNode = (await cluster.leaderOf(STREAM))!
      const leader = await killAndMeasure(cluster, leaderNode, shipper, log, ackTimes)
      await leaderNode.start()
      await cluster.ready()
      await new Promise(r => setTimeout(r, 2000))
      const now = await cluster.leaderOf(STREAM)
      const followerNode = cluster.nodes.find(n => n !== now && n.proc)!
      const follower = await killAndMeasure(cluster, followerNode, shipper, log, ackTimes)
      await followerNode.start()
      producing = false
      await producer
      await lastCommit
      const last = log.lastSeq
      await new Promise<void>(resolve => {
        if (shipper.ackedSeq >= last) return resolve()
        const off = shipper.onAcked(a => a >= last && (off(), resolve()))
      })
      await cluster.ready()
      await cluster.caughtUp(STREAM)
      const msgs = await readStream(cluster.urls, STREAM)
      const seqs = new Set(msgs.map(m => m.telemetrySeq))
      const exact = msgs.length === last && seqs.size === last
      if (!exact) {
        const missing: number[] = []
        for (let q = 1; q <= last; q++) if (!seqs.has(q)) missing.push(q)
        const nc = await connect({ servers: cluster.urls })
        const info = await (await jetstreamManager(nc)).streams.info(STREAM)
        await nc.close()
        console.error(
          `stream holds ${msgs.length} messages read (${info.state.messages} by its info), ${seqs.size} distinct seqs, log ${last}; missing ${missing.length}: ${missing.slice(0, 5).join(',')} .. ${missing.slice(-5).join(',')}`,
        )
      }
      return { leader, follower, exact }
    } finally {
      producing = false
      await producer
      await shipper.stop()
      await log.close()
      await cluster.dispose()
    }
  })
}

const rows: Awaited<ReturnType<typeof run>>[] = []
for (let i = 0; i < RUNS; i++) {
  const r = await run()
  rows.push(r)
  console.log(
    `run ${i + 1}: leader killed: new leader after ${fmt(r.leader.electionMs, 0)} ms, shipping stood still ${fmt(r.leader.stallMs, 0)} ms, resumed ${fmt(r.leader.resumedAfterLeaderMs, 0)} ms after the new leader answered; follower killed: stood still ${fmt(r.follower.stallMs, 0)} ms; every seq exactly once: ${r.exact}`,
  )
}
console.log(
  `medians of ${RUNS} at ${RATE} events/s: leader kill: election ${fmt(median(rows.map(r => r.leader.electionMs)), 0)} ms, stall ${fmt(median(rows.map(r => r.leader.stallMs)), 0)} ms, resumed ${fmt(median(rows.map(r => r.leader.resumedAfterLeaderMs)), 0)} ms after the new leader answered (goal <= 1000 ms); follower kill: stall ${fmt(median(rows.map(r => r.follower.stallMs)), 0)} ms`,
)
