// Reading a bundle zip as the page does (src/viewer/bundle-source.ts runs in Node too: Blob,
// TextDecoder, fflate): the event cap, out-of-order lines, zip64 directories, stored and deflated
// frames through the player's RecordingSource, and what it refuses.
import t from 'tap'
import { BUNDLE_MAX_EVENTS, BundleError, openBundle, readZipDirectory } from '../src/viewer/bundle-source.js'
import { rawZip, yazlZip, type RawEntry } from './helpers/zip.js'

const ev = (seq: number) =>
  JSON.stringify({
    seq,
    event: {
      ts: 1_700_000_000_000_000 + seq,
      type: 'console_log',
      category: 'console',
      source: { kind: 'cdp' },
      data: { text: `l${seq}` },
    },
  })
const blob = (b: Buffer) => new Blob([new Uint8Array(b)])

t.test('more events than the cap: the first ones, and a message', async t => {
  const lines = Array.from({ length: BUNDLE_MAX_EVENTS + 50_000 }, (_, i) => ev(i + 1)).join('\n') + '\n'
  const zip = await yazlZip([
    { name: 'events.ndjson', data: lines },
    { name: 'manifest.json', data: '{"browser_id":"b1"}' },
  ])
  const announced: number[] = []
  const b = await openBundle(blob(zip), 'big.zip', e => announced.push(e.length))
  t.equal(b.events.length, BUNDLE_MAX_EVENTS)
  t.equal(b.events[0]!.seq, 1)
  t.equal(b.events.at(-1)!.seq, BUNDLE_MAX_EVENTS)
  t.match(b.warnings, [/showing the first 200,000 events of the bundle/])
  t.equal(b.manifest?.browser_id, 'b1')
  t.ok(announced[0]! >= 2000 && announced[0]! < 20_000, `first rows handed over after ${announced[0]} events`)
})

t.test('out-of-order lines are sorted; blank lines ignored; the last line without a newline is read', async t => {
  const zip = await yazlZip([{ name: 'events.ndjson', data: [ev(3), '', ev(1), ev(2)].join('\n') }])
  const b = await openBundle(blob(zip), 'x.zip')
  t.same(
    b.events.map(e => e.seq),
    [1, 2, 3],
  )
  t.same(b.warnings, ['manifest.json is missing: the window and the redaction policy are unknown'])
})

t.test('a zip64 directory (more than 65,535 entries) and frames stored or deflated', async t => {
  const jpeg = (n: number) =>
    Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(200, n), Buffer.from([0xff, 0xd9])])
  const frames = [1, 2, 4].map((id, i) => ({
    frame_id: id,
    ts: 1000 + i * 10,
    target_id: 'P',
    after_seq: i,
    width: 1,
    height: 1,
    bytes: 205,
  }))
  const entries: RawEntry[] = [
    { name: 'events.ndjson', data: ev(1) + '\n' },
    { name: 'frames/index.json', data: JSON.stringify(frames) },
    { name: 'frames/1.jpg', data: jpeg(1), method: 0 },
    { name: 'frames/2.jpg', data: jpeg(2), method: 8 },
    // frame 4 is listed but missing from the zip (removed by retention while the bundle was written)
  ]
  for (let i = 0; i < 70_000; i++) entries.push({ name: `screenshots/${i}.png`, data: '', method: 0 })
  const zip = rawZip(entries)
  const dir = await readZipDirectory(blob(zip))
  t.equal(dir.size, 70_004)
  const b = await openBundle(blob(zip), 'z64.zip')
  t.equal(b.events.length, 1)
  t.same(
    b.frames.map(f => f.frame_id),
    [1, 2, 4],
  )
  const rec = b.recording
  t.equal(rec.live, false)
  t.same(Buffer.from(await (await rec.image(1))!.arrayBuffer()), jpeg(1), 'stored: the bytes')
  t.equal((await rec.image(1))!.type, 'image/jpeg')
  t.same(Buffer.from(await (await rec.image(2))!.arrayBuffer()), jpeg(2), 'deflated: the bytes')
  t.equal(await rec.image(4), undefined, 'listed but missing: undefined')
  t.same(await rec.frames({ limit: 2 }), { items: frames.slice(0, 2), hasMore: true, nextOffset: 4 })
  t.same(await rec.frames({ offset: 4, limit: 2 }), { items: frames.slice(2), hasMore: false, nextOffset: 0 })
  t.same((await rec.frames({ sinceUs: 1005, untilUs: 1020 })).items, frames.slice(1, 2))
})

t.test('what is refused, with a message', async t => {
  await t.rejects(
    openBundle(blob(Buffer.from('PK')), 'tiny.zip'),
    new BundleError('this is not a zip file (too small)'),
  )
  const odd = rawZip([{ name: 'events.ndjson', data: ev(1), method: 12 }])
  await t.rejects(openBundle(blob(odd), 'bz.zip'), /events\.ndjson: compression method 12 is not supported/)
  const lying = rawZip([{ name: 'events.ndjson', data: ev(1), compressedSize: 1_000_000 }])
  await t.rejects(openBundle(blob(lying), 'lie.zip'), /events\.ndjson is cut short/)
  const notJson = await yazlZip([
    { name: 'events.ndjson', data: ev(1) },
    { name: 'manifest.json', data: '{' },
    { name: 'frames/index.json', data: '{}' },
  ])
  const b = await openBundle(blob(notJson), 'n.zip')
  t.same(b.warnings, [
    'manifest.json is not valid JSON: ignored',
    'frames/index.json is not a list: no recording shown',
  ])
})
