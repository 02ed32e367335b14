// A fresh EventLog + Pipeline in a temp dir, closed on teardown.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { EventLog, type EventLogOptions } from '../../src/store/event-log.js'
import { Pipeline, type PipelineOptions } from '../../src/pipeline.js'

export async function tempDir(t: Test, prefix = 'bt-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

export async function openStore(t: Test, logOpts: Partial<EventLogOptions> = {}, pipeOpts: Partial<PipelineOptions> = {}) {
  const dir = logOpts.path ?? join(await tempDir(t), 'log')
  const log = await EventLog.open({ retentionIntervalMs: 0, ...logOpts, path: dir })
  const pipeline = new Pipeline({ log, ...pipeOpts })
  t.teardown(() => log.close())
  return { dir, log, pipeline }
}
