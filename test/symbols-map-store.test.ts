// The source-map store's index (src/symbols/map-store.ts): a snapshot plus an appended journal, so
// learning a new Debug ID or fetched map costs one short append, never a rewrite of the whole index;
// what a restart reads back equals what was written, a line cut short by a crash is skipped, and a
// journal a crash left beside a newer snapshot is dropped.
import t from 'tap'
import { appendFile, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MapStore, entryKey } from '../src/symbols/map-store.js'
import { tempDir } from './helpers/store.js'

const MiB = 1024 * 1024
const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`
const url = (i: number, pad = 0) => `https://app.example/assets/chunk-${i}.js${pad ? `?v=${'x'.repeat(pad)}` : ''}`

t.test('1,000 new Debug IDs: appends of their own size, not 1,000 rewrites of the index', async t => {
  const dir = await tempDir(t)
  const store = await MapStore.open(dir, 64 * MiB)
  for (let i = 0; i < 1000; i++) await store.noteScriptDebugId(url(i), uuid(i))
  // Each line is `{"script":[url,id]}\n`: 1,000 of them, 93,890 bytes in all, under the fold size.
  const lines = Array.from({ length: 1000 }, (_, i) => `${JSON.stringify({ script: [url(i), uuid(i)] })}\n`)
  const expected = lines.reduce((n, l) => n + l.length, 0)
  t.same(store.writes, { appends: 1000, snapshots: 0, bytes: expected })
  t.equal(expected, 93_890)
  // Before, each one rewrote (and fsynced) the index whole: 1 + 2 + ... + 1,000 entries, about 40 MB.
  const again = await MapStore.open(dir, 64 * MiB)
  for (const i of [0, 1, 499, 998, 999]) t.equal(again.scriptDebugId(url(i)), uuid(i), `script ${i} read back`)
})

t.test('long URLs: the journal folds into a snapshot as it grows; bytes written stay linear', async t => {
  const dir = await tempDir(t)
  const store = await MapStore.open(dir, 64 * MiB)
  // 1,000 scripts with 2,000-character URLs (the longest learned is 2,048): about 2 MB of index.
  for (let i = 0; i < 1000; i++) await store.noteScriptDebugId(url(i, 1950), uuid(i))
  const index = await readFile(join(dir, 'index.json'), 'utf8')
  const journal = await readFile(join(dir, `index-${JSON.parse(index).gen}.log`), 'utf8')
  const live = index.length + journal.length
  t.ok(store.writes.snapshots >= 2 && store.writes.snapshots <= 4, `${store.writes.snapshots} snapshots`)
  // Each fold writes the index once it doubled since the last: at most about 3x what is live.
  t.ok(store.writes.bytes < 3 * live, `${store.writes.bytes} bytes written for ${live} live`)
  t.same(
    (await readdir(dir)).filter(f => f.startsWith('index')).sort(),
    [`index-${JSON.parse(index).gen}.log`, 'index.json'],
    'one snapshot and its journal',
  )
  const again = await MapStore.open(dir, 64 * MiB)
  for (const i of [0, 500, 999]) t.equal(again.scriptDebugId(url(i, 1950)), uuid(i))
})

t.test('maps: uploads, fetched maps, removals and evictions read back the same after a restart', async t => {
  const dir = await tempDir(t)
  const store = await MapStore.open(dir, 3000)
  const map = (n: number, size = 500) => Buffer.from(JSON.stringify({ version: 3, n, pad: 'p'.repeat(size) }))
  await store.upload(map(1), { url: url(1) })
  await store.upload(map(2), { debugId: uuid(2) })
  await store.upload(map(3), { url: url(1) }) // replaces the first
  for (let i = 10; i < 16; i++) await store.putFetched(map(i), { url: url(i), map_url: `${url(i)}.map` })
  t.equal((await store.removeUploaded({ debugId: uuid(2) })).length, 1)
  const state = (s: MapStore) => ({
    uploaded: s.uploaded().map(entryKey),
    fetched: [10, 11, 12, 13, 14, 15].filter(i => s.fetchedByUrl(url(i))),
    bytes: s.bytes,
  })
  // 3,000 bytes: beside the two uploads of 528 bytes then, the last three fetched maps of 529 fit
  // (the removal later frees room, which nothing refills).
  const want = { uploaded: [`uploaded url ${url(1)}`], fetched: [13, 14, 15], bytes: 528 + 3 * 529 }
  t.same(state(store), want)
  t.equal(store.writes.snapshots, 0, 'journal appends only')
  const again = await MapStore.open(dir, 3000)
  t.same(state(again), want, 'read back from the journal')
  t.same((await readdir(join(dir, 'maps'))).length, 4, 'one file per map named; the others removed')
  t.same(await again.read(again.uploadedByUrl(url(1))!.id), map(3))
})

t.test('a journal line cut short is skipped; a stale journal beside a newer snapshot is dropped', async t => {
  const dir = await tempDir(t)
  const store = await MapStore.open(dir, 64 * MiB)
  await store.noteScriptDebugId(url(1), uuid(1))
  await store.noteScriptDebugId(url(2), uuid(2))
  await appendFile(join(dir, 'index-0.log'), '{"script":["https://app.example/cut.js","0000')
  // A snapshot of generation 3 with one script, and a journal of generation 2 a crash left behind.
  await writeFile(
    join(dir, 'index.json'),
    JSON.stringify({ version: 1, maps: [], scripts: [[url(7), uuid(7)]], gen: 3 }),
  )
  await writeFile(join(dir, 'index-3.log'), `${JSON.stringify({ script: [url(8), uuid(8)] })}\n{"scr`)
  await writeFile(join(dir, 'index-2.log'), `${JSON.stringify({ script: [url(9), uuid(9)] })}\n`)
  const again = await MapStore.open(dir, 64 * MiB)
  t.equal(again.scriptDebugId(url(7)), uuid(7), 'from the snapshot')
  t.equal(again.scriptDebugId(url(8)), uuid(8), 'from its journal, the cut line skipped')
  t.equal(again.scriptDebugId(url(9)), undefined, 'the stale journal is not replayed')
  t.equal(again.scriptDebugId(url(1)), undefined)
  t.same((await readdir(dir)).filter(f => f.startsWith('index')).sort(), ['index-3.log', 'index.json'])
  // The cut line cannot swallow the next append: it goes on a line of its own.
  await again.noteScriptDebugId(url(10), uuid(10))
  t.equal((await MapStore.open(dir, 64 * MiB)).scriptDebugId(url(10)), uuid(10))
})
