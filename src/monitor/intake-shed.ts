// Shedding before parsing: while the CDP client's backlog is over its bound, a console message is
// accounted for from its raw bytes (session and console type) and dropped unparsed when its page is
// loud, so the socket is read on and a new tab's attach never waits behind a flood.
import { sessionIdAtEnd } from '../util/cdp-frame.js'
import type { EmitUnbuilt } from '../pipeline/pipeline.js'
import type { CdpSessionCore } from './cdp-session.js'

/** How Chromium starts a console.error message: the call's type comes first in its params. */
const CONSOLE_ERROR_PREFIX = Buffer.from('{"method":"Runtime.consoleAPICalled","params":{"type":"error"')

/** The event the console collector makes of a raw console message (console.error: console_error). */
export function consoleEventType(frame: Buffer): 'console_log' | 'console_error' {
  return frame.subarray(0, CONSOLE_ERROR_PREFIX.length).equals(CONSOLE_ERROR_PREFIX) ? 'console_error' : 'console_log'
}

/** The CDP client's shed callback over the connection's attached targets (by session id): true when emit() dropped it. */
export function consoleShedder(
  sessions: ReadonlyMap<string, CdpSessionCore & { readonly targetId: string }>,
  emit: EmitUnbuilt,
): (frame: Buffer) => boolean {
  return frame => {
    const sessionId = sessionIdAtEnd(frame)
    const target = sessionId === undefined ? undefined : sessions.get(sessionId)
    // Only what the console collector would have made an event of (it listens on this target).
    if (target === undefined || !target.listens('Runtime.consoleAPICalled')) return false
    return emit({ type: consoleEventType(frame), target_id: target.targetId, unbuilt: true }).dropped !== undefined
  }
}
