// Shared bits of the monitor tests: a recording emit and a minimal console collector.
import type { Emit, EventInput, Pipeline } from '../../src/pipeline/pipeline.js'
import type { CaptureNeeds, Collector, TargetSession } from '../../src/monitor/index.js'

/** Wraps pipeline.emit (validation + gating stay real) and remembers every accepted input. */
export function recordingEmit(pipeline: Pipeline): {
  emit: Emit
  inputs: EventInput[]
  ofType: (type: string) => EventInput[]
} {
  const inputs: EventInput[] = []
  const emit: Emit = input => {
    const r = pipeline.emit(input)
    if (r) inputs.push(input)
    return r
  }
  return { emit, inputs, ofType: type => inputs.filter(i => i.type === type) }
}

/** Emits console_log for Runtime.consoleAPICalled with the session's context; counts attach/detach. */
export function consoleCollector(): Collector & { attached: TargetSession[]; detached: number } {
  const c = {
    name: 'test-console',
    // Placed as the console collector is: Runtime on every target, OOPIFs and workers auto-attached.
    capture: { category: 'console', targets: 'all', domains: ['Runtime'] } satisfies CaptureNeeds,
    attached: [] as TargetSession[],
    detached: 0,
    async attach(session: TargetSession, emit: Emit) {
      c.attached.push(session)
      const off = session.on('Runtime.consoleAPICalled', p => {
        emit({
          type: 'console_log',
          data: {
            ...session.context(),
            level: p.type,
            text: p.args.map(a => String(a.value ?? a.description ?? '')).join(' '),
            args: [],
          },
          source: { kind: 'cdp', event: 'Runtime.consoleAPICalled' },
        })
      })
      await session.send('Runtime.enable').catch(() => undefined)
      return () => {
        off()
        c.detached++
      }
    },
  }
  return c
}
