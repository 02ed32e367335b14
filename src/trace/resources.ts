// trace.network: every HAR entry of the window (the same join and converter as the HAR export, src/har)
// as a `resource-snapshot` line on the trace clock, with its page; captured bodies live in
// resources/ under the sha1 of their UTF-8 bytes, so the same body is stored once.
import { createHash } from 'node:crypto'
import type { HarEntry } from '../har/index.js'
import { msOf, type TraceClock } from './format.js'

/** The resource name (under resources/) of a captured body. */
export function bodyName(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('hex')
}

export interface ResourceLine {
  type: 'resource-snapshot'
  snapshot: Record<string, unknown>
}

/**
 * One entry as Playwright records a request: the body moved to resources/, `pageref` the page of
 * its target, `_monotonicTime` its start on the trace clock, a failure as status -1 with its text.
 */
export function resourceLineOf(
  clock: TraceClock,
  entry: HarEntry,
  pageId: string | undefined,
  startUs: number,
): ResourceLine {
  const { pageref: _harPage, _seq: _s, ...rest } = entry
  const { text, ...content } = entry.response.content
  const failed = entry.response._error !== undefined
  const response = {
    ...entry.response,
    ...(failed && entry.response.status === 0 ? { status: -1, _failureText: entry.response._error } : {}),
    content: text !== undefined ? { ...content, _sha1: bodyName(text) } : content,
    _transferSize: -1,
  }
  return {
    type: 'resource-snapshot',
    snapshot: {
      ...rest,
      ...(pageId !== undefined ? { pageref: pageId } : {}),
      response,
      _monotonicTime: msOf(clock, startUs),
    },
  }
}
