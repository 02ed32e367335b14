// Full disk. On a real small filesystem (tmpfs with size=, when running as root and
// allowed to mount): a daemon started on a full disk stays up read-only (/healthz 503 with the
// reason, reads work, writes 507 with the error object), resumes writing when space returns, and
// never leaves an empty token or browser-id. Plus DiskGuard with injected free space.
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { DiskGuard } from '../src/daemon/disk-guard.js'
import { tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'

/** Writes zeros until ENOSPC: the filesystem is then really full. */
async function fillDisk(path: string): Promise<void> {
  const fh = await open(path, 'w')
  const chunk = Buffer.alloc(64 * 1024)
  try {
    for (;;) await fh.write(chunk)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    await fh.close()
  }
  // Smaller writes fill the last partial block too.
  const small = await open(path, 'a')
  try {
    for (;;) await small.write(Buffer.alloc(512))
  } catch {
    /* full */
  } finally {
    await small.close()
  }
}

function canMountTmpfs(dir: string): string | undefined {
  if (process.getuid?.() !== 0) return 'not running as root: cannot mount a small tmpfs'
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m,mode=0700', 'tmpfs', dir], { stdio: 'pipe' })
    return undefined
  } catch (err) {
    return `mount -t tmpfs not permitted here: ${String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim()}`
  }
}

t.test('a daemon started on a full disk stays up read-only and resumes when space returns (real tmpfs)', async t => {
  t.setTimeout(60_000)
  const mnt = await tempDir(t, 'bt-fulldisk-')
  const why = canMountTmpfs(mnt)
  if (why) {
    t.plan(0, why)
    return
  } // reported as a skip with the reason
  t.teardown(() => {
    try {
      execFileSync('umount', [mnt])
    } catch {
      /* already */
    }
  })
  const dataDir = join(mnt, 'data')
  const args = [
    '--listen',
    '127.0.0.1:0',
    '--data-dir',
    dataDir,
    '--no-browser',
    '--proxy-listen',
    'off',
    '--disk-reserve',
    '1MiB',
  ]
  // First run: healthy, stores one published event, stops cleanly.
  const d1 = await startDaemon(parseServeConfig(args, {}), {
    logger: silentLogger,
    announce: () => {},
    showNewToken: false,
  })
  const token = d1.generatedToken!.token
  const browserId = d1.browserId
  const H = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const publish = (url: string) =>
    fetch(`${url}/browsers/${browserId}/telemetry/events`, {
      method: 'POST',
      headers: H,
      body: JSON.stringify({
        type: 'live_view_connect',
        source: { kind: 'local_process' },
        data: { session_id: 'before' },
      }),
    })
  t.equal((await publish(d1.url)).status, 200)
  t.equal((await stat(join(dataDir, '.disk-reserve'))).size, 1024 * 1024, 'the reserve holds 1 MiB')
  await d1.close()

  await fillDisk(join(mnt, 'filler'))
  const d2 = await startDaemon(parseServeConfig(args, {}), {
    logger: silentLogger,
    announce: () => {},
    diskCheckIntervalMs: 50,
  })
  t.teardown(() => d2.close())
  const health = await fetch(`${d2.url}/healthz`)
  t.equal(health.status, 503)
  t.match(await health.json(), { status: 'degraded', reason: /data disk is full/ })
  const read = await fetch(`${d2.url}/browsers/${browserId}/telemetry/events?since=1h`, { headers: H })
  t.equal(read.status, 200, 'reads work')
  t.same(
    ((await read.json()) as { event: { data: { session_id: string } } }[])
      .filter(e => e.event.data.session_id)
      .map(e => e.event.data.session_id),
    ['before'],
  )
  const refused = await publish(d2.url)
  t.equal(refused.status, 507)
  t.match(await refused.json(), { code: 'insufficient_storage', message: /data disk is full/ })
  const cfg = await fetch(`${d2.url}/browsers/${browserId}/telemetry`, {
    method: 'PATCH',
    headers: H,
    body: '{"browser":{}}',
  })
  t.equal(cfg.status, 507, 'every write route is refused')
  t.equal((await fetch(`${d2.url}/browsers/${browserId}/telemetry`, { headers: H })).status, 200, 'config reads work')
  t.equal((await readFile(join(dataDir, 'token'), 'utf8')).trim(), token, 'token intact')
  t.equal((await readFile(join(dataDir, 'browser-id'), 'utf8')).trim(), browserId, 'browser id intact')

  // Space returns: writes resume on their own (the guard re-makes the reserve first).
  await rm(join(mnt, 'filler'))
  await waitFor(
    async () => (await fetch(`${d2.url}/healthz`)).status === 200,
    30_000,
    'healthz 200 after space returned',
  )
  t.equal((await publish(d2.url)).status, 200, 'writes resumed')
  t.equal((await stat(join(dataDir, '.disk-reserve'))).size, 1024 * 1024, 'reserve re-made')
})

t.test('first start on a full disk never leaves an empty token or browser-id (real tmpfs)', async t => {
  t.setTimeout(30_000)
  const mnt = await tempDir(t, 'bt-fulldisk-')
  const why = canMountTmpfs(mnt)
  if (why) {
    t.plan(0, why)
    return
  } // reported as a skip with the reason
  t.teardown(() => {
    try {
      execFileSync('umount', [mnt])
    } catch {
      /* already */
    }
  })
  const dataDir = join(mnt, 'fresh')
  await mkdir(dataDir)
  await fillDisk(join(mnt, 'filler'))
  // Nothing to release (no reserve yet): the start fails cleanly, and leaves no half-written file.
  await t.rejects(
    startDaemon(
      parseServeConfig(
        [
          '--listen',
          '127.0.0.1:0',
          '--data-dir',
          dataDir,
          '--no-browser',
          '--proxy-listen',
          'off',
          '--disk-reserve',
          '0',
        ],
        {},
      ),
      { logger: silentLogger, announce: () => {} },
    ),
  )
  for (const f of ['token', 'browser-id']) {
    const s = await stat(join(dataDir, f)).catch(() => undefined)
    t.ok(s === undefined || s.size > 0, `${f}: absent or whole, never empty`)
  }
})

t.test('DiskGuard: reserve released when free space runs out, re-made and writable once it returns', async t => {
  const dir = await tempDir(t)
  let free = 100 * 1024 * 1024
  const g = await DiskGuard.start({ dir, reserveBytes: 256 * 1024, checkIntervalMs: 1e9, freeBytes: async () => free })
  t.teardown(() => g.close())
  t.same(g.status, { readOnly: false })
  t.equal((await stat(join(dir, '.disk-reserve'))).size, 256 * 1024)
  free = 1000
  await g.check()
  t.equal(g.readOnly, true)
  t.match(g.status.reason, /data disk is full \(1000 bytes free\)/)
  await t.rejects(stat(join(dir, '.disk-reserve')), { code: 'ENOENT' }, 'released')
  free = 300 * 1024 // not yet: room for the reserve but not as much again
  await g.check()
  t.equal(g.readOnly, true)
  free = 10 * 1024 * 1024
  await g.check()
  t.same(g.status, { readOnly: false })
  t.equal((await stat(join(dir, '.disk-reserve'))).size, 256 * 1024)
  g.noteWriteError(Object.assign(new Error('IO error: No space left on device'), {}))
  t.equal(g.readOnly, true, 'a write failing with ENOSPC makes it read-only at once')
})
