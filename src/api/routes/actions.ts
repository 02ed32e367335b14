// GET /browsers/{id}/telemetry/actions: the agent's actions (src/actions) of a time window, paged.
// The window is read from the log (only the categories actions look at, a page at a time, each
// envelope reduced to a small record as it is read), derived once per request, then cut into pages
// by start time: X-Next-Offset is the start (Unix µs) of the next page's first action.
import { Type } from '@sinclair/typebox'
import { ACTION_CATEGORIES, ActionBuilder, type Action } from '../../actions/index.js'
import type { Category, Envelope } from '../../events/index.js'
import type { ReadQuery } from '../../store/event-log.js'
import { ApiError } from '../errors.js'
import type { ApiRouter } from '../route-table.js'
import { ActionSchema } from '../schemas.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'
import type { EventReader } from '../../sse/telemetry-source.js'
import { lowerBound } from '../../util/lower-bound.js'
import { forEachWindowPage } from '../window-pages.js'

export interface ActionRouteDeps {
  /** The browser's events (the daemon's log). */
  reader: EventReader
  /** Records (commands and page reports) one derivation may hold; past it the answer is a 400. */
  maxRecords?: number
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export const DEFAULT_ACTIONS_LIMIT = 100
export const MAX_ACTIONS_LIMIT = 1000
/**
 * About 50 MB of records at most (~250 bytes each, bench/actions.ts): some 3 hours of a busy agent
 * (a 30-minute session of 10,000 commands keeps ~35,000). Past it the answer is: narrow the window.
 */
export const DEFAULT_MAX_ACTION_RECORDS = 200_000
const READ_PAGE = { limit: 1000, maxBytes: 4 * 1024 * 1024 }

export const ACTIONS_QUERY = {
  since: EVENTS_QUERY.since,
  until: EVENTS_QUERY.until,
  limit: {
    schema: Type.Integer({ minimum: 1, maximum: MAX_ACTIONS_LIMIT, default: DEFAULT_ACTIONS_LIMIT }),
    description: 'Actions per page',
  },
  offset: {
    schema: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    description:
      'The X-Next-Offset of the previous page (the start, in Unix µs, of its next action). The window is still since..until: send the same since and until (an RFC-3339 since keeps the window fixed between pages).',
  },
}

export function registerActionRoutes(router: ApiRouter, deps: ActionRouteDeps): void {
  const now = deps.now ?? (() => Date.now() * 1000)
  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/actions',
    operationId: 'readBrowserTelemetryActions',
    summary: "Read a page of the agent's actions",
    description:
      'Actions (navigate, click, type, press, scroll, evaluate, screenshot, setup, other) derived from the cdp_command events of the window ' +
      'with what the page reported and the effects on their target; ordered by start. Pages forward with X-Next-Offset as offset while ' +
      'X-Has-More is true; several actions that start in the same microsecond are never split across pages.',
    scope: 'read',
    skipApiCall: true,
    query: ACTIONS_QUERY,
    responses: {
      200: {
        description: 'A page of actions, oldest start first',
        schema: Type.Array(ActionSchema),
        headers: {
          'X-Has-More': {
            schema: Type.Union([Type.Literal('true'), Type.Literal('false')]),
            description: 'Whether more actions follow in the window',
          },
          'X-Next-Offset': {
            schema: Type.Integer({ minimum: 0 }),
            description: 'Offset of the next page (the start of its first action, Unix µs); 0 when there are no more',
          },
        },
      },
    },
    handler: async ctx => {
      const q = ctx.state.query!
      const window = readQueryOf({ since: q.since, until: q.until, order: 'asc', limit: 1 }, now())
      const actions = await windowActions(deps.reader, window, deps.maxRecords ?? DEFAULT_MAX_ACTION_RECORDS)
      const page = pageOf(actions, typeof q.offset === 'number' ? q.offset : 0, q.limit as number)
      ctx.set('X-Has-More', page.next > 0 ? 'true' : 'false')
      ctx.set('X-Next-Offset', String(page.next))
      ctx.body = page.actions
    },
  })
}

/** Reads [sinceUs, untilUs) of the reader's categories actions look at and derives the actions. */
export async function windowActions(reader: EventReader, window: ReadQuery, maxRecords: number): Promise<Action[]> {
  const builder = new ActionBuilder()
  await forEachWindowPage(
    reader,
    window,
    { ...READ_PAGE, categories: new Set<Category>(ACTION_CATEGORIES) },
    records => {
      for (const r of records) builder.add(JSON.parse(r.json) as Envelope)
      if (builder.size > maxRecords)
        throw new ApiError(
          400,
          'bad_request',
          `the window holds more than ${maxRecords} events to derive actions from; narrow since/until`,
          [{ code: 'window_too_large', message: `since..until: more than ${maxRecords} events` }],
        )
    },
  )
  return builder.finish()
}

/**
 * The page of actions starting at or after `offset` (Unix µs): up to `limit`, and any further ones
 * that start in the same microsecond as its last (so the next offset never splits them); `next`
 * is the next action's start, 0 when none.
 */
export function pageOf(actions: readonly Action[], offset: number, limit: number): { actions: Action[]; next: number } {
  const lo = lowerBound(actions.length, i => actions[i]!.start_ts < offset)
  let end = Math.min(actions.length, lo + limit)
  while (end > lo && end < actions.length && actions[end]!.start_ts === actions[end - 1]!.start_ts) end++
  return { actions: actions.slice(lo, end), next: end < actions.length ? actions[end]!.start_ts : 0 }
}
