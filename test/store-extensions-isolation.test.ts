// Extension metadata lives in its own database: retention and a telemetry wipe never touch it, and
// records an older version kept inside the event log's database are moved out once.
import t from 'tap'
import { ClassicLevel } from 'classic-level'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { EventLog } from '../src/store/event-log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ExtensionMetaStore } from '../src/uploads/extension-meta.js'
import { moveLegacyExtensionMeta } from '../src/uploads/legacy-extension-meta.js'
import type { ExtensionRecord } from '../src/uploads/extension-store.js'
import { tempDir } from './helpers/store.js'

const record = (id: string, name: string): ExtensionRecord => ({
  id,
  project: 'default',
  name,
  created_at: '2026-01-01T00:00:00.000Z',
  size_bytes: 10,
  checksum: 'a'.repeat(64),
})

async function all(meta: ExtensionMetaStore): Promise<string[]> {
  const ids: string[] = []
  for await (const r of meta.values()) ids.push(r.id)
  return ids.sort()
}

t.test('retention removing every event and a wipe of the log leave extension records intact', async t => {
  const dataDir = await tempDir(t)
  const meta = await ExtensionMetaStore.open(join(dataDir, 'extensions-meta'))
  t.teardown(() => meta.close())
  await meta.put('a'.repeat(24), record('a'.repeat(24), 'one'))
  await meta.put('b'.repeat(24), record('b'.repeat(24), 'two'))

  const log = await EventLog.open({ path: join(dataDir, 'events'), retentionIntervalMs: 0, maxAgeMs: 1000 })
  const pipeline = new Pipeline({ log, clock: () => 1_000_000 })
  for (let i = 0; i < 500; i++) pipeline.emit({ type: 'cdp_connect', data: {} })
  await log.flush()
  t.equal(await log.runRetention(1_000_000 + 10_000_000), 500, 'retention by age removed every event')
  t.same(await all(meta), ['a'.repeat(24), 'b'.repeat(24)], 'extension records survive retention')
  await log.close()
  await rm(join(dataDir, 'events'), { recursive: true, force: true })
  t.same(await all(meta), ['a'.repeat(24), 'b'.repeat(24)], 'and a wipe of the telemetry log')
})

t.test('records kept in the log database by an older version are moved out once, events untouched', async t => {
  const dataDir = await tempDir(t)
  const eventsPath = join(dataDir, 'events')
  {
    const log = await EventLog.open({ path: eventsPath, retentionIntervalMs: 0 })
    const pipeline = new Pipeline({ log })
    for (let i = 0; i < 3; i++) pipeline.emit({ type: 'cdp_connect', data: {} })
    await log.close()
    // The old layout: a '!extensions!' sublevel of the event log's LevelDB.
    const raw = new ClassicLevel<Buffer, Buffer>(eventsPath, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    const legacy = raw.sublevel<string, ExtensionRecord>('extensions', { keyEncoding: 'utf8', valueEncoding: 'json' })
    await legacy.put('c'.repeat(24), record('c'.repeat(24), 'old'))
    await raw.close()
  }
  const metaPath = join(dataDir, 'extensions-meta')
  t.equal(await moveLegacyExtensionMeta(eventsPath, metaPath), 1)
  t.equal(await moveLegacyExtensionMeta(eventsPath, metaPath), 0, 'the old records are gone from the log')
  const meta = await ExtensionMetaStore.open(metaPath)
  t.teardown(() => meta.close())
  t.same(await all(meta), ['c'.repeat(24)])
  const log = await EventLog.open({ path: eventsPath, retentionIntervalMs: 0 })
  t.teardown(() => log.close())
  t.same(
    (await log.read({ order: 'asc', limit: 10, cursor: 1 })).records.map(r => r.seq),
    [1, 2, 3],
    'events untouched',
  )
})
