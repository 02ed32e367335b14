// Envelope cap: every event type, random huge shapes, exact byte bounds, schema
// validity, largest fields cut first, producer objects untouched; plus the pipeline end to end.
import t from 'tap'
import { EVENT_TYPES, categoryOf, validateEvent, type TelemetryEvent } from '../src/events/index.js'
import { fitEvent, encodedBytes, cutToEncoded, ENVELOPE_OVERHEAD } from '../src/pipeline/envelope-fit.js'
import { genEvent, genString, rng, type GenShape } from './helpers/event-gen.js'
import { accepted, openStore } from './helpers/store.js'

const MAX_SEQ_ENVELOPE = (json: string) => `{"seq":${Number.MAX_SAFE_INTEGER},"event":${json}}`

function build(input: ReturnType<typeof genEvent>): TelemetryEvent {
  return {
    ts: 1_700_000_000_000_000,
    type: input.type,
    category: categoryOf(input.type),
    source: input.source!,
    data: input.data,
  } as TelemetryEvent
}

t.test('encodedBytes and cutToEncoded agree with JSON.stringify on every kind of character', async t => {
  const r = rng(7)
  for (let i = 0; i < 200; i++) {
    const s = genString(r, Math.floor(r() * 300)) + (i % 3 === 0 ? '\ud800x\udc00' : '') // lone surrogates too
    t.equal(encodedBytes(s), Buffer.byteLength(JSON.stringify(s)), `string ${i}`)
    const budget = Math.floor(r() * (encodedBytes(s) + 4))
    const cut = cutToEncoded(s, budget)
    t.ok(s.startsWith(cut), 'a prefix')
    const enc = Buffer.byteLength(JSON.stringify(cut))
    t.ok(enc <= Math.max(budget, 2), `within ${budget}: ${enc}`)
    if (cut.length < s.length) {
      // One more UTF-16 unit (or pair) would not have fitted: the cut is the longest prefix.
      const next = s.slice(
        0,
        cut.length +
          (s.charCodeAt(cut.length) >= 0xd800 &&
          s.charCodeAt(cut.length) <= 0xdbff &&
          s.charCodeAt(cut.length + 1) >= 0xdc00
            ? 2
            : 1),
      )
      t.ok(Buffer.byteLength(JSON.stringify(next)) > budget, 'longest prefix')
    }
    t.notOk(
      /[\ud800-\udbff]$/.test(cut) && !/[\ud800-\udbff]$/.test(s.slice(0, cut.length + 1).slice(0, -1) + ''),
      'never ends inside a pair it split',
    )
  }
})

t.test('every event type, random huge shapes: within the cap, valid, flagged, untouched when small', async t => {
  const shapes: GenShape[] = [
    { maxString: 200, maxItems: 8, optional: 0.5 }, // mostly under the cap
    { maxString: 12_000, maxItems: 40, optional: 0.9 }, // few big strings
    { maxString: 300, maxItems: 800, optional: 1 }, // many small items
    { maxString: 6000, maxItems: 200, optional: 1 }, // both
  ]
  const caps = [4096, 8192, 32 * 1024]
  let cutCount = 0
  let untouched = 0
  for (const type of EVENT_TYPES) {
    for (let seed = 1; seed <= 12; seed++) {
      const r = rng(seed * 1000 + type.length)
      const shape = shapes[seed % shapes.length]!
      const cap = caps[seed % caps.length]!
      const input = genEvent(type, r, shape)
      const event = build(input)
      t.same(validateEvent(event), [], `${type}#${seed}: generator makes valid events`)
      const before = JSON.stringify(event)
      const dataRef = event.data
      const { json, cut } = fitEvent(event, cap)
      const bytes = Buffer.byteLength(MAX_SEQ_ENVELOPE(json))
      if (bytes > cap || validateEvent(JSON.parse(json)).length > 0) {
        t.fail(`${type}#${seed} cap ${cap}: ${bytes} bytes, issues ${JSON.stringify(validateEvent(JSON.parse(json)))}`)
        continue
      }
      t.equal(JSON.stringify(dataRef), JSON.stringify(input.data), `${type}#${seed}: producer data untouched`)
      if (Buffer.byteLength(before) + ENVELOPE_OVERHEAD <= cap) {
        t.equal(cut, false)
        t.equal(json, before, `${type}#${seed}: under the cap, byte-identical`)
        untouched++
      } else {
        t.equal(cut, true)
        t.equal(JSON.parse(json).truncated, true, `${type}#${seed}: flagged`)
        cutCount++
      }
    }
  }
  t.ok(cutCount > 100 && untouched > 20, `both paths exercised: ${cutCount} cut, ${untouched} untouched`)
})

t.test('largest fields are cut first, to one level, and the rest is kept exactly', async t => {
  const event = build({
    type: 'network_request',
    data: {
      request_id: 'r1',
      method: 'POST',
      url: 'http://a/' + 'u'.repeat(20_000),
      headers: { a: 'h'.repeat(5000), b: 'small' },
      post_data: 'p'.repeat(30_000),
    },
    source: { kind: 'cdp' },
  } as never)
  const cap = 32 * 1024
  const { json } = fitEvent(event, cap)
  const out = JSON.parse(json)
  const bytes = Buffer.byteLength(MAX_SEQ_ENVELOPE(json))
  t.ok(bytes <= cap && bytes >= cap - 8, `fills the cap: ${bytes} of ${cap}`)
  t.equal(out.data.headers.a, 'h'.repeat(5000), 'the smaller field is not cut')
  t.equal(out.data.headers.b, 'small')
  t.equal(out.data.request_id, 'r1')
  // url and post_data end at one level (encoded sizes within a byte of each other).
  t.ok(
    Math.abs(out.data.url.length - out.data.post_data.length) <= 1,
    `${out.data.url.length} vs ${out.data.post_data.length}`,
  )
  t.ok(out.data.url.startsWith('http://a/uuu'), 'cut as a prefix')
})

t.test("the issue's console.log: 5,000 arguments of 300 chars under a 1 MiB cap, through the pipeline", async t => {
  const cap = 1024 * 1024
  const { log, pipeline } = await openStore(t, {}, { maxEnvelopeBytes: cap })
  const args = Array.from({ length: 5000 }, (_, i) => `${i}:`.padEnd(300, 'x'))
  const res = pipeline.emit({
    type: 'console_log',
    data: { level: 'log', text: args[0]!, args, target_id: 'T' },
    source: { kind: 'cdp' },
  })
  t.equal(await accepted(res).committed, true)
  const page = await log.read({ order: 'asc', limit: 10 })
  const stored = page.records[0]!.json
  const bytes = Buffer.byteLength(stored)
  t.ok(bytes <= cap, `stored ${bytes} <= ${cap}`)
  t.ok(bytes > cap - 5000 * 2, `and close to it (strings cut to one level, not halved): ${bytes}`)
  const env = JSON.parse(stored)
  t.equal(env.event.truncated, true)
  t.equal(env.event.data.args.length, 5000, 'every argument kept')
  const lens = new Set(env.event.data.args.map((a: string) => a.length))
  t.ok(lens.size <= 2, `one level for all: ${[...lens]}`)
  t.equal(pipeline.stats.truncated, 1)
})

t.test('a million tiny arguments: array tail dropped, strings above the floor kept', async t => {
  const args = Array.from({ length: 1_000_000 }, () => 'ab')
  const event = build({
    type: 'console_log',
    data: { level: 'log', text: 'ab', args },
    source: { kind: 'cdp' },
  } as never)
  const cap = 64 * 1024
  const { json } = fitEvent(event, cap)
  const bytes = Buffer.byteLength(MAX_SEQ_ENVELOPE(json))
  const out = JSON.parse(json)
  t.ok(bytes <= cap && bytes > cap - 64, `${bytes}`)
  t.ok(out.data.args.length > 10_000 && out.data.args.length < 20_000, `${out.data.args.length} args kept`)
  t.ok(
    out.data.args.every((a: string) => a === 'ab'),
    'kept arguments intact',
  )
  t.equal(args.length, 1_000_000, 'producer array untouched')
})

t.test('a deep stack of parents with thousands of frames: skeleton still valid and within the cap', async t => {
  let stack: Record<string, unknown> | undefined
  for (let i = 0; i < 200; i++) {
    stack = {
      description: 'async'.repeat(50),
      callFrames: Array.from({ length: 50 }, (_, j) => ({
        functionName: `f${j}`,
        url: 'http://a/' + 'x'.repeat(200),
        lineNumber: j,
        columnNumber: 1,
      })),
      ...(stack ? { parent: stack } : {}),
    }
  }
  const event = build({
    type: 'console_error',
    data: { text: 'boom', stack_trace: stack },
    source: { kind: 'cdp' },
  } as never)
  for (const cap of [4096, 100_000]) {
    const { json } = fitEvent(event, cap)
    t.ok(Buffer.byteLength(MAX_SEQ_ENVELOPE(json)) <= cap, `cap ${cap}`)
    t.same(validateEvent(JSON.parse(json)), [])
    t.equal(JSON.parse(json).data.text, 'boom')
  }
})
