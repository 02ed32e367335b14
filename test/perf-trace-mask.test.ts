// A performance trace's JSON masked as it is written: every URL inside any string by the URL rule,
// the value of a secret-named field whole, escapes and chunk boundaries anywhere, other bytes as
// Chromium wrote them, an over-long string replaced by its mask.
import t from 'tap'
import { gunzipSync, gzipSync } from 'node:zlib'
import { Readable } from 'node:stream'
import { text as readText } from 'node:stream/consumers'
import { Redactor } from '../src/events/redact.js'
import { maskingWriter, TraceMasker, MAX_TRACE_STRING_CHARS } from '../src/perf/trace-mask.js'

const redactor = new Redactor()

/** The masker's output for `input`, fed in pieces of `step` characters. */
async function masked(input: string, step = input.length): Promise<string> {
  const parts: Buffer[] = []
  const bytes = Buffer.from(input)
  for (let i = 0; i < bytes.length; i += step) parts.push(bytes.subarray(i, i + step))
  return await readText(Readable.from(parts).pipe(new TraceMasker(redactor)))
}

const TRACE =
  '{"traceEvents":[\n' +
  '{"args":{"data":{"url":"https://shop.test/api?token=SECRET-xyz&a=1","stackTrace":[{"url":"https://cdn.test/app.js?sig=S3CR3T"}]}},"name":"ResourceSendRequest","ph":"I","ts":12},\n' +
  '{"args":{"data":{"message":"checkout https://pay.test/cb?code=ONE-TIME done"}},"name":"TimeStamp","ph":"I","ts":13},\n' +
  '{"args":{"data":{"message":"esc \\"q\\" \\u0068ttps://e.test/?password=hunter2"}},"name":"TimeStamp","ts":14},\n' +
  '{"args":{"apiKey":"k-123","session" : "s-456","n":1},"name":"x","ts":15}\n' +
  '],"metadata":{"user-agent":"HeadlessChrome"}}'

const WANT =
  '{"traceEvents":[\n' +
  '{"args":{"data":{"url":"https://shop.test/api?token=[redacted:16]&a=1","stackTrace":[{"url":"https://cdn.test/app.js?sig=[redacted:8]"}]}},"name":"ResourceSendRequest","ph":"I","ts":12},\n' +
  '{"args":{"data":{"message":"checkout https://pay.test/cb?code=[redacted:8] done"}},"name":"TimeStamp","ph":"I","ts":13},\n' +
  '{"args":{"data":{"message":"esc \\"q\\" https://e.test/?password=[redacted:8]"}},"name":"TimeStamp","ts":14},\n' +
  '{"args":{"apiKey":"[redacted:8]","session" : "[redacted:8]","n":1},"name":"x","ts":15}\n' +
  '],"metadata":{"user-agent":"HeadlessChrome"}}'

t.test('URLs in every string, secret-named values, the rest byte for byte', async t => {
  t.equal(await masked(TRACE), WANT)
  t.same(JSON.parse(await masked(TRACE)), JSON.parse(WANT), 'still JSON')
})

t.test('any chunk boundary gives the same bytes (inside strings, escapes, UTF-8 sequences)', async t => {
  const withUtf8 = TRACE.replace('done', 'dönë ✓')
  const want = WANT.replace('done', 'dönë ✓')
  for (const step of [1, 2, 3, 7, 64]) t.equal(await masked(withUtf8, step), want, `pieces of ${step} bytes`)
})

t.test('a string over the bound is replaced by its mask, never held', async t => {
  const long = 'a'.repeat(MAX_TRACE_STRING_CHARS + 1)
  t.equal(await masked(`{"x":"${long}","y":"ok"}`, 65536), '{"x":"[redacted:16777216]","y":"ok"}')
})

t.test('a trace cut inside a string fails', async t => {
  await t.rejects(masked('{"x":"open'), { message: 'the trace ended inside a JSON string' })
})

t.test('maskingWriter: gzip in, masked gzip out, in order', async t => {
  const out: Buffer[] = []
  const w = maskingWriter(redactor, async chunk => void out.push(chunk))
  const gz = gzipSync(TRACE)
  for (let i = 0; i < gz.length; i += 5) await w.write(gz.subarray(i, i + 5))
  await w.end()
  t.equal(gunzipSync(Buffer.concat(out)).toString(), WANT)
  const bad = maskingWriter(redactor, async () => {})
  await t.rejects(
    (async () => {
      await bad.write(Buffer.from('not gzip at all'))
      await bad.end()
    })(),
    { code: 'Z_DATA_ERROR' },
  )
})
