// Console collector: Runtime.consoleAPICalled -> console_log / console_error, Runtime.exceptionThrown
// -> console_error. Context is stamped from the session at the moment the CDP event arrives.
//
// Stacks of errors, warnings, traces and asserts are mapped through the source maps known now
// (from memory, before emit) and their scripts handed to the source maps to learn in the
// background; nothing waits for a map. An error with a `cause` waits for one CDP call (at most
// CAUSE_TIMEOUT_MS) so its causes are in the stored event; the session's later console events wait
// behind it, so they are emitted in the order Chromium reported them.
import type { Protocol } from 'devtools-protocol'
import {
  Bounds,
  Disposer,
  isMappable,
  type Collector,
  type Detach,
  type Emit,
  type EventData,
  type EventInput,
  type SourceMaps,
  type StackTrace,
  type TargetSession,
  type CaptureNeeds,
} from '../src/collector-kit.js'
import {
  errorLikeTitle,
  isErrorLike,
  mayHaveCause,
  parseV8Stack,
  readError,
  ScriptIds,
  withCauses,
} from './console-cause.js'
import { cutChars, errorMessage, exceptionText, renderArgs, stackTraceOf } from './console-format.js'
import { browserLoader } from './sourcemap-loader.js'

export interface ConsoleCollectorOptions {
  /** The envelope cap arguments are cut to (default: the default bounds). */
  bounds?: Bounds
  /** The daemon's source maps, told which scripts to learn (readers map stacks; they are stored as Chromium sent them). */
  sourceMaps?: Pick<SourceMaps, 'want'>
}

/** Events of one session waiting behind an unfinished cause read at most; past it, no more reads. */
const MAX_WAITING = 256

type Console = EventInput & { type: 'console_log' | 'console_error' }

/** Console messages and exceptions from every target that runs script. */
export const CONSOLE_CAPTURE: CaptureNeeds = { category: 'console', targets: 'all', domains: ['Runtime'] }

export function createConsoleCollector(opts: ConsoleCollectorOptions = {}): Collector {
  const { maxEnvelopeBytes } = opts.bounds ?? new Bounds()
  const maps = opts.sourceMaps
  return {
    name: 'console',
    capture: CONSOLE_CAPTURE,
    attach(session: TargetSession, emit: Emit): Detach {
      const listeners = new Disposer()
      const loader = maps ? browserLoader(session) : undefined
      // Frames read from stack text get their script's id from the frames Chromium sent.
      const scripts = new ScriptIds()
      // Events in arrival order; a promise is one whose causes are being read.
      const waiting: (Console | Promise<Console>)[] = []
      const deliver = (e: Console) => {
        const data = e.data as { level?: unknown; stack_trace?: StackTrace }
        const stack = data.stack_trace
        emit(e)
        if (!maps || !stack || !isMappable(e.type, data)) return
        const ctx = session.context()
        maps.want(stack, { url: ctx.url, context: ctx }, loader)
      }
      const flush = async () => {
        while (waiting.length > 0) {
          deliver(await waiting[0]!)
          void waiting.shift()
        }
      }
      const push: Push = (e, read) => {
        if (waiting.length === 0 && !read) return deliver(e)
        const item =
          read && waiting.length < MAX_WAITING
            ? readError(session, read.obj, read.own !== undefined, scripts).then(
                r => {
                  const data = e.data as { stack_trace?: StackTrace }
                  let stack = data.stack_trace
                  let causesAt = read.causesAt
                  const own = read.own && r.stack ? loggedError(r.stack, read.own, scripts) : undefined
                  if (own) [stack, causesAt] = [own, 1]
                  stack = withCauses(stack, r.causes, causesAt)
                  if (stack) data.stack_trace = stack
                  return e
                },
                () => e,
              )
            : e
        waiting.push(item)
        if (waiting.length === 1) void flush()
      }
      listeners.add(
        session.on('Runtime.consoleAPICalled', p => onConsoleCall(session, push, p, maxEnvelopeBytes, scripts)),
      )
      listeners.add(
        session.on('Runtime.exceptionThrown', p => onException(session, push, p, maxEnvelopeBytes, scripts)),
      )
      return () => listeners.dispose()
    },
  }
}

/** What one call reads of the logged or thrown value: its causes, and for an error-like object its stack. */
interface ErrorRead {
  obj: Protocol.Runtime.RemoteObject
  /** Causes go after this many entries (default: after the last). */
  causesAt?: number
  /** Set: the value's own stack is read too, and comes first (see loggedError). */
  own?: ConsoleCall
}
type Push = (e: Console, read?: ErrorRead) => void

/** A console call with an error argument: the call site, the method and the title of the error. */
interface ConsoleCall {
  callSite: StackTrace | undefined
  method: string
  title?: string
}

/**
 * The stack of a logged error: where it was made comes first (what a reader asks of a
 * `catch (e) { console.error(e) }`), then the console call site as the next entry (`console.error`).
 * Its frames are parsed from the error's own stack text (an Error's description, as Chromium sends
 * it; an error-like object's `stack`, read in the page). Undefined when the text has no frames.
 */
function loggedError(text: string, call: ConsoleCall, scripts: ScriptIds): StackTrace | undefined {
  const frames = parseV8Stack(text, scripts)
  if (frames.length === 0) return undefined
  const own: StackTrace = { description: call.title ?? errorMessage(text).split('\n')[0]!, callFrames: frames }
  if (call.callSite) own.parent = { ...call.callSite, description: `console.${call.method}` }
  return own
}

function onConsoleCall(
  session: TargetSession,
  push: Push,
  p: Protocol.Runtime.ConsoleAPICalledEvent,
  maxEnvelopeBytes: number,
  scripts: ScriptIds,
): void {
  const ctx = session.context()
  const { args, cut } = renderArgs(p.args, maxEnvelopeBytes)
  const text = args[0] ?? ''
  const callSite = stackTraceOf(p.stackTrace)
  scripts.learn(callSite)
  const source = { kind: 'cdp' as const, event: 'Runtime.consoleAPICalled' }
  const truncated = cut || undefined
  // The first error argument (console.error(err), console.warn(err)): its own stack and its causes;
  // else the first error-like object, whose stack takes one call to read.
  const withStack = p.type === 'error' || isMappable('console_log', { level: p.type, stack_trace: callSite })
  const err = p.args.find(a => a.subtype === 'error')
  const errorLike = withStack && !err ? p.args.find(isErrorLike) : undefined
  const call: ConsoleCall = { callSite, method: p.type }
  const own = withStack && err?.description ? loggedError(err.description, call, scripts) : undefined
  const stack = own ?? callSite
  let read: ErrorRead | undefined
  if (errorLike) {
    const title = errorLikeTitle(errorLike)
    read = { obj: errorLike, own: title ? { ...call, title } : call }
  } else if (withStack && mayHaveCause(err)) {
    // The causes follow the error they belong to, ahead of the console call site.
    read = { obj: err, causesAt: own ? 1 : undefined }
  }
  // Built on the fresh context object (types.ts: no spread); field order as before.
  if (p.type === 'error') {
    const data: EventData<'console_error'> = Object.assign(ctx, { text, level: 'error' as const, args })
    if (stack) data.stack_trace = stack
    push({ type: 'console_error', data, source, truncated }, read)
  } else {
    const data: EventData<'console_log'> = Object.assign(ctx, { level: p.type, text, args })
    if (stack) data.stack_trace = stack
    push({ type: 'console_log', data, source, truncated }, read)
  }
}

function onException(
  session: TargetSession,
  push: Push,
  p: Protocol.Runtime.ExceptionThrownEvent,
  maxEnvelopeBytes: number,
  scripts: ScriptIds,
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
  scripts.learn(stack)
  if (stack) data.stack_trace = stack
  push(
    {
      type: 'console_error',
      data,
      source: { kind: 'cdp', event: 'Runtime.exceptionThrown' },
      truncated: data.text !== text || undefined,
    },
    mayHaveCause(d.exception) ? { obj: d.exception } : undefined,
  )
}
