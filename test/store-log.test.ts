import t from 'tap'
import type { ClassicLevel } from 'classic-level'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { EventLog, DataDirLockedError, DEFAULT_READ_MAX_BYTES } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { accepted, keepLevel, openStore, tempDir } from './helpers/store.js'

const call = (i: number): EventInput => ({
  type: 'api_call',
  data: { request_id: `r${i}`, operation_id: 'op', status: 200, duration_ms: i },
})
const consoleLog = (text: string): EventInput => ({
  type: 'console_log',
  source: { kind: 'cdp' },
  data: { level: 'log', text, args: [text] },
})

async function emitAll(p: Pipeline, inputs: EventInput[]) {
  const out = inputs.map(i => accepted(p.emit(i)))
  await Promise.all(out.map(o => o.committed))
  return out.map(o => o.envelope)
}

/** Makes LevelDB writes fail with the returned message while it returns one (fault injection). */
function failWrites(db: ClassicLevel<Buffer, Buffer>, failure: () => string | undefined) {
  const realBatch = db.batch.bind(db) as () => { write(): Promise<void>; close(): Promise<void> }
  ;(db as { batch: unknown }).batch = () => {
    const batch = realBatch()
    const message = failure()
    if (message)
      batch.write = () => {
        void batch.close()
        return Promise.reject(new Error(message))
      }
    return batch
  }
}

function runWriter(dir: string, count: number, mode: 'close' | 'hold') {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'fixtures/log-writer.ts'), dir, String(count), mode],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const ready = new Promise<number>((resolve, reject) => {
    let buf = ''
    child.stdout.on('data', d => {
      buf += d
      const m = /ready (\d+)/.exec(buf)
      if (m) resolve(Number(m[1]))
    })
    child.once('exit', code => reject(new Error(`writer exited ${code} before ready`)))
  })
  const exited = new Promise<void>(r => child.once('exit', () => r()))
  return { child, ready, exited }
}

t.test('seq starts at 1 and strictly increases; ts non-decreasing when the clock steps back', async t => {
  let now = 5_000_000
  const { pipeline } = await openStore(t, {}, { clock: () => now })
  const a = accepted(pipeline.emit(call(1))).envelope
  now = 1_000_000 // wall clock steps back
  const b = accepted(pipeline.emit(call(2))).envelope
  now = 6_000_000
  const c = accepted(pipeline.emit(call(3))).envelope
  t.same([a.seq, b.seq, c.seq], [1, 2, 3])
  t.same([a.event.ts, b.event.ts, c.event.ts], [5_000_000, 5_000_000, 6_000_000])
  t.equal(a.event.category, 'control')
  t.same(a.event.source, { kind: 'local_process' })
})

t.test('only committed envelopes are visible to readers and subscribers', async t => {
  const { log, pipeline } = await openStore(t, { commitDelayMs: 200 })
  const seen: number[] = []
  log.onCommit(recs => {
    for (const r of recs) seen.push(r.seq)
  })
  const r = accepted(pipeline.emit(call(1)))
  const before = await log.read({ order: 'asc', limit: 10, cursor: 1 })
  t.same(before.records, [], 'not readable before commit')
  t.same(seen, [], 'not published before commit')
  t.equal(await r.committed, true)
  const after = await log.read({ order: 'asc', limit: 10, cursor: 1 })
  t.same(
    after.records.map(x => JSON.parse(x.json)),
    [r.envelope],
  )
  t.same(seen, [1])
})

t.test('group commit: one batch for a burst, many events', async t => {
  const { log, pipeline } = await openStore(t)
  let batches = 0
  log.onCommit(() => {
    batches++
  })
  await emitAll(
    pipeline,
    Array.from({ length: 1000 }, (_, i) => call(i)),
  )
  t.equal(log.lastSeq, 1000)
  t.ok(batches <= 8, `1000 events in ${batches} batches`)
})

t.test(
  'records are stored byte for byte, ASCII and not (both encodings of the write path), with and without a measured length',
  async t => {
    const { log, pipeline } = await openStore(t)
    const fromListener: string[] = []
    log.onCommit(recs => {
      for (const r of recs) fromListener.push(Buffer.from(r.envelopeBytes!).toString('utf8'))
    })
    const texts = [
      'plain ascii',
      'caf\u00e9 \u00fc',
      'emoji \u{1F4A5}',
      'lone \ud800 surrogate',
      'cjk \u4e2d\u6587',
      'quote " and \\ and \n',
      '\u007f\u0080',
    ]
    // console events carry no target: the store measures the length; network events with a target get it measured by the pipeline.
    const inputs: EventInput[] = [
      ...texts.map(consoleLog),
      ...texts.map((text, i): EventInput => ({
        type: 'network_request',
        data: {
          request_id: `r${i}`,
          method: 'GET',
          url: `https://x.test/${text}`,
          headers: { 'x-note': text },
          target_id: 'T1',
        },
      })),
    ]
    const envelopes = await emitAll(pipeline, inputs)
    const page = await log.read({ order: 'asc', limit: 100 })
    t.equal(page.records.length, inputs.length)
    const expected = envelopes.map(e => JSON.stringify(e))
    t.same(
      page.records.map(r => r.json),
      expected,
      'read back exactly as JSON.stringify(envelope)',
    )
    t.same(fromListener, expected, 'commit listeners get the same bytes')
    t.same(
      page.records
        .map(
          r =>
            (JSON.parse(r.json) as { event: { data: { text?: string; headers?: { 'x-note': string } } } }).event.data,
        )
        .map(d => d.text ?? d.headers!['x-note']),
      [...texts, ...texts],
      'text survives (a lone surrogate too: JSON.stringify escapes it)',
    )
  },
)

t.test('category gate and capture rule', async t => {
  const { pipeline } = await openStore(t)
  t.equal(pipeline.isEnabled('screenshot'), false, 'screenshot is opt-in')
  t.equal(pipeline.isEnabled('monitor'), true, 'monitor flows with CDP categories on')
  t.same(pipeline.emit({ type: 'monitor_screenshot', data: { png: 'x' } }), { dropped: 'category_disabled' })
  pipeline.setCategories(['control', 'system'])
  t.equal(pipeline.isEnabled('monitor'), false, 'monitor silent when no CDP category is on')
  t.same(pipeline.emit({ type: 'monitor_init_failed', data: { step: 'x' } }), { dropped: 'category_disabled' })
  t.same(pipeline.emit(consoleLog('x')), { dropped: 'category_disabled' })
  t.equal(pipeline.emit(call(1)).accepted, 1)
  pipeline.setCategories(['interaction'])
  t.equal(pipeline.isEnabled('monitor'), true)
  t.same([...pipeline.enabledCategories()].sort(), ['interaction', 'monitor'])
  t.equal(pipeline.stats.gated, 3)
})

t.test('invalid events are dropped, counted, never stored', async t => {
  const { log, pipeline } = await openStore(t)
  t.equal(pipeline.emit({ type: 'api_call', data: { request_id: 1 } } as never).dropped, 'invalid')
  t.same(pipeline.emit({ type: 'nope', data: {} } as never), {
    dropped: 'invalid',
    issues: [{ path: '/type', message: 'unknown event type "nope"' }],
  })
  t.equal(pipeline.stats.invalid, 2)
  await log.flush()
  t.equal(log.lastSeq, 0)
})

t.test('secret headers are masked before storage, case-insensitively', async t => {
  const { log, pipeline } = await openStore(t)
  const headers = {
    Authorization: 'Bearer s3cret',
    cookie: 'a=b',
    'Set-Cookie': 'c=d',
    'PROXY-AUTHORIZATION': 'x',
    accept: 'text/html',
  }
  const r = accepted(
    pipeline.emit({
      type: 'network_request',
      source: { kind: 'cdp' },
      data: { request_id: '1', method: 'GET', headers },
    }),
  )
  await r.committed
  const [rec] = (await log.read({ order: 'asc', limit: 1, cursor: 1 })).records
  const stored = JSON.parse(rec!.json).event.data.headers
  t.same(stored, {
    Authorization: '[redacted:16]',
    cookie: '[redacted:8]',
    'Set-Cookie': '[redacted:8]',
    'PROXY-AUTHORIZATION': '[redacted:8]',
    accept: 'text/html',
  })
  t.equal(headers.Authorization, 'Bearer s3cret', 'the producer object is not mutated')
  t.notMatch(rec!.json, /s3cret/)
})

t.test('oversize events are cut to the cap and flagged, and the pipeline keeps going', async t => {
  const cap = 64 * 1024
  const { log, pipeline } = await openStore(t, {}, { maxEnvelopeBytes: cap })
  const big = 'x'.repeat(500_000)
  const r = accepted(pipeline.emit(consoleLog(big)))
  const many = accepted(
    pipeline.emit({
      type: 'console_log',
      data: { level: 'log', text: 'a', args: Array.from({ length: 50_000 }, () => 'abcdef') },
    }),
  )
  const small = accepted(pipeline.emit(call(1)))
  await Promise.all([r.committed, many.committed, small.committed])
  const recs = (await log.read({ order: 'asc', limit: 10, cursor: 1 })).records
  t.equal(recs.length, 3)
  for (const rec of recs.slice(0, 2)) {
    t.ok(Buffer.byteLength(rec.json) <= cap, `fits: ${Buffer.byteLength(rec.json)}`)
    t.equal(JSON.parse(rec.json).event.truncated, true)
  }
  t.ok(JSON.parse(recs[0]!.json).event.data.text.length > 1000, 'keeps as much as fits')
  t.equal(JSON.parse(recs[2]!.json).event.truncated, undefined, 'small events untouched')
  t.equal(pipeline.stats.truncated, 2)
})

t.test('cursor reads: asc and desc pages, has-more and next cursor', async t => {
  const { log, pipeline } = await openStore(t)
  await emitAll(
    pipeline,
    Array.from({ length: 25 }, (_, i) => (i % 5 === 0 ? consoleLog(`c${i}`) : call(i))),
  )
  const seqs = (r: { records: { seq: number }[] }) => r.records.map(x => x.seq)
  const p1 = await log.read({ order: 'asc', limit: 10, cursor: 1 })
  t.same(seqs(p1), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  t.equal(p1.hasMore, true)
  const p3 = await log.read({ order: 'asc', limit: 10, cursor: 21 })
  t.same(seqs(p3), [21, 22, 23, 24, 25])
  t.same([p3.hasMore, p3.nextCursor], [false, 0])
  const exact = await log.read({ order: 'asc', limit: 5, cursor: 21 })
  t.same([exact.hasMore, exact.nextCursor], [false, 0], 'a page that ends exactly at the end has no more')
  const d1 = await log.read({ order: 'desc', limit: 10 })
  t.same(seqs(d1), [25, 24, 23, 22, 21, 20, 19, 18, 17, 16])
  const d2 = await log.read({ order: 'desc', limit: 10, cursor: d1.nextCursor })
  t.same(seqs(d2), [15, 14, 13, 12, 11, 10, 9, 8, 7, 6])
  const d3 = await log.read({ order: 'desc', limit: 10, cursor: d2.nextCursor })
  t.same(seqs(d3), [5, 4, 3, 2, 1])
  t.same([d3.hasMore, d3.nextCursor], [false, 0])
  // Sparse category: pages are never empty while more matches exist.
  const c1 = await log.read({ order: 'asc', limit: 2, cursor: 1, categories: new Set(['console']) })
  t.same(seqs(c1), [1, 6])
  const c2 = await log.read({ order: 'asc', limit: 2, cursor: c1.nextCursor, categories: new Set(['console']) })
  t.same(seqs(c2), [11, 16])
  const c3 = await log.read({ order: 'asc', limit: 2, cursor: c2.nextCursor, categories: new Set(['console']) })
  t.same([seqs(c3), c3.hasMore], [[21], false])
  const cd = await log.read({ order: 'desc', limit: 3, categories: new Set(['console', 'captcha']) })
  t.same([seqs(cd), cd.hasMore], [[21, 16, 11], true])
  t.equal(JSON.parse(c1.records[0]!.json).event.data.text, 'c0')
})

t.test(
  'pages are bounded in bytes: a cut page continues exactly after its last record, in both orders and filtered',
  async t => {
    const { log, pipeline } = await openStore(t)
    // 12 events of ~100 KB (text and args): a 250,000-byte bound holds 2 of them per page.
    await emitAll(
      pipeline,
      Array.from({ length: 12 }, (_, i) => consoleLog(`${i}`.padEnd(50_000, 'x'))),
    )
    const sizes = (await log.read({ order: 'asc', limit: 100, cursor: 1, maxBytes: Infinity })).records.map(r =>
      Buffer.byteLength(r.json),
    )
    t.equal(sizes.length, 12, 'unbounded: one page')
    const per = Math.floor(250_000 / Math.max(...sizes))
    t.equal(per, 2)
    for (const [order, categories] of [
      ['asc', undefined],
      ['desc', undefined],
      ['asc', new Set(['console'] as const)],
      ['desc', new Set(['console', 'control'] as const)],
    ] as const) {
      const seen: number[] = []
      let cursor: number | undefined = order === 'asc' ? 1 : undefined
      for (let pages = 0; ; pages++) {
        const p = await log.read({
          order,
          limit: 100,
          cursor,
          maxBytes: 250_000,
          ...(categories ? { categories } : {}),
        })
        t.equal(p.records.length, 2, `${order} page ${pages}: 2 records`)
        seen.push(...p.records.map(r => r.seq))
        if (!p.hasMore) break
        cursor = p.nextCursor
      }
      const all = Array.from({ length: 12 }, (_, i) => i + 1)
      t.same(
        seen,
        order === 'asc' ? all : all.reverse(),
        `${order}${categories ? ' filtered' : ''}: every record once, in order`,
      )
    }
    const one = await log.read({ order: 'asc', limit: 100, cursor: 1, maxBytes: 10 })
    t.same(
      [one.records.length, one.hasMore, one.nextCursor],
      [1, true, 2],
      'a record larger than the bound still makes a page of one',
    )
    const dflt = await log.read({ order: 'asc', limit: 100, cursor: 1 })
    t.equal(dflt.records.length, 12, `the default bound (${DEFAULT_READ_MAX_BYTES} bytes) holds these 1.2 MB`)
  },
)

t.test('time windows: since inclusive, until exclusive, seek over gaps', async t => {
  let now = 1_000_000
  const { log, pipeline } = await openStore(t, {}, { clock: () => now })
  for (let i = 0; i < 100; i++) {
    now = 1_000_000 + Math.floor(i / 10) * 1000
    pipeline.emit(call(i))
  }
  await log.flush()
  const r = await log.read({ order: 'asc', limit: 100, sinceUs: 1_003_000, untilUs: 1_005_000 })
  t.same(
    r.records.map(x => x.seq),
    Array.from({ length: 20 }, (_, i) => 31 + i),
  )
  t.equal(await log.seekTs(0), 1)
  t.equal(await log.seekTs(1_009_000), 91)
  t.equal(await log.seekTs(1_009_001), 101, 'past the end -> next position')
  const until = await log.read({ order: 'desc', limit: 5, untilUs: 1_001_000 })
  t.same(
    until.records.map(x => x.seq),
    [10, 9, 8, 7, 6],
  )
  const bounded = await log.read({ order: 'asc', limit: 100, cursor: 95, untilUs: 1_009_000 })
  t.same(bounded.records, [], 'until still bounds a cursor read')
})

t.test('retention by age and by bytes; a cursor below retention continues at the oldest', async t => {
  let now = 1_000_000_000
  const { log, pipeline } = await openStore(t, { maxAgeMs: 1000, maxBytes: 1 << 30 }, { clock: () => now })
  for (let i = 0; i < 50; i++) {
    now = 1_000_000_000 + i * 100_000
    pipeline.emit(call(i))
  } // 0.1 s apart
  await log.flush()
  const deleted = await log.runRetention(1_000_000_000 + 49 * 100_000 + 500_000) // keep the last 1 s
  t.equal(deleted, 44, 'events older than 1 s before now are gone')
  t.equal(log.firstSeq, 45)
  const r = await log.read({ order: 'asc', limit: 3, cursor: 1 })
  t.same(
    r.records.map(x => x.seq),
    [45, 46, 47],
  )
  const cats = await log.read({ order: 'asc', limit: 3, cursor: 1, categories: new Set(['control']) })
  t.same(
    cats.records.map(x => x.seq),
    [45, 46, 47],
    'category index trimmed too',
  )

  const dir2 = join(await tempDir(t), 'bytes')
  const raw = keepLevel()
  const small = await EventLog.open({ path: dir2, retentionIntervalMs: 0, maxBytes: 200_000, level: raw.level })
  t.teardown(() => small.close())
  const p2 = new Pipeline({ log: small })
  for (let i = 0; i < 3000; i++) p2.emit(consoleLog('y'.repeat(400) + i))
  await small.flush()
  await raw.db().compactRange(Buffer.of(0x00) as never, Buffer.of(0xff) as never)
  const before = await small.storedBytes()
  t.ok(before > 200_000, `over the cap before retention (${before} bytes)`)
  const gone = await small.runRetention()
  // The oldest share that brings the log to 90% of the cap, by position (the events are of one size).
  t.equal(gone, Math.ceil((3000 * (before - 180_000)) / before), `removed ${gone}`)
  t.equal(small.firstSeq, gone + 1)
  t.equal(small.lastSeq, 3000, 'newest kept')
  const after = await small.storedBytes()
  t.ok(after <= 200_000, `under the cap after retention (${after} <= 200000 bytes)`)
  t.ok(after < before, 'and smaller than before')
})

t.test('clean restart continues without a gap; seq never reused', async t => {
  const dir = join(await tempDir(t), 'log')
  const w = runWriter(dir, 10, 'close')
  t.equal(await w.ready, 10)
  await w.exited
  const log = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
  t.teardown(() => log.close())
  t.equal(log.previousStopWasUnclean, false)
  const p = new Pipeline({ log })
  const [e] = await emitAll(p, [call(11)])
  t.equal(e!.seq, 11)
  t.ok(e!.event.ts >= JSON.parse((await log.read({ order: 'asc', limit: 1, cursor: 10 })).records[0]!.json).event.ts)
})

t.test('kill -9 leaves a visible seq gap and loses nothing committed', async t => {
  const dir = join(await tempDir(t), 'log')
  const w = runWriter(dir, 10, 'hold')
  t.equal(await w.ready, 10)
  w.child.kill('SIGKILL')
  await w.exited
  const log = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
  t.teardown(() => log.close())
  t.equal(log.previousStopWasUnclean, true)
  const all = await log.read({ order: 'asc', limit: 100, cursor: 1 })
  t.same(
    all.records.map(r => r.seq),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    'committed events survive, uncommitted never appear',
  )
  const p = new Pipeline({ log })
  const [e] = await emitAll(p, [call(11)])
  t.ok(e!.seq >= 12, `first seq after crash is ${e!.seq}: a gap`)
  t.notOk((await log.read({ order: 'asc', limit: 100, cursor: 1 })).records.some(r => r.seq === 11))
})

t.test(
  'durable seq: every write that commits a seq above the synced reservation is itself synced and carries a new reservation',
  async t => {
    const raw = keepLevel()
    const { log, pipeline } = await openStore(t, {
      seqReserveBlock: 1000,
      syncIntervalMs: 1e9,
      commitMaxEvents: 100,
      level: raw.level,
    })
    const db = raw.db()
    const RSV = Buffer.from('mrsv')
    const writes: { maxSeq: number; reservation?: number; sync: boolean }[] = []
    const realBatch = db.batch.bind(db) as () => {
      put(k: Buffer, v: Buffer): unknown
      write(o?: { sync?: boolean }): Promise<void>
    }
    ;(db as { batch: unknown }).batch = () => {
      const b = realBatch()
      const w = { maxSeq: 0, reservation: undefined as number | undefined, sync: false }
      const put = b.put.bind(b)
      b.put = (k: Buffer, v: Buffer) => {
        if (k[0] === 0x65) w.maxSeq = Math.max(w.maxSeq, Number(k.readBigUInt64BE(1)))
        if (k.equals(RSV)) w.reservation = Number(v.readBigUInt64BE(0))
        return put(k, v)
      }
      const write = b.write.bind(b)
      b.write = (o?: { sync?: boolean }) => {
        w.sync = o?.sync === true
        writes.push(w)
        return write(o)
      }
      return b
    }
    for (let round = 0; round < 50; round++) {
      await emitAll(
        pipeline,
        Array.from({ length: 100 }, (_, i) => call(round * 100 + i)),
      )
    }
    t.equal(log.lastSeq, 5000)
    let reserved = 0
    for (const w of writes) {
      if (w.maxSeq > reserved) {
        t.ok(
          w.reservation !== undefined && w.reservation >= w.maxSeq,
          `write up to ${w.maxSeq} reserves ${w.reservation}`,
        )
        t.equal(w.sync, true, `write up to ${w.maxSeq} is synced`)
        reserved = w.reservation!
      } else {
        t.equal(w.reservation, undefined)
        t.equal(w.sync, false, 'writes inside the reservation are not synced')
      }
    }
    const synced = writes.filter(w => w.sync).length
    t.equal(synced, 5, '5000 events with a block of 1000: exactly 5 synced writes')
    t.equal(log.health().syncedWrites, 5)
    t.ok(writes.length >= 50, `${writes.length} writes in all`)
  },
)

t.test(
  'durable seq: after a power loss that took unsynced writes, the next seq starts above every seq ever handed out',
  async t => {
    const dir = join(await tempDir(t), 'log')
    const w = runWriter(dir, 10, 'hold')
    t.equal(await w.ready, 10)
    w.child.kill('SIGKILL')
    await w.exited
    // Power loss: the unsynced tail of the write-ahead log is gone (events 6..10 and their seq meta),
    // although readers had seen seqs up to 10. The synced reservation survived.
    {
      const { ClassicLevel } = await import('classic-level')
      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
      await db.open()
      const reservation = (await db.get(Buffer.from('mrsv')))!.readBigUInt64BE(0)
      t.equal(Number(reservation), 10 + 4096, 'the first write reserved a block of 4096 past its seqs')
      for (let seq = 6; seq <= 11; seq++) {
        const k = Buffer.allocUnsafe(9)
        k[0] = 0x65
        k.writeBigUInt64BE(BigInt(seq), 1)
        await db.del(k)
      }
      const meta = (await db.get(Buffer.from('mseq')))!
      meta.writeBigUInt64BE(5n, 0)
      await db.put(Buffer.from('mseq'), meta)
      await db.close()
    }
    const log = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
    t.teardown(() => log.close())
    t.equal(log.previousStopWasUnclean, true)
    t.equal(log.lastSeq, 5)
    const [e] = await emitAll(new Pipeline({ log }), [call(99)])
    t.equal(e!.seq, 4107, 'first seq after the loss is the reservation + 1: seqs 6..4106 are a gap, none reused')
  },
)

t.test('durable seq: a clean stop continues without a gap although a reservation is outstanding', async t => {
  const dir = join(await tempDir(t), 'log')
  {
    const log = await EventLog.open({ path: dir, retentionIntervalMs: 0, seqReserveBlock: 50 })
    await emitAll(new Pipeline({ log }), [call(1), call(2), call(3)])
    await log.close()
  }
  const log = await EventLog.open({ path: dir, retentionIntervalMs: 0, seqReserveBlock: 50 })
  t.teardown(() => log.close())
  const [e] = await emitAll(new Pipeline({ log }), [call(4)])
  t.equal(e!.seq, 4)
})

t.test('a data dir held by another running daemon fails clearly', async t => {
  const dir = join(await tempDir(t), 'log')
  const w = runWriter(dir, 1, 'hold')
  await w.ready
  t.teardown(async () => {
    w.child.kill('SIGKILL')
    await w.exited
  })
  await t.rejects(EventLog.open({ path: dir, retentionIntervalMs: 0 }), DataDirLockedError)
  await t.rejects(
    EventLog.open({ path: dir, retentionIntervalMs: 0 }),
    /in use by another running browser-telemetry process/,
  )
})

t.test('failed writes are counted and surfaced, then the pipeline recovers without loss', async t => {
  const raw = keepLevel()
  const { log, pipeline } = await openStore(t, { level: raw.level })
  let failures = 2
  // The health as the first write after the two failures begins: what a /healthz probe saw meanwhile.
  let duringOutage: ReturnType<EventLog['health']> | undefined
  failWrites(raw.db(), () => {
    if (failures-- > 0) return 'IO error: No space left on device'
    duringOutage ??= { ...log.health() }
    return undefined
  })
  const results = Array.from({ length: 5 }, (_, i) => accepted(pipeline.emit(call(i))))
  await results[0]!.committed
  const h = duringOutage!
  t.equal(h.writable, false)
  t.ok(h.writeFailures >= 1)
  t.match(h.lastWriteError, /No space left/)
  t.same(await Promise.all(results.map(r => r.committed)), [true, true, true, true, true])
  t.equal(log.health().writable, true)
  t.same(
    (await log.read({ order: 'asc', limit: 10, cursor: 1 })).records.map(r => r.seq),
    [1, 2, 3, 4, 5],
  )
})

t.test('while writes keep failing the buffer is bounded: oldest batches dropped, counted, a gap', async t => {
  const raw = keepLevel()
  const { log, pipeline } = await openStore(t, { maxPendingEvents: 600, commitMaxEvents: 100, level: raw.level })
  let failing = true
  let failedOnce!: () => void
  const aWriteFailed = new Promise<void>(resolve => (failedOnce = resolve))
  failWrites(raw.db(), () => {
    if (!failing) return undefined
    failedOnce()
    return 'disk full'
  })
  const reported: string[] = []
  log.onDrop(records => {
    for (const r of records) reported.push(`${r.category}:${r.seq}`)
  })
  const results = Array.from({ length: 1000 }, (_, i) => accepted(pipeline.emit(call(i))))
  // The overflow happens as the events are emitted; the disk recovers only after a write failed.
  await aWriteFailed
  failing = false
  const outcomes = await Promise.all(results.map(r => r.committed))
  const dropped = outcomes.filter(o => !o).length
  t.ok(dropped >= 400, `dropped ${dropped}`)
  t.equal(log.health().droppedEvents, dropped)
  const droppedSeqs = results.filter((_, i) => !outcomes[i]).map(r => `control:${r.envelope.seq}`)
  t.same(reported, droppedSeqs, 'drop listeners hear exactly the dropped records, with their category')
  const stored = (await log.read({ order: 'asc', limit: 101, cursor: 1 })).records.map(r => r.seq)
  t.equal(stored[0], 1, 'the in-flight batch is kept')
  t.equal(stored[99], 100)
  t.equal(stored[100], 100 + dropped + 1, 'the next stored seq shows the gap of exactly what was dropped')
})

t.test('a huge configured batch size is clamped to one indexable write', async t => {
  const { log, pipeline } = await openStore(t, { commitMaxEvents: 1e9, commitDelayMs: 1000 })
  const results = Array.from({ length: 70_000 }, (_, i) => accepted(pipeline.emit(call(i))))
  t.equal(await results[results.length - 1]!.committed, true)
  const page = await log.read({ order: 'desc', limit: 2, categories: new Set(['control']) })
  t.same(
    page.records.map(r => r.seq),
    [70_000, 69_999],
  )
})
