// Performance traces on demand: one at a time, recorded by the browser (the recorder, a collector
// on the CDP connection) straight into the store as the gzip stream Chromium writes, capped in
// bytes. Telemetry capture goes on meanwhile: tracing is Chromium's own work, and the daemon only
// copies the stream's chunks to disk once the trace ends.
import { randomUUID } from 'node:crypto'
import { ServiceError } from '../errors.js'
import type { EventData } from '../events/index.js'
import type { Logger } from '../log.js'
import type { PerfTraceStore, StoredPerfTrace } from './trace-store.js'
import { maskingWriter, type TraceRedactor } from './trace-mask.js'

/**
 * What records a trace: Tracing.start with the categories (on the target's session, or the
 * browser's), the duration, Tracing.end, then the stream's chunks in order through `write`.
 * Resolves whether Chromium reported data loss; rejects when the browser refused or went away.
 */
export interface TraceRecorder {
  hasTarget(targetId: string): boolean
  record(opts: {
    durationMs: number
    targetId?: string
    categories: readonly string[]
    signal: AbortSignal
    write: (chunk: Buffer) => Promise<void>
  }): Promise<{ dataLoss: boolean }>
}

export type PerfTraceState = 'recording' | 'ready' | 'failed'

/** A trace as GET .../perf-traces lists it. */
export interface PerfTraceInfo extends Partial<StoredPerfTrace> {
  trace_id: string
  state: PerfTraceState
  started_at: string
  duration_ms: number
  categories: string[]
  /** Why a failed trace failed. */
  error?: { code: string; message: string }
}

export interface PerfTraceRequest {
  durationMs: number
  targetId?: string
  categories?: readonly string[]
}

/** The DevTools Performance panel's categories, without its screenshots (the recording has those). */
export const DEFAULT_TRACE_CATEGORIES: readonly string[] = [
  '-*',
  'blink.console',
  'blink.user_timing',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'disabled-by-default-devtools.timeline.frame',
  'disabled-by-default-devtools.timeline.stack',
  'disabled-by-default-v8.cpu_profiler',
  'latencyInfo',
  'loading',
  'toplevel',
  'v8.execute',
  'v8',
]

export interface PerfTracesOptions {
  store: PerfTraceStore
  /** Absent when the daemon has no browser: starting a trace answers 503. */
  recorder?: TraceRecorder
  /** Largest trace file; a trace that grows past it fails as too large and is not kept. */
  maxTraceBytes: number
  /** Masks the trace's URLs and secret-named fields as it is written (the pipeline's policy). */
  redactor: TraceRedactor
  /** Stores perf_trace_recorded (through the pipeline). */
  report: (data: EventData<'perf_trace_recorded'>) => void
  logger: Logger
  now?: () => number
}

/** Failed traces answered on GET for a while, then forgotten. */
const FAILED_KEPT = 10

export class PerfTraces {
  private current: { info: PerfTraceInfo; abort: AbortController; done: Promise<void> } | undefined
  private readonly failed: PerfTraceInfo[] = []
  private readonly now: () => number

  constructor(private readonly opts: PerfTracesOptions) {
    this.now = opts.now ?? Date.now
  }

  /** Starts a trace; throws 409 while one runs, 404 for an unknown target, 503 without a browser. */
  start(req: PerfTraceRequest): PerfTraceInfo {
    const recorder = this.opts.recorder
    if (!recorder) throw new ServiceError(503, 'unavailable', 'performance traces need a browser (the daemon has none)')
    if (this.current)
      throw new ServiceError(
        409,
        'conflict',
        `a performance trace is already recording (${this.current.info.trace_id}); one runs at a time`,
      )
    if (req.targetId !== undefined && !recorder.hasTarget(req.targetId))
      throw new ServiceError(404, 'not_found', `target ${JSON.stringify(req.targetId)} is not an attached page`)
    const info: PerfTraceInfo = {
      trace_id: randomUUID(),
      state: 'recording',
      started_at: new Date(this.now()).toISOString(),
      duration_ms: req.durationMs,
      ...(req.targetId !== undefined ? { target_id: req.targetId } : {}),
      categories: [...(req.categories ?? DEFAULT_TRACE_CATEGORIES)],
    }
    const abort = new AbortController()
    // The trace is no longer current before its event is stored: whoever reads the event sees it ended.
    const done = this.run(recorder, info, abort.signal).then(event => {
      this.current = undefined
      this.opts.report(event)
    })
    this.current = { info, abort, done }
    return { ...info }
  }

  get(id: string): PerfTraceInfo | undefined {
    if (this.current?.info.trace_id === id) return { ...this.current.info }
    const stored = this.opts.store.get(id)
    if (stored) return { ...stored, state: 'ready' }
    return this.failed.find(f => f.trace_id === id)
  }

  /** Stored traces oldest first, then recent failures, then the one recording. */
  list(): PerfTraceInfo[] {
    const rows: PerfTraceInfo[] = this.opts.store.list().map(t => ({ ...t, state: 'ready' as const }))
    rows.push(...this.failed)
    if (this.current) rows.push({ ...this.current.info })
    return rows
  }

  /** The kept traces, oldest first (the bundle's perf-traces/). */
  stored(): StoredPerfTrace[] {
    return this.opts.store.list()
  }

  open(id: string) {
    return this.opts.store.open(id)
  }

  /** Ends the running trace (shutdown): it fails as `shutdown`, nothing half-written is kept. */
  async stop(): Promise<void> {
    const running = this.current
    if (!running) return
    running.abort.abort()
    await running.done
  }

  /** Records into the store; never rejects: a failure is kept for GET. Returns the event to store. */
  private async run(
    recorder: TraceRecorder,
    info: PerfTraceInfo,
    signal: AbortSignal,
  ): Promise<EventData<'perf_trace_recorded'>> {
    const writer = this.opts.store.writer(info.trace_id)
    const cap = this.opts.maxTraceBytes
    let tooLarge = false
    const overCap = () => {
      tooLarge = true
      return new Error('over the byte cap')
    }
    // Masked on the way to disk: the file never holds what the event log would not.
    const masking = maskingWriter(this.opts.redactor, async chunk => {
      if (writer.bytes + chunk.length > cap) throw overCap()
      await writer.write(chunk)
    })
    let read = 0
    try {
      const { dataLoss } = await recorder.record({
        durationMs: info.duration_ms,
        targetId: info.target_id,
        categories: info.categories,
        signal,
        write: async chunk => {
          read += chunk.length
          if (read > cap) throw overCap()
          await masking.write(chunk)
        },
      })
      await masking.end()
      const stored = await writer.commit({
        trace_id: info.trace_id,
        started_at: info.started_at,
        ended_at: new Date(this.now()).toISOString(),
        duration_ms: info.duration_ms,
        ...(info.target_id !== undefined ? { target_id: info.target_id } : {}),
        categories: info.categories,
        data_loss: dataLoss,
      })
      return {
        trace_id: stored.trace_id,
        outcome: 'recorded',
        duration_ms: stored.duration_ms,
        bytes: stored.bytes,
        data_loss: stored.data_loss,
        categories: stored.categories,
        ...(stored.target_id !== undefined ? { target_id: stored.target_id } : {}),
      }
    } catch (err) {
      masking.destroy()
      await writer.discard().catch(() => undefined)
      const error = tooLarge
        ? { code: 'payload_too_large', message: `the trace grew past --perf-trace-max-bytes (${cap} bytes)` }
        : signal.aborted
          ? { code: 'shutdown', message: 'the daemon stopped while the trace was recording' }
          : { code: 'trace_failed', message: (err as Error).message }
      this.opts.logger.warn({ trace_id: info.trace_id, error }, 'performance trace failed')
      this.failed.push({ ...info, state: 'failed', ended_at: new Date(this.now()).toISOString(), error })
      if (this.failed.length > FAILED_KEPT) this.failed.shift()
      return {
        trace_id: info.trace_id,
        outcome: 'failed',
        duration_ms: info.duration_ms,
        bytes: 0,
        data_loss: false,
        categories: info.categories,
        ...(info.target_id !== undefined ? { target_id: info.target_id } : {}),
        error_message: error.message,
      }
    }
  }
}
