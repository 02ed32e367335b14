// Reading a raw CDP message's session without parsing it (the proxy's command log and the
// monitor's intake both decide per session on bytes they may never parse).

/** The key Chromium writes before a flattened session's id. */
export const SESSION_KEY = Buffer.from('"sessionId":"')

/**
 * Chromium appends a flattened session's id last: `,"sessionId":"<id>"}`. Only that exact ending
 * counts (a result may hold a sessionId of its own, as Target.attachToTarget's does, one `}` deeper).
 */
export function sessionIdAtEnd(data: Buffer): string | undefined {
  const last = data.length - 1
  if (data[last] !== 0x7d || data[last - 1] !== 0x22) return undefined
  const from = Math.max(0, data.length - 96)
  const at = data.subarray(from).lastIndexOf(SESSION_KEY)
  if (at === -1 || data[from + at - 1] !== 0x2c) return undefined
  const start = from + at + SESSION_KEY.length
  const end = data.indexOf(0x22, start)
  return end === last - 1 ? data.toString('latin1', start, end) : undefined
}
