// Fleet simulation: VMS daemons' shippers (own event log, own browser id each) spread over
// WORKERS processes, all shipping into ONE nats-server (JetStream, file storage) and one stream.
// Phase "paced": every VM emits RATE events/s for SECONDS; per-VM commit -> ack lag p99.
// Phase "replay": every VM's shipper starts on a log of BURST events written beforehand (like daemons
// replaying their logs after an outage); aggregate events/s until all are acknowledged.
// nats-server RSS is sampled throughout; CPU per event of nats-server and of the VMs' processes per phase.
// Env: VMS (50), WORKERS (5), RATE (400), PACED_SECONDS (10), BURST (2000), WORKER_NODE_ARGS (e.g. --cpu-prof).
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { Shipper } from '../src/ship/shipper.js'
import { startNatsServer } from '../test/helpers/nats.js'
import { fmt, median, realisticEvent, withTempDir } from './common.js'
import { threadsCpuMs } from './watchers.js'

const VMS = Number(process.env.VMS ?? 50)
const WORKERS = Number(process.env.WORKERS ?? 5)
const RATE = Number(process.env.RATE ?? 400)
const SECONDS = Number(process.env.PACED_SECONDS ?? 10)
const BURST = Number(process.env.BURST ?? 2000)
const INPUTS = Array.from({ length: 1000 }, (_, i) => realisticEvent(i))

interface Vm {
  log: EventLog
  pipeline: Pipeline
  shipper: Shipper
  committedAt: Map<number, number>
  lags: number[]
}

function until(s: Shipper, seq: number): Promise<void> {
  return new Promise(resolve => {
    if (s.ackedSeq >= seq) {
      resolve()
      return
    }
    const off = s.onAcked(a => {
      if (a >= seq) {
        off()
        resolve()
      }
    })
  })
}

async function worker(): Promise<void> {
  const url = process.env.FLEET_NATS_URL!
  const ids = process.env.FLEET_VMS!.split(',')
  await withTempDir(async dir => {
    const vms: Vm[] = []
    for (const id of ids) {
      const log = await EventLog.open({ path: join(dir, id), retentionIntervalMs: 0 })
      const pipeline = new Pipeline({ log, shedding: false })
      const shipper = new Shipper({
        log,
        browserId: id,
        nats: { servers: [url] },
        stream: 'FLEET',
        subjectPrefix: 'telemetry',
        limits: { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 },
      })
      const vm: Vm = { log, pipeline, shipper, committedAt: new Map(), lags: [] }
      log.onCommit(records => {
        const now = performance.now()
        for (const r of records) vm.committedAt.set(r.seq, now)
      })
      let last = 0
      shipper.onAcked(seq => {
        const now = performance.now()
        for (let q = last + 1; q <= seq; q++) {
          const c = vm.committedAt.get(q)
          if (c !== undefined) {
            vm.lags.push(now - c)
            vm.committedAt.delete(q)
          }
        }
        last = seq
      })
      await shipper.start()
      vms.push(vm)
    }
    // One event each so connections and the stream are settled before measuring.
    for (const vm of vms) vm.pipeline.emit(INPUTS[0]!)
    await Promise.all(vms.map(vm => vm.log.flush().then(() => until(vm.shipper, vm.log.lastSeq))))
    for (const vm of vms) vm.lags = []
    const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n')
    say({ ready: true })
    let replay: { id: string; log: EventLog }[] = []
    for await (const line of createInterface({ input: process.stdin })) {
      if (line === 'paced') {
        const start = performance.now()
        const total = RATE * SECONDS
        let emitted = 0
        while (emitted < total) {
          const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE))
          for (; emitted < due; emitted++) for (const vm of vms) vm.pipeline.emit(INPUTS[emitted % 1000]!)
          await new Promise(r => setTimeout(r, 2))
        }
        await Promise.all(vms.map(vm => vm.log.flush().then(() => until(vm.shipper, vm.log.lastSeq))))
        const p99 = vms.map(vm => {
          const l = vm.lags.sort((a, b) => a - b)
          return l[Math.min(l.length - 1, Math.floor(0.99 * l.length))] ?? 0
        })
        say({ paced: p99, events: vms.reduce((n, vm) => n + vm.lags.length, 0) })
      } else if (line === 'fill') {
        // Replay phase: fresh logs of BURST events per VM, written before any shipper exists (untimed).
        replay = []
        for (const id of ids) {
          const log = await EventLog.open({ path: join(dir, `${id}-replay`), retentionIntervalMs: 0 })
          const pipeline = new Pipeline({ log, shedding: false })
          for (let i = 0; i < BURST; i++) {
            pipeline.emit(INPUTS[i % 1000]!)
            if (i % 500 === 499) await new Promise(r => setImmediate(r))
          }
          await log.flush()
          replay.push({ id, log })
        }
        say({ filled: true })
      } else if (line === 'replay') {
        const start = Date.now()
        const shippers = replay.map(
          ({ id, log }) =>
            new Shipper({
              log,
              browserId: `${id}-replay`,
              nats: { servers: [url] },
              stream: 'FLEET',
              subjectPrefix: 'telemetry',
              limits: { duplicateWindowMs: 120_000, maxAgeMs: 0, maxBytes: 0, replicas: 1 },
            }),
        )
        await Promise.all(
          shippers.map(async (sh, i) => {
            await sh.start()
            await until(sh, replay[i]!.log.lastSeq)
          }),
        )
        const end = Date.now()
        for (const sh of shippers) await sh.stop()
        for (const r of replay) await r.log.close()
        say({ burst: { start, end, events: BURST * replay.length } })
      } else if (line === 'quit') {
        break
      }
    }
    for (const vm of vms) {
      await vm.shipper.stop()
      await vm.log.close()
    }
  })
}

async function parent(): Promise<void> {
  const nats = await startNatsServer()
  const rss: number[] = []
  const sampler = setInterval(() => {
    void nats.rssBytes().then(b => rss.push(b))
  }, 250)
  const children: { proc: ChildProcess; lines: AsyncIterator<string> }[] = []
  try {
    const idle = await nats.rssBytes()
    for (let w = 0; w < WORKERS; w++) {
      const ids = Array.from({ length: VMS }, (_, i) => i)
        .filter(i => i % WORKERS === w)
        .map(i => `vm-${String(i).padStart(3, '0')}`)
      const nodeArgs = process.env.WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? []
      const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', new URL(import.meta.url).pathname], {
        env: { ...process.env, FLEET_WORKER: '1', FLEET_NATS_URL: nats.url, FLEET_VMS: ids.join(',') },
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      children.push({ proc, lines: createInterface({ input: proc.stdout! })[Symbol.asyncIterator]() })
    }
    const next = async () =>
      Promise.all(
        children.map(async c => JSON.parse((await c.lines.next()).value as string) as Record<string, unknown>),
      )
    await next() // ready
    const send = (cmd: string) => {
      for (const c of children) c.proc.stdin!.write(cmd + '\n')
    }

    const cpu = () => ({
      server: threadsCpuMs(nats.proc!.pid!),
      workers: children.reduce((n, c) => n + threadsCpuMs(c.proc.pid!), 0),
    })
    let c0 = cpu()
    send('paced')
    const paced = await next()
    const pacedCpu = { server: cpu().server - c0.server, workers: cpu().workers - c0.workers }
    const p99s = paced.flatMap(r => r.paced as number[])
    const pacedEvents = paced.reduce((n, r) => n + (r.events as number), 0)
    const rssAfterPaced = await nats.rssBytes()

    send('fill')
    await next()
    c0 = cpu()
    send('replay')
    const burst = (await next()).map(r => r.burst as { start: number; end: number; events: number })
    const events = burst.reduce((n, b) => n + b.events, 0)
    const seconds = (Math.max(...burst.map(b => b.end)) - Math.min(...burst.map(b => b.start))) / 1000
    const replayCpu = { server: cpu().server - c0.server, workers: cpu().workers - c0.workers }
    send('quit')
    await Promise.all(children.map(c => new Promise(r => c.proc.once('exit', r))))

    p99s.sort((a, b) => a - b)
    console.log(`${VMS} VMs in ${WORKERS} processes -> one nats-server (JetStream, file storage), one stream`)
    console.log(`paced: ${RATE} events/s per VM (${RATE * VMS}/s aggregate) for ${SECONDS} s, ${pacedEvents} events:`)
    console.log(
      `  per-VM commit -> ack lag p99: median ${fmt(median(p99s), 1)} ms, worst VM ${fmt(p99s[p99s.length - 1]!, 1)} ms`,
    )
    console.log(
      `replay: ${VMS} shippers start on logs of ${BURST} events each: ${events} events acknowledged in ${fmt(seconds, 2)} s = ${fmt(events / seconds, 0)} ` +
        `events/s aggregate`,
    )
    const perEvent = (ms: number, n: number) => `${fmt((ms * 1000) / n, 1)} µs`
    console.log(
      `CPU per event (every thread, /proc): paced: nats-server ${perEvent(pacedCpu.server, pacedEvents)}, the VMs' processes ` +
        `${perEvent(pacedCpu.workers, pacedEvents)} (capture and shipping); replay: nats-server ${perEvent(replayCpu.server, events)}, ` +
        `the VMs' processes ${perEvent(replayCpu.workers, events)} (shipping alone)`,
    )
    console.log(
      `nats-server RSS: idle ${fmt(idle / 2 ** 20, 0)} MiB, after paced ${fmt(rssAfterPaced / 2 ** 20, 0)} MiB, peak ${fmt(Math.max(...rss) / 2 ** 20, 0)} MiB`,
    )
  } finally {
    clearInterval(sampler)
    for (const c of children) c.proc.kill('SIGKILL')
    await nats.dispose()
  }
}

// stdin keeps a worker alive after its last command: exit explicitly.
if (process.env.FLEET_WORKER) {
  await worker()
  process.exit(0)
} else await parent()
