// System collectors end to end: the launched Chromium killed with SIGKILL (service_crashed + the
// monitor's disconnect + the proxy's upstream_changed), gave_up, the daemon's own unclean stop, and
// the kernel-log follower (backlog skipped, new records followed, unreadable log reported once).
import t from 'tap'
import { EventEmitter } from 'node:events'
import { appendFile, mkdir, open, readFile, rmdir, writeFile, access } from 'node:fs/promises'
import { constants } from 'node:fs'
import { join } from 'node:path'
import { execFileSync, spawn } from 'node:child_process'
import { WebSocket } from 'ws'
import {
  Monitor,
  type BrowserExit,
  type MonitorEventMap,
  type MonitorState,
  type MonitorView,
} from '../src/monitor/index.js'
import { CdpProxy } from '../src/proxy/cdp-proxy.js'
import type { Envelope } from '../src/events/index.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import {
  OomWatcher,
  reportPreviousUncleanStop,
  startSystemCollectors,
  watchLaunchedBrowser,
} from '../collectors/system.js'
import { stripLogPrefix } from '../collectors/system-oom.js'
import { fakeAccepted, openStore, tempDir } from './helpers/store.js'
import { waitFor } from './helpers/http.js'
import { FakeTimers } from './helpers/fake-timers.js'

const recorder = () => {
  const events: EventInput[] = []
  return {
    events,
    emit: (e: EventInput) => {
      events.push(e)
      return fakeAccepted(e)
    },
  }
}

t.test(
  'launched Chromium killed with SIGKILL: service_crashed, monitor_disconnected, proxy upstream_changed',
  async t => {
    const { log, pipeline } = await openStore(t)
    const monitor = new Monitor({
      emit: pipeline.emit,
      reconnect: { attempts: 5, initialBackoffMs: 50, maxBackoffMs: 200 },
    })
    t.teardown(() => monitor.stop())
    const unwatch = watchLaunchedBrowser(monitor, pipeline.emit)
    t.teardown(unwatch)
    await monitor.start()
    const proxy = new CdpProxy({
      listen: { host: '127.0.0.1', port: 0 },
      upstream: () => monitor.browserWsUrl,
      onUpstreamChanged: l => {
        monitor.events.on('upstream', l)
        return () => {
          monitor.events.off('upstream', l)
        }
      },
      emit: pipeline.emit,
      upstreamLossGraceMs: 30_000,
    })
    const { port } = await proxy.start()
    t.teardown(() => proxy.close())

    const client = new WebSocket(`ws://127.0.0.1:${port}/`)
    await new Promise((r, j) => {
      client.once('open', r)
      client.once('error', j)
    })
    // One round trip: the proxy accepts the client before its upstream dial completes.
    const answered = new Promise(r => client.once('message', r))
    client.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' }))
    await answered
    const clientClosed = new Promise(r => client.once('close', r))
    const killed = monitor.launched!
    const firstUrl = monitor.browserWsUrl
    killed.process.kill('SIGKILL')
    await clientClosed
    await waitFor(
      () => monitor.state === 'collecting' && monitor.browserWsUrl !== undefined && monitor.browserWsUrl !== firstUrl,
      30_000,
      'relaunch',
    )

    const all = async () =>
      (await log.read({ order: 'asc', limit: 100 })).records.map(r => (JSON.parse(r.json) as Envelope).event)
    await waitFor(async () => (await all()).some(e => e.type === 'cdp_disconnect'), 10_000, 'cdp_disconnect')
    const events = await all()
    const crash = events.find(e => e.type === 'service_crashed')
    t.same(crash && { category: crash.category, data: crash.data, source: crash.source }, {
      category: 'system',
      data: { service_name: 'chromium', phase: 'running', pid: killed.pid },
      source: { kind: 'local_process', event: 'browser-exit', metadata: { signal: 'SIGKILL' } },
    })
    t.ok(
      events.some(e => e.type === 'monitor_disconnected'),
      'the monitor saw its disconnect',
    )
    t.ok(
      events.some(e => e.type === 'monitor_reconnected'),
      'and reconnected to the relaunched browser',
    )
    t.same(
      events
        .filter(e => e.type === 'cdp_connect' || e.type === 'cdp_disconnect')
        .map(e => (e.type === 'cdp_disconnect' ? e.data.reason : e.type)),
      ['cdp_connect', 'upstream_changed'],
    )
    t.equal(events.filter(e => e.type === 'service_crashed').length, 1, 'exactly one crash event')
  },
)

t.test('gave_up once when the monitor fails after a launched browser died', async t => {
  // A stand-in monitor that keeps its status the way Monitor does: the last browser exit is
  // recorded before 'browser-exit' is emitted and forgotten once collecting again.
  const events = new EventEmitter<MonitorEventMap>()
  let state: MonitorState = 'collecting'
  let lastBrowserExit: BrowserExit | undefined
  const monitor: MonitorView = {
    events,
    status: () => ({
      state,
      targets: {},
      reconnectAttempt: 0,
      reconnects: 0,
      cdpErrors: {},
      ...(lastBrowserExit ? { lastBrowserExit } : {}),
    }),
  }
  const setState = (s: MonitorState) => {
    state = s
    if (s === 'collecting') lastBrowserExit = undefined
    events.emit('state', s)
  }
  const exit = (e: BrowserExit) => {
    lastBrowserExit = e
    events.emit('browser-exit', e)
  }
  const rec = recorder()
  const stop = watchLaunchedBrowser(monitor, rec.emit)
  setState('failed') // no browser death: not a crash of ours
  exit({ pid: undefined, code: 1, signal: null, phase: 'startup' })
  setState('disconnected')
  setState('failed')
  setState('failed')
  stop()
  exit({ pid: 9, code: null, signal: 'SIGKILL', phase: 'running' })
  t.same(rec.events, [
    {
      type: 'service_crashed',
      data: { service_name: 'chromium', phase: 'startup' },
      source: { kind: 'local_process', event: 'browser-exit', metadata: { exit_code: '1' } },
    },
    {
      type: 'service_crashed',
      data: { service_name: 'chromium', phase: 'gave_up' },
      source: { kind: 'local_process', event: 'monitor-state' },
    },
  ])
})

t.test('previous unclean stop of the daemon itself', async t => {
  const rec = recorder()
  t.equal(reportPreviousUncleanStop({ previousStopWasUnclean: false }, rec.emit), false)
  t.equal(reportPreviousUncleanStop({ previousStopWasUnclean: true }, rec.emit), true)
  t.same(rec.events, [
    {
      type: 'service_crashed',
      data: { service_name: 'browser-telemetry', phase: 'running' },
      source: { kind: 'local_process', event: 'unclean-stop' },
    },
  ])
})

/** The 6.1 fixture as raw /dev/kmsg records. */
async function fixtureAsKmsg(firstSeq: number, facility = 0): Promise<string> {
  const text = await readFile(new URL('./fixtures/oom/linux-6.1-memcg.dmesg', import.meta.url), 'utf8')
  return text
    .split('\n')
    .filter(Boolean)
    .map((l, i) => `${facility * 8 + 4},${firstSeq + i},${1042512881 + i},-;${stripLogPrefix(l)}\n`)
    .join('')
}

t.test(
  'kernel log follower on a file of kmsg records: backlog skipped, new reports emitted, user records ignored',
  async t => {
    const dir = await tempDir(t)
    const path = join(dir, 'kmsg')
    await writeFile(path, await fixtureAsKmsg(1)) // an old OOM report: before this daemon's time
    const rec = recorder()
    const w = new OomWatcher({ kmsgPath: path, emit: rec.emit, pollMs: 3_600_000 })
    t.same(await w.start(), { kmsgReadable: true })
    t.teardown(() => w.stop())
    await w.poll()
    t.same(rec.events, [], 'backlog skipped')
    // A process writing to /dev/kmsg gets the user facility: it cannot fake a kill.
    await appendFile(
      path,
      '12,500,1,-;Killed process 1 (fake) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n',
    )
    const report = await fixtureAsKmsg(600)
    // Written in two pieces, the cut inside a record: the follower must reassemble lines.
    await appendFile(path, report.slice(0, 1000))
    await w.poll()
    await appendFile(path, report.slice(1000))
    await w.poll()
    t.equal(rec.events.length, 1)
    t.same(rec.events[0], {
      type: 'system_oom_kill',
      source: { kind: 'local_process', event: 'kmsg' },
      data: {
        pid: 4417,
        process_name: 'chromium',
        rss_kb: 795060,
        constraint: 'memcg',
        mem_free_kb: 0,
        mem_total_kb: 1048576,
        top_tasks: [
          { name: 'chromium', pid: 4417, rss_kb: 795060 },
          { name: 'chromium', pid: 4390, rss_kb: 244936 },
          { name: 'chromium', pid: 4433, rss_kb: 98268 },
          { name: 'chromium', pid: 4418, rss_kb: 48004 },
          { name: 'browser-telemet', pid: 4460, rss_kb: 39504 },
        ],
        trigger_pid: 4417,
        trigger_process_name: 'chromium',
      },
    })
  },
)

t.test('unreadable kernel log: status for /healthz, said once in the log', async t => {
  const warnings: unknown[] = []
  const logger = {
    warn: (o: unknown, m: string) => warnings.push([o, m]),
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
  } as never
  const rec = recorder()
  const sys = await startSystemCollectors({
    emit: rec.emit,
    logger,
    kmsgPath: '/nonexistent/kmsg',
    watchUnits: [],
    log: { previousStopWasUnclean: true },
  })
  t.teardown(() => sys.stop())
  t.same(sys.kmsg(), { kmsgReadable: false, reason: "ENOENT: no such file or directory, open '/nonexistent/kmsg'" })
  t.same(warnings, [
    [
      { path: '/nonexistent/kmsg', reason: "ENOENT: no such file or directory, open '/nonexistent/kmsg'" },
      'kernel log not readable: system_oom_kill events are off',
    ],
  ])
  t.same(
    rec.events.map(e => e.type),
    ['service_crashed'],
    'the unclean-stop report',
  )
})

/** A Timers that records every delay it is asked for, over a manual clock. */
function recordingTimers() {
  const clock = new FakeTimers()
  const delays: number[] = []
  return {
    clock,
    delays,
    timers: {
      set: (fn: () => void, ms: number) => {
        delays.push(ms)
        return clock.set(fn, ms)
      },
      clear: clock.clear,
    },
  }
}

t.test('kernel log poll interval: 1 s when unset, also when passed through as undefined (not every 1 ms)', async t => {
  const dir = await tempDir(t)
  const path = join(dir, 'kmsg')
  await writeFile(path, '')
  const rec = recorder()
  const r = recordingTimers()
  // What the daemon does (src/daemon/stages.ts, startSystem): kmsgPollMs is not set, so the option
  // is present with the value undefined.
  const sys = await startSystemCollectors({
    emit: rec.emit,
    kmsgPath: path,
    kmsgPollMs: undefined,
    watchUnits: [],
    timers: r.timers,
  })
  t.teardown(() => sys.stop())
  t.same(r.delays, [1000], 'first poll scheduled 1 s out')
  await appendFile(
    path,
    '4,1,1,-;Killed process 4242 (victim) total-vm:1kB, anon-rss:8kB, file-rss:0kB, shmem-rss:0kB\n',
  )
  r.clock.advance(999)
  t.same(rec.events, [], 'nothing read before 1 s')
  r.clock.advance(1)
  await waitFor(() => r.delays.length === 2, 5000, 'the next poll scheduled')
  t.same(r.delays, [1000, 1000], 'and every second after it')
  t.same(
    rec.events.map(e => (e.data as { process_name: string }).process_name),
    ['victim'],
  )

  const direct = recordingTimers()
  const w = new OomWatcher({ kmsgPath: path, emit: rec.emit, pollMs: undefined, timers: direct.timers })
  await w.start()
  t.teardown(() => w.stop())
  t.same(direct.delays, [1000], 'OomWatcher itself ignores an undefined pollMs')
})

t.test(
  'kernel log follower on a FIFO (non-blocking reads like /dev/kmsg): only records written after start are followed',
  async t => {
    // A FIFO behaves like /dev/kmsg for a non-blocking reader (EAGAIN when empty, several records per
    // read) without writing fake lines into the machine's real kernel log.
    const dir = await tempDir(t)
    const path = join(dir, 'kmsg')
    execFileSync('mkfifo', [path])
    // O_RDWR opens a FIFO without waiting for a reader and keeps it from reporting end of file.
    const writer = await open(path, constants.O_RDWR | constants.O_NONBLOCK)
    t.teardown(() => writer.close())
    const record = (seq: number, name: string, facility = 0) =>
      `${facility * 8 + 4},${seq},${seq * 1000},-;Killed process 4242 (${name}) total-vm:1kB, anon-rss:8kB, file-rss:0kB, shmem-rss:0kB\n`
    await writer.write(record(1, 'before'))
    const rec = recorder()
    const w = new OomWatcher({ kmsgPath: path, emit: rec.emit, pollMs: 3_600_000 })
    t.same(await w.start(), { kmsgReadable: true })
    t.teardown(() => w.stop())
    await w.poll()
    t.same(rec.events, [], 'the backlog at start is skipped')
    await writer.write(record(2, 'user-written', 1) + record(3, 'after'))
    await w.poll()
    t.same(
      rec.events.map(e => (e.data as { process_name: string }).process_name),
      ['after'],
      'new kernel record followed, user-facility record ignored',
    )
  },
)

// The opt-in real OOM test only reads the kernel log (the kernel writes the report).
const kmsgReadable = await access('/dev/kmsg', constants.R_OK).then(
  () => true,
  () => false,
)
const realOom = process.env.BT_TEST_REAL_OOM === '1'
const memcgRoot = '/sys/fs/cgroup/memory'
const memcgV1 = await access(join(memcgRoot, 'memory.limit_in_bytes'), constants.W_OK).then(
  () => true,
  () => false,
)

t.test(
  'real memcg OOM kill (opt-in: BT_TEST_REAL_OOM=1, cgroup v1 memory controller, readable /dev/kmsg)',
  {
    skip: !realOom
      ? 'set BT_TEST_REAL_OOM=1 to run'
      : !memcgV1
        ? 'no writable cgroup v1 memory controller'
        : !kmsgReadable
          ? '/dev/kmsg not readable'
          : false,
  },
  async t => {
    const cg = join(memcgRoot, `bt-oom-test-${process.pid}`)
    await mkdir(cg)
    t.teardown(() => rmdir(cg).catch(() => undefined))
    await writeFile(join(cg, 'memory.limit_in_bytes'), String(32 * 1024 * 1024))
    const rec = recorder()
    const w = new OomWatcher({ emit: rec.emit, pollMs: 100 })
    t.same(await w.start(), { kmsgReadable: true })
    t.teardown(() => w.stop())
    // `tail /dev/zero` keeps one ever-growing line in memory: the classic OOM victim.
    const child = spawn('sh', ['-c', `echo $$ > ${cg}/cgroup.procs && exec tail /dev/zero`], { stdio: 'ignore' })
    const exit = await new Promise<{ code: number | null; signal: string | null }>(r =>
      child.once('exit', (code, signal) => r({ code, signal })),
    )
    t.same(exit, { code: null, signal: 'SIGKILL' }, 'the kernel killed it')
    await waitFor(() => rec.events.length > 0, 10_000, 'system_oom_kill')
    const data = rec.events[0]!.data as {
      pid: number
      process_name: string
      constraint: string
      mem_total_kb: number
      rss_kb: number
      trigger_process_name: string
      top_tasks: { pid: number }[]
    }
    t.equal(data.pid, child.pid)
    t.equal(data.process_name, 'tail')
    t.equal(data.constraint, 'memcg')
    t.equal(data.mem_total_kb, 32768)
    // Not a measurement of this machine: the kernel's own report of a process it killed at the
    // cgroup's 32 MiB, which holds most of that. Opt-in, so no suite run has a figure for it.
    t.ok(data.rss_kb > 16 * 1024, `rss ${data.rss_kb} kB`)
    t.equal(data.trigger_process_name, 'tail')
    t.equal(data.top_tasks[0]!.pid, child.pid)
  },
)
