// A fresh EventLog + Pipeline in a temp dir, closed on teardown.
import { ClassicLevel } from 'classic-level'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { EventLog, type EventLogOptions } from '../../src/store/event-log.js'
import {
  Pipeline,
  type EmitAccepted,
  type EmitResult,
  type EventInput,
  type PipelineOptions,
} from '../../src/pipeline/pipeline.js'
import { categoryOf, type TelemetryEvent } from '../../src/events/index.js'
import { ExtensionMetaStore } from '../../src/uploads/extension-meta.js'

export async function tempDir(t: Test, prefix = 'bt-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

export async function openStore(
  t: Test,
  logOpts: Partial<EventLogOptions> = {},
  pipeOpts: Partial<PipelineOptions> = {},
) {
  const dir = logOpts.path ?? join(await tempDir(t), 'log')
  const log = await EventLog.open({ retentionIntervalMs: 0, ...logOpts, path: dir })
  const pipeline = new Pipeline({ log, ...pipeOpts })
  t.teardown(() => log.close())
  return { dir, log, pipeline }
}

/** The accepted branch of an emit() result; fails the test (throws) when the event was dropped. */
export function accepted(r: EmitResult): EmitAccepted {
  if (r.dropped !== undefined)
    throw new Error(`event dropped: ${r.dropped}${r.issues ? ' ' + JSON.stringify(r.issues) : ''}`)
  return r
}

let fakeSeq = 0
/** What a stand-in Emit (no store behind it) returns: accepted, with a made-up seq. */
export function fakeAccepted(input: EventInput): EmitAccepted {
  const seq = ++fakeSeq
  const event = {
    ts: 0,
    category: categoryOf(input.type),
    source: input.source ?? { kind: 'local_process' },
    ...input,
  } as TelemetryEvent
  return { accepted: seq, envelope: { seq, event }, committed: Promise.resolve(true) }
}

/**
 * For EventLog's `level` option: creates the log's LevelDB and keeps it, so a test can reach the
 * raw database (fault injection, compaction) that the log itself never hands out.
 */
export function keepLevel(): {
  level: (path: string) => ClassicLevel<Buffer, Buffer>
  db: () => ClassicLevel<Buffer, Buffer>
} {
  let db: ClassicLevel<Buffer, Buffer> | undefined
  return {
    level: path => (db = new ClassicLevel<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' })),
    db: () => {
      if (!db) throw new Error('the log has not opened its database yet')
      return db
    },
  }
}

/** A fresh extension metadata database in a temp dir, closed on teardown. */
export async function openExtensionMeta(t: Test): Promise<ExtensionMetaStore> {
  const meta = await ExtensionMetaStore.open(join(await tempDir(t, 'bt-extmeta-'), 'meta'))
  t.teardown(() => meta.close())
  return meta
}
