// Collector tests end to end: real Chromium + Monitor + Pipeline + EventLog. Records every accepted
// event with the moment it was emitted, and hands out the monitor's target sessions to drive pages.
import type { Test } from 'tap'
import { startBrowser } from './browser.js'
import { waitFor } from './http.js'
import { openStore } from './store.js'
import { Monitor, type CaptureSource, type Collector, type TargetSession } from '../../src/monitor/index.js'
import type { Emit, EventInput } from '../../src/pipeline/pipeline.js'
import type { Logger } from '../../src/log.js'
import type { Envelope, EventType, EventData } from '../../src/events/index.js'

export type Recorded<T extends EventType = EventType> = {
  type: T
  data: EventData<T>
  source?: EventInput['source']
  truncated?: boolean
  seq: number
  at: number
}

export interface HarnessOptions {
  extraArgs?: string[]
  startUrl?: string
  beforeMonitor?: (httpUrl: string) => Promise<void>
  logger?: Logger
  /** The monitor's capture plan (default: every capture category, default body cap). */
  capture?: CaptureSource
  /** The monitor's bound on a target's setup (default 5 s). */
  attachTimeoutMs?: number
}

export async function startCollecting(t: Test, collectors: Collector[], opts: HarnessOptions = {}) {
  const browser = await startBrowser(t, { extraArgs: opts.extraArgs, startUrl: opts.startUrl })
  await opts.beforeMonitor?.(browser.httpUrl)
  const { log, pipeline } = await openStore(t)
  const events: Recorded[] = []
  const emit: Emit = input => {
    const r = pipeline.emit(input)
    if (r.accepted !== undefined) events.push({ ...input, seq: r.envelope.seq, at: performance.now() } as Recorded)
    return r
  }
  const sessions: TargetSession[] = []
  const probe: Collector = {
    name: 'test-probe',
    attach(s) {
      sessions.push(s)
      return () => undefined
    },
  }
  const monitor = new Monitor({
    cdpUrl: browser.wsUrl,
    emit,
    collectors: [...collectors, probe],
    logger: opts.logger,
    capture: opts.capture,
    attachTimeoutMs: opts.attachTimeoutMs,
  })
  t.teardown(() => monitor.stop())
  await monitor.start()

  const ofType = <T extends EventType>(type: T, pred: (e: Recorded<T>) => unknown = () => true): Recorded<T>[] =>
    events.filter(e => e.type === type && pred(e as Recorded<T>)) as Recorded<T>[]
  const forTarget = (s: TargetSession) => (e: Recorded) => (e.data as { target_id?: string }).target_id === s.targetId

  return {
    browser,
    log,
    pipeline,
    monitor,
    events,
    sessions,
    ofType,
    forTarget,
    /** Resolves with the first recorded event of type matching pred. */
    waitEvent<T extends EventType>(
      type: T,
      pred: (e: Recorded<T>) => unknown = () => true,
      ms = 10000,
    ): Promise<Recorded<T>> {
      return waitFor(() => ofType(type, pred)[0], ms, type)
    },
    /** The tab that existed at startup. */
    firstPage(): TargetSession {
      const p = sessions.find(s => s.targetType === 'page')
      if (!p) throw new Error('no page target attached')
      return p
    },
    /** Opens a tab through the DevTools HTTP endpoint and returns its session once attached. */
    async openTab(url = 'about:blank'): Promise<TargetSession> {
      const res = await fetch(`${browser.httpUrl}/json/new?${url}`, { method: 'PUT' })
      const { id } = (await res.json()) as { id: string }
      return waitFor(() => sessions.find(s => s.targetId === id), 10000, `tab ${id} attached`)
    },
    /** Navigates and waits for the navigation's page_load (of that nav_seq). */
    async navigate(s: TargetSession, url: string): Promise<number> {
      const before = s.context().nav_seq ?? 0
      await s.send('Page.navigate', { url })
      await waitFor(
        () =>
          (s.context().nav_seq ?? 0) > before &&
          ofType('page_load', e => forTarget(s)(e) && (e.data.nav_seq ?? 0) > before)[0],
        10000,
        `load of ${url}`,
      )
      return s.context().nav_seq ?? 0
    },
    async evaluate(s: TargetSession, expression: string): Promise<unknown> {
      const r = await s.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true })
      return r.result.value
    },
    /** Every envelope committed to the log, parsed. */
    async stored(): Promise<Envelope[]> {
      await log.flush()
      const out: Envelope[] = []
      let cursor: number | undefined
      for (;;) {
        const page = await log.read({ order: 'asc', limit: 1000, cursor })
        for (const r of page.records) out.push(JSON.parse(r.json) as Envelope)
        if (!page.hasMore || !page.nextCursor) break
        cursor = page.nextCursor
      }
      return out
    },
  }
}
