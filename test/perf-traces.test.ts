// The perf trace service and store with a scripted recorder: the byte cap (a trace growing past it
// fails and leaves no file), shutdown mid-trace, failures kept for GET, the store's count and byte
// bounds (oldest first), and a reopened store (index kept, leftovers swept).
import t, { type Test } from 'tap'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PerfTraces, type TraceRecorder } from '../src/perf/perf-traces.js'
import { PerfTraceStore } from '../src/perf/trace-store.js'
import { silentLogger } from '../src/log.js'
import { Redactor } from '../src/events/redact.js'
import { gzipSync } from 'node:zlib'
import type { EventData } from '../src/events/index.js'
import { tempDir } from './helpers/store.js'

const KiB = 1024

/**
 * A gzip trace document of exactly `bytes` bytes (stored deflate blocks, as the cap counts what
 * Chromium sends) and the size of the file the service keeps of it (masked, compressed again).
 */
function gzipDoc(bytes: number, seed = 0): { gz: Buffer; stored: number } {
  const text = (n: number) => {
    let pad = ''
    for (let i = 0; pad.length < n; i++) pad += ((i * 2654435761 + seed) >>> 0).toString(16)
    return `{"traceEvents":[{"name":"pad","args":{"p":"${pad.slice(0, n)}"}}]}`
  }
  for (let n = bytes - 60; n > 0; n--) {
    const gz = gzipSync(text(n), { level: 0 })
    if (gz.length === bytes) return { gz, stored: gzipSync(text(n)).length }
  }
  throw new Error(`no document of ${bytes} bytes`)
}

/** Writes a gzip document of `chunks` chunks of `size` bytes after the signal says go (or at once); fails like Chromium when told. */
function scripted(opts: { chunks: number; size: number; gate?: Promise<void>; fail?: string }): TraceRecorder {
  return {
    hasTarget: id => id === 'PAGE',
    async record({ write, signal }) {
      if (opts.gate)
        await Promise.race([
          opts.gate,
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')))),
        ])
      if (opts.fail) throw new Error(opts.fail)
      const { gz } = gzipDoc(opts.chunks * opts.size)
      for (let i = 0; i < opts.chunks; i++) await write(gz.subarray(i * opts.size, (i + 1) * opts.size))
      return { dataLoss: false }
    },
  }
}

async function service(t: Test, recorder: TraceRecorder, store?: { maxCount?: number; maxBytes?: number }) {
  const dir = await tempDir(t)
  const s = await PerfTraceStore.open({ dir, maxCount: store?.maxCount ?? 10, maxBytes: store?.maxBytes ?? 64 * KiB })
  const events: EventData<'perf_trace_recorded'>[] = []
  const waiting = new Map<string, () => void>()
  let now = Date.UTC(2026, 10, 28, 12)
  const traces = new PerfTraces({
    store: s,
    recorder,
    maxTraceBytes: 16 * KiB,
    redactor: new Redactor(),
    report: e => {
      events.push(e)
      waiting.get(e.trace_id)?.()
    },
    logger: silentLogger,
    now: () => (now += 1000),
  })
  /** The trace once it ended (its perf_trace_recorded reported). */
  const settled = async (id: string) => {
    if (!events.some(e => e.trace_id === id)) await new Promise<void>(r => waiting.set(id, r))
    return traces.get(id)!
  }
  return { dir, store: s, traces, events, settled }
}

t.test('a trace growing past the byte cap fails and leaves no file', async t => {
  const { dir, traces, events, settled } = await service(t, scripted({ chunks: 5, size: 4 * KiB }))
  const { trace_id: id } = traces.start({ durationMs: 10 })
  const info = await settled(id)
  t.equal(info.state, 'failed')
  t.same(info.error, { code: 'payload_too_large', message: 'the trace grew past --perf-trace-max-bytes (16384 bytes)' })
  t.same(await readdir(dir), [], 'no part file, no index row')
  t.same(
    events.map(e => [e.trace_id, e.outcome, e.bytes]),
    [[id, 'failed', 0]],
  )
  t.equal(events[0]!.error_message, info.error!.message)
})

t.test('exactly the cap fits', async t => {
  const { traces, settled } = await service(t, scripted({ chunks: 4, size: 4 * KiB }))
  const { trace_id: id } = traces.start({ durationMs: 10 })
  const info = await settled(id)
  t.equal(info.state, 'ready')
  t.equal(info.bytes, gzipDoc(16 * KiB).stored, 'the file kept is the masked document compressed again')
})

t.test('one at a time; shutdown mid-trace drops it; failures are kept for GET', async t => {
  let go!: () => void
  const gate = new Promise<void>(r => (go = r))
  const { dir, traces, events, settled } = await service(t, scripted({ chunks: 1, size: KiB, gate }))
  const first = traces.start({ durationMs: 10 })
  t.throws(() => traces.start({ durationMs: 10 }), { status: 409, code: 'conflict' })
  t.throws(() => traces.start({ durationMs: 10, targetId: 'OTHER' }), { status: 409, code: 'conflict' })
  t.equal(traces.get(first.trace_id)!.state, 'recording')
  await traces.stop()
  const info = traces.get(first.trace_id)!
  t.equal(info.state, 'failed')
  t.equal(info.error!.code, 'shutdown')
  t.same(await readdir(dir), [])
  t.equal(events[0]!.outcome, 'failed')
  go()
  // A new trace may start once the last one ended; an unknown target is refused first.
  t.throws(() => traces.start({ durationMs: 10, targetId: 'OTHER' }), { status: 404, code: 'not_found' })
  const second = traces.start({ durationMs: 10, targetId: 'PAGE' })
  t.equal((await settled(second.trace_id)).state, 'ready')
  t.same(
    traces.list().map(r => [r.trace_id, r.state]),
    [
      [second.trace_id, 'ready'],
      [first.trace_id, 'failed'],
    ],
  )
})

t.test('a browser that refuses fails the trace with its message', async t => {
  const { traces, settled } = await service(
    t,
    scripted({ chunks: 0, size: 0, fail: 'Tracing has already been started' }),
  )
  const { trace_id: id } = traces.start({ durationMs: 10 })
  t.same((await settled(id)).error, { code: 'trace_failed', message: 'Tracing has already been started' })
})

t.test('without a browser, starting answers 503', async t => {
  const dir = await tempDir(t)
  const store = await PerfTraceStore.open({ dir, maxCount: 1, maxBytes: KiB })
  const traces = new PerfTraces({
    store,
    maxTraceBytes: KiB,
    redactor: new Redactor(),
    report: () => {},
    logger: silentLogger,
  })
  t.throws(() => traces.start({ durationMs: 10 }), { status: 503, code: 'unavailable' })
})

t.test('the store keeps the newest within its count and bytes; a reopened store keeps them', async t => {
  // Each kept file is `each` bytes: room for two and a half.
  const each = gzipDoc(8 * KiB).stored
  const maxBytes = Math.floor(2.5 * each)
  const { dir, traces, store, settled } = await service(t, scripted({ chunks: 2, size: 4 * KiB }), {
    maxCount: 3,
    maxBytes,
  })
  const ids: string[] = []
  for (let i = 0; i < 4; i++) {
    const { trace_id: id } = traces.start({ durationMs: 10 })
    t.equal((await settled(id)).state, 'ready')
    ids.push(id)
  }
  // Three would be over the bytes, so two are kept (the count alone would keep three).
  t.same(
    store.list().map(r => r.trace_id),
    ids.slice(2),
  )
  t.equal(store.totalBytes, 2 * each)
  t.same((await readdir(dir)).sort(), ['index.json', ...ids.slice(2).map(id => `${id}.json.gz`)].sort())
  t.equal(await traces.open(ids[0]!), undefined, 'a dropped trace cannot be opened')

  // A crash left a part file and a file the index never named: both swept at open.
  await writeFile(join(dir, `${ids[0]}.json.gz.part`), 'half')
  await writeFile(join(dir, '11111111-1111-4111-8111-111111111111.json.gz'), 'orphan')
  const reopened = await PerfTraceStore.open({ dir, maxCount: 3, maxBytes })
  t.same(
    reopened.list().map(r => [r.trace_id, r.bytes]),
    ids.slice(2).map(id => [id, each]),
  )
  t.same((await readdir(dir)).sort(), ['index.json', ...ids.slice(2).map(id => `${id}.json.gz`)].sort())
})

t.test('a damaged index is not trusted: its files are swept', async t => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'index.json'), '{not json')
  await writeFile(join(dir, '22222222-2222-4222-8222-222222222222.json.gz'), 'x')
  const store = await PerfTraceStore.open({ dir, maxCount: 3, maxBytes: KiB })
  t.same(store.list(), [])
  t.same(await readdir(dir), ['index.json'])
})
