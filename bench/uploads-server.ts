// Helper process for bench/uploads-extract.ts: the API app with the upload route over a real event
// log, so the RSS the benchmark samples is a daemon's. Prints its port, then serves until killed.
// Usage: node --import tsx bench/uploads-server.ts <work-dir>
import { join } from 'node:path'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import { registerUploadRoutes } from '../src/api/routes/uploads.js'
import { startApiServer } from '../src/api/server.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { EventLog } from '../src/store/event-log.js'
import { sweepSpool } from '../src/uploads/multipart-spool.js'
import { prepareUploadRoots } from '../src/uploads/upload-roots.js'

export const BENCH_TOKEN = 'bench-token'
const work = process.argv[2]!
const log = await EventLog.open({ path: join(work, 'log'), retentionIntervalMs: 0 })
const pipeline = new Pipeline({ log })
const tokens = new TokenSet()
tokens.add(BENCH_TOKEN, ALL_SCOPES)
const uploadRoots = await prepareUploadRoots([], work)
const spoolDir = join(work, 'tmp')
await sweepSpool(spoolDir)
const app = createApiApp({
  browserId: 'bench',
  log,
  pipeline,
  tokens,
  routes: [
    r =>
      registerUploadRoutes(r, {
        uploadRoots,
        spoolDir,
        uploadMaxBytes: 1024 ** 3,
        zipLimits: { maxEntries: 100_000, maxTotalBytes: 4 * 1024 ** 3, maxRatio: 200 },
      }),
  ],
})
const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
// BENCH_TRACE_MEMORY=1 prints process.memoryUsage() every 250 ms (to see heap vs buffers vs RSS)
if (process.env.BENCH_TRACE_MEMORY)
  setInterval(() => {
    const m = process.memoryUsage()
    process.stderr.write(
      `rss ${(m.rss / 2 ** 20).toFixed(0)} heap ${(m.heapUsed / 2 ** 20).toFixed(0)}/${(m.heapTotal / 2 ** 20).toFixed(0)} ext ` +
        `${(m.external / 2 ** 20).toFixed(0)} ab ${(m.arrayBuffers / 2 ** 20).toFixed(0)}\n`,
    )
  }, 250).unref()
process.stdout.write(`${new URL(server.url).port}\n`)
process.on('SIGTERM', () => {
  void server
    .close(100)
    .then(() => log.close())
    .then(() => process.exit(0))
})
