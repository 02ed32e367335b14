// A fake TargetSession for narrow collector unit tests (real-Chromium tests cover the real one):
// answers commands through `respond`, records what was sent, and fires events by hand. A top-level
// Page.frameNavigated bumps nav_seq first, as the monitor's bookkeeping does.
import type { Context, TargetType } from '../../src/events/index.js'
import type { TargetSession } from '../../src/monitor/types.js'

export function fakeSession(
  targetType: TargetType = 'page',
  respond: (method: string, params: unknown) => Promise<unknown> = () => Promise.resolve({}),
  id = 'T1',
) {
  const handlers = new Map<string, Set<(p: unknown) => void>>()
  const abort = new AbortController()
  const sessionId = id === 'T1' ? 'S1' : `S-${id}`
  const ctx: Context = {
    session_id: sessionId,
    target_id: id,
    target_type: targetType,
    url: 'http://x/',
    frame_id: id,
    loader_id: 'L1',
  }
  if (targetType === 'page') ctx.nav_seq = 0
  const sent: string[] = []
  const session = {
    sessionId,
    targetId: id,
    targetType,
    signal: abort.signal,
    context: () => ({ ...ctx }),
    send: (method: string, params?: unknown) => {
      sent.push(method)
      return respond(method, params)
    },
    sendMayFail: (method: string, params?: unknown) => {
      sent.push(method)
      return respond(method, params).catch(() => undefined)
    },
    on: (event: string, h: (p: unknown) => void) => {
      let s = handlers.get(event)
      if (!s) handlers.set(event, (s = new Set()))
      s.add(h)
      return () => {
        s!.delete(h)
      }
    },
  } as unknown as TargetSession
  const fire = (event: string, params: unknown = {}) => {
    if (
      event === 'Page.frameNavigated' &&
      !(params as { frame: { parentId?: string } }).frame.parentId &&
      ctx.nav_seq !== undefined
    )
      ctx.nav_seq++
    for (const h of handlers.get(event) ?? []) h(params)
  }
  const listeners = () => [...handlers.values()].reduce((n, s) => n + s.size, 0)
  return { session, fire, abort, sent, listeners, ctx }
}
