// Benchmark 1: emit() -> committed throughput vs raw classic-level batch puts (100/batch)
// of the same bytes, in the same run. Prints the median ratio of 5 runs. Goal >= 0.5.
// Both sides are warmed up once first (N/4 events each, not counted: the first pass of ours also paid
// for compiling the whole pipeline, the raw loop is a few lines), and the runs alternate which side
// goes first, so drift on a shared machine (page cache, other processes) hits both alike.
import { ClassicLevel } from 'classic-level'
import { join } from 'node:path'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { median, withTempDir, realisticEvent, fmt } from './common.js'

const N = Number(process.env.N ?? 200_000)
const RUNS = Number(process.env.RUNS ?? 5)

// Both sides start from prebuilt material, cycled: the raw side 1000 encoded payloads, our side
// 1000 producer inputs. What is timed is the pipeline and the store, not building test objects.
const INPUTS = Array.from({ length: 1000 }, (_, i) => realisticEvent(i))

async function ours(dir: string, n = N): Promise<{ rate: number; bytes: number[] }> {
  const log = await EventLog.open({ path: join(dir, 'ours'), retentionIntervalMs: 0 })
  const pipeline = new Pipeline({ log, shedding: false }) // one synthetic page at full speed: measures the store, not the shedding
  const sizes: number[] = []
  const t0 = performance.now()
  let last: Promise<boolean> = Promise.resolve(true)
  for (let i = 0; i < n; i++) {
    const r = pipeline.emit(INPUTS[i % 1000]!)
    if (r.dropped !== undefined) throw new Error(`bench event dropped: ${r.dropped}`)
    last = r.committed
    if (i < 1000) sizes.push(JSON.stringify(r.envelope).length)
    // Yield now and then like a real producer so group commit can run.
    if (i % 1000 === 999) await new Promise(r => setImmediate(r))
  }
  await last
  const rate = n / ((performance.now() - t0) / 1000)
  await log.close()
  return { rate, bytes: sizes }
}

async function raw(dir: string, payloads: Buffer[], n = N): Promise<number> {
  const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'raw'), { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  const t0 = performance.now()
  for (let i = 0; i < n; i += 100) {
    const ops = []
    for (let j = i; j < Math.min(n, i + 100); j++) {
      const key = Buffer.allocUnsafe(9)
      key[0] = 0x65
      key.writeBigUInt64BE(BigInt(j + 1), 1)
      ops.push({ type: 'put' as const, key, value: payloads[j % payloads.length]! })
    }
    await db.batch(ops)
  }
  const rate = n / ((performance.now() - t0) / 1000)
  await db.close()
  return rate
}

const payloadsOf = () =>
  INPUTS.map((input, i) =>
    Buffer.from(
      JSON.stringify({
        seq: i + 1,
        event: { ts: Date.now() * 1000, type: input.type, category: 'network', source: input.source, data: input.data },
      }),
    ),
  )
await withTempDir(async dir => {
  await ours(dir, Math.ceil(N / 4))
  await raw(dir, payloadsOf(), Math.ceil(N / 4))
}) // warm-up, not counted

const ratios: number[] = []
const oursRates: number[] = []
const rawRates: number[] = []
for (let run = 0; run < RUNS; run++) {
  await withTempDir(async dir => {
    const payloads = payloadsOf()
    let o: Awaited<ReturnType<typeof ours>>
    let r: number
    if (run % 2 === 0) {
      o = await ours(dir)
      r = await raw(dir, payloads)
    } else {
      r = await raw(dir, payloads)
      o = await ours(dir)
    }
    oursRates.push(o.rate)
    rawRates.push(r)
    ratios.push(o.rate / r)
    console.log(
      `run ${run + 1}: ours ${fmt(o.rate, 0)} ev/s, raw ${fmt(r, 0)} ev/s, ratio ${fmt(o.rate / r)} (envelope ` +
        `~${Math.round(o.bytes.reduce((a, b) => a + b, 0) / o.bytes.length)} B)`,
    )
  })
}
console.log(
  `store-ingest: median ours ${fmt(median(oursRates), 0)} ev/s, raw batch(100) ${fmt(median(rawRates), 0)} ev/s, ratio ${fmt(median(ratios))} (goal >= 0.5)`,
)
