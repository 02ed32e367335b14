// Performance traces on demand (not a category: the file goes to the perf trace store, a
// perf_trace_recorded event names it). Tracing.start with ReturnAsStream and gzip, so Chromium
// compresses and the daemon only copies chunks: nothing crosses the CDP socket while the trace
// runs, and capture goes on as before. A trace for one target runs on that page's session (as the
// DevTools Performance panel does), else on the browser's.
import type { Protocol } from 'devtools-protocol'
import type { BrowserScope, Collector, Detach, TargetSession } from '../src/collector-kit.js'
import { withTimeout } from '../src/collector-kit.js'

/** IO.read step: Chromium answers at most this many bytes (base64 in the message). */
const READ_BYTES = 1024 * 1024
/** Tracing.end → tracingComplete: Chromium flushes every process's buffer first. */
const COMPLETE_TIMEOUT_MS = 30_000

export interface TraceRecordOptions {
  durationMs: number
  targetId?: string
  categories: readonly string[]
  signal: AbortSignal
  write: (chunk: Buffer) => Promise<void>
}

export interface PerfTraceCollector extends Collector {
  hasTarget(targetId: string): boolean
  record(opts: TraceRecordOptions): Promise<{ dataLoss: boolean }>
}

export function createPerfTraceCollector(): PerfTraceCollector {
  let browser: BrowserScope | undefined
  const pages = new Map<string, TargetSession>()

  return {
    name: 'perf-trace',
    attach(session): Detach {
      if (session.targetType !== 'page') return () => {}
      pages.set(session.targetId, session)
      return () => {
        if (pages.get(session.targetId) === session) pages.delete(session.targetId)
      }
    },
    attachBrowser(scope): Detach {
      browser = scope
      return () => {
        if (browser === scope) browser = undefined
      }
    },
    hasTarget: targetId => pages.has(targetId),
    async record(opts) {
      const session: BrowserScope | undefined = opts.targetId !== undefined ? pages.get(opts.targetId) : browser
      if (!session)
        throw new Error(opts.targetId !== undefined ? 'the target went away' : 'the browser is not connected')
      return await traceOn(session, opts)
    },
  }
}

async function traceOn(session: BrowserScope, opts: TraceRecordOptions): Promise<{ dataLoss: boolean }> {
  let onComplete: (e: Protocol.Tracing.TracingCompleteEvent) => void = () => {}
  const complete = new Promise<Protocol.Tracing.TracingCompleteEvent>(resolve => (onComplete = resolve))
  const off = session.on('Tracing.tracingComplete', e => onComplete(e))
  let stream: string | undefined
  try {
    await session.send('Tracing.start', {
      transferMode: 'ReturnAsStream',
      streamFormat: 'json',
      streamCompression: 'gzip',
      traceConfig: { includedCategories: [...opts.categories] },
    })
    await sleep(opts.durationMs, opts.signal, session.signal)
    await session.send('Tracing.end')
    const done = await withTimeout(complete, COMPLETE_TIMEOUT_MS)
    stream = done.stream
    if (!stream) throw new Error('Chromium returned no trace stream')
    if (opts.signal.aborted) throw new Error('stopped')
    for (;;) {
      const chunk = await session.send('IO.read', { handle: stream, size: READ_BYTES })
      if (chunk.data.length > 0) await opts.write(Buffer.from(chunk.data, chunk.base64Encoded ? 'base64' : 'utf8'))
      if (chunk.eof) break
      if (opts.signal.aborted) throw new Error('stopped')
    }
    return { dataLoss: done.dataLossOccurred }
  } catch (err) {
    // Whatever failed, the browser must not keep tracing (it allows one trace at a time).
    if (!stream) void session.sendMayFail('Tracing.end')
    throw err
  } finally {
    off()
    if (stream) void session.sendMayFail('IO.close', { handle: stream })
  }
}

/** Waits `ms`, or less when the trace is stopped or the session goes away (then rejects). */
function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer)
      reject(new Error(signals[1]?.aborted ? 'the target went away' : 'stopped'))
    }
    const timer = setTimeout(() => {
      for (const s of signals) s.removeEventListener('abort', stop)
      resolve()
    }, ms)
    for (const s of signals) {
      if (s.aborted) return stop()
      s.addEventListener('abort', stop, { once: true })
    }
  })
}
