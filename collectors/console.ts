// Console collector: Runtime.consoleAPICalled -> console_log / console_error, Runtime.exceptionThrown
// -> console_error. Context is stamped from the session at the moment the CDP event arrives.
import type { Protocol } from 'devtools-protocol'
import {
  Bounds,
  Disposer,
  type Collector,
  type Detach,
  type Emit,
  type EventData,
  type TargetSession,
} from '../src/collector-kit.js'
import { cutChars, exceptionText, renderArgs, stackTraceOf } from './console-format.js'

export interface ConsoleCollectorOptions {
  /** The envelope cap arguments are cut to (default: the default bounds). */
  bounds?: Bounds
}

export function createConsoleCollector(opts: ConsoleCollectorOptions = {}): Collector {
  const { maxEnvelopeBytes } = opts.bounds ?? new Bounds()
  return {
    name: 'console',
    // Runtime is enabled by the monitor's capture plan.
    category: 'console',
    attach(session: TargetSession, emit: Emit): Detach {
      const listeners = new Disposer()
      listeners.add(session.on('Runtime.consoleAPICalled', p => onConsoleCall(session, emit, p, maxEnvelopeBytes)))
      listeners.add(session.on('Runtime.exceptionThrown', p => onException(session, emit, p, maxEnvelopeBytes)))
      return () => listeners.dispose()
    },
  }
}

function onConsoleCall(
  session: TargetSession,
  emit: Emit,
  p: Protocol.Runtime.ConsoleAPICalledEvent,
  maxEnvelopeBytes: number,
): void {
  const ctx = session.context()
  const { args, cut } = renderArgs(p.args, maxEnvelopeBytes)
  const text = args[0] ?? ''
  const stack = stackTraceOf(p.stackTrace)
  const source = { kind: 'cdp' as const, event: 'Runtime.consoleAPICalled' }
  const truncated = cut || undefined
  // Built on the fresh context object (types.ts: no spread); field order as before.
  if (p.type === 'error') {
    const data: EventData<'console_error'> = Object.assign(ctx, { text, level: 'error' as const, args })
    if (stack) data.stack_trace = stack
    emit({ type: 'console_error', data, source, truncated })
  } else {
    const data: EventData<'console_log'> = Object.assign(ctx, { level: p.type, text, args })
    if (stack) data.stack_trace = stack
    emit({ type: 'console_log', data, source, truncated })
  }
}

function onException(
  session: TargetSession,
  emit: Emit,
  p: Protocol.Runtime.ExceptionThrownEvent,
  maxEnvelopeBytes: number,
): void {
  const d = p.exceptionDetails
  const text = exceptionText(d)
  const data: EventData<'console_error'> = Object.assign(session.context(), {
    text: cutChars(text, maxEnvelopeBytes),
    line: d.lineNumber,
    column: d.columnNumber,
  })
  // exceptionDetails.url is missing for some origins (eval, promise jobs); the top frame knows it.
  const sourceUrl = d.url || d.stackTrace?.callFrames[0]?.url
  if (sourceUrl) data.source_url = sourceUrl
  const stack = stackTraceOf(d.stackTrace)
  if (stack) data.stack_trace = stack
  emit({
    type: 'console_error',
    data,
    source: { kind: 'cdp', event: 'Runtime.exceptionThrown' },
    truncated: data.text !== text || undefined,
  })
}
