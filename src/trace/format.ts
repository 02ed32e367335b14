// The lines of a Playwright trace (format version 8) this export writes, and how the daemon's
// events become them. Pure. Version 8 is what Playwright 1.45 to 1.5x wrote and what every later
// viewer still reads (it modernizes older lines as it loads them), so one file opens in both.
import type { Envelope, EventOf, StackTrace } from '../events/index.js'

/** The trace format version written in `context-options` (see the file comment). */
export const TRACE_FORMAT_VERSION = 8

/** Milliseconds on the trace's one monotonic clock: 0 is `origin` (the first event of the window). */
export interface TraceClock {
  originUs: number
}
export const msOf = (clock: TraceClock, us: number): number => Math.round(us - clock.originUs) / 1000

/** One page per captured page target; the id is stable per target (and across exports). */
export function pageIdOf(targetId: string | undefined): string | undefined {
  return targetId === undefined ? undefined : `page@${targetId}`
}

export interface ContextOptionsLine {
  version: number
  type: 'context-options'
  origin: 'library'
  browserName: string
  platform: string
  wallTime: number
  monotonicTime: number
  title: string
  options: { viewport?: { width: number; height: number }; deviceScaleFactor?: number; isMobile?: boolean }
  sdkLanguage: 'javascript'
}

export interface ScreencastFrameLine {
  type: 'screencast-frame'
  pageId: string
  /** The resource's name under resources/ (version 8 calls it sha1; any unique name works). */
  sha1: string
  width: number
  height: number
  timestamp: number
}

export interface ConsoleLine {
  type: 'console'
  time: number
  pageId?: string
  messageType: string
  text: string
  location: { url: string; lineNumber: number; columnNumber: number }
}

export interface EventLine {
  type: 'event'
  time: number
  class: string
  method: string
  params: Record<string, unknown>
  pageId?: string
}

export interface BeforeLine {
  type: 'before'
  callId: string
  startTime: number
  title: string
  class: string
  method: string
  params: Record<string, unknown>
  pageId?: string
  parentId?: string
}
export interface AfterLine {
  type: 'after'
  callId: string
  endTime: number
  error?: { name: string; message: string }
}

/**
 * An action's screenshot for one phase ("Before", "After"): the trace viewer shows it where a DOM
 * snapshot would be. Here the recording frame on screen at that moment (the daemon records pixels,
 * not the DOM); `file` is the frame's path in the zip, as the film strip's.
 */
export interface ScreenshotLine {
  type: 'screenshot'
  callId: string
  phase: 'before' | 'after'
  pageId: string
  timestamp: number
  file: string
}

/** The screenshot line showing one film-strip frame for an action's phase. */
export function frameScreenshot(callId: string, phase: 'before' | 'after', frame: ScreencastFrameLine): ScreenshotLine {
  return {
    type: 'screenshot',
    callId,
    phase,
    pageId: frame.pageId,
    timestamp: frame.timestamp,
    file: `resources/${frame.sha1}`,
  }
}

/** Console levels as Playwright names them (CDP says warning; console.warn says warn). */
function messageType(level: string | undefined): string {
  if (level === 'warn') return 'warning'
  return level ?? 'log'
}

type ConsoleEvent = EventOf<'console_log'> | EventOf<'console_error'>

/** An uncaught exception (Runtime.exceptionThrown), not a console.error call. */
export function isUncaught(e: ConsoleEvent): boolean {
  return e.type === 'console_error' && (e.source.event === 'Runtime.exceptionThrown' || e.data.args === undefined)
}

/** Where a message came from: the top frame (its original position when a source map gave one). */
function locationOf(e: ConsoleEvent): ConsoleLine['location'] {
  const top = e.data.stack_trace?.callFrames[0]
  if (top?.original)
    return { url: top.original.source, lineNumber: top.original.line - 1, columnNumber: top.original.column - 1 }
  if (top) return { url: top.url, lineNumber: top.lineNumber, columnNumber: top.columnNumber }
  const d = e.data as { source_url?: string; line?: number; column?: number }
  return { url: d.source_url ?? '', lineNumber: d.line ?? 0, columnNumber: d.column ?? 0 }
}

/** A V8-style stack text (`    at fn (url:line:col)`, 1-based), mapped frames at their original place. */
export function stackText(stack: StackTrace | undefined): string {
  const lines: string[] = []
  for (let s: StackTrace | undefined = stack; s; s = s.parent) {
    if (s !== stack && s.description) lines.push(`    --- ${s.description} ---`)
    for (const f of s.callFrames) {
      const where = f.original
        ? `${f.original.source}:${f.original.line}:${f.original.column}`
        : `${f.url}:${f.lineNumber + 1}:${f.columnNumber + 1}`
      const name = f.original?.name ?? f.functionName
      lines.push(name ? `    at ${name} (${where})` : `    at ${where}`)
    }
  }
  return lines.join('\n')
}

/** A console message, or an uncaught exception as Playwright records it (a `pageError` event). */
export function consoleLineOf(clock: TraceClock, env: Envelope): ConsoleLine | EventLine | undefined {
  const e = env.event
  if (e.type !== 'console_log' && e.type !== 'console_error') return undefined
  const time = msOf(clock, e.ts)
  const pageId = pageIdOf(e.data.target_id)
  if (isUncaught(e)) {
    const [head, ...rest] = e.data.text.split('\n')
    const first = head!.replace(/^Uncaught (\(in promise\) )?/, '')
    const name = /^([A-Za-z_$][\w$]*):/.exec(first)?.[1] ?? 'Error'
    const message = first.startsWith(`${name}: `) ? first.slice(name.length + 2) : first
    // The captured frames (source-mapped when a map was known), else the stack lines of the text.
    const frames = stackText(e.data.stack_trace) || rest.filter(l => /^\s+at /.test(l)).join('\n')
    return {
      type: 'event',
      time,
      class: 'BrowserContext',
      method: 'pageError',
      params: { error: { error: { name, message, stack: `${name}: ${message}${frames ? '\n' + frames : ''}` } } },
      ...(pageId !== undefined ? { pageId } : {}),
    }
  }
  return {
    type: 'console',
    time,
    ...(pageId !== undefined ? { pageId } : {}),
    messageType: messageType(e.data.level),
    text: e.data.text,
    location: locationOf(e),
  }
}

/** Navigations, dialogs, downloads and crashes as timeline events of their page. */
export function pageEventOf(clock: TraceClock, env: Envelope): EventLine | undefined {
  const e = env.event
  const at = (cls: string, method: string, params: Record<string, unknown>, targetId: string | undefined) => {
    const pageId = pageIdOf(targetId)
    return {
      type: 'event' as const,
      time: msOf(clock, e.ts),
      class: cls,
      method,
      params,
      ...(pageId ? { pageId } : {}),
    }
  }
  switch (e.type) {
    case 'page_navigation':
      return at(
        'Frame',
        'navigated',
        {
          url: e.data.url ?? '',
          name: '',
          frameId: e.data.frame_id,
          mainFrame: e.data.parent_frame_id === undefined && e.data.target_type !== 'iframe',
        },
        e.data.target_id,
      )
    case 'page_dialog_opened':
      return at('Page', 'dialog', { type: e.data.dialog_type, message: e.data.message }, e.data.target_id)
    case 'page_dialog_closed':
      return at('Page', 'dialogClosed', { accepted: e.data.result }, e.data.target_id)
    case 'page_download_started':
      return at(
        'Page',
        'download',
        { url: e.data.url ?? '', suggestedFilename: e.data.suggested_filename },
        e.data.target_id,
      )
    case 'page_download_finished':
      return at('Page', 'downloadFinished', { state: e.data.state, totalBytes: e.data.total_bytes }, e.data.target_id)
    case 'page_crashed':
      return at(
        'Page',
        'crash',
        {
          ...(e.data.status ? { status: e.data.status } : {}),
          ...(e.data.error_code !== undefined ? { code: e.data.error_code } : {}),
        },
        e.data.target_id,
      )
    default:
      return undefined
  }
}
