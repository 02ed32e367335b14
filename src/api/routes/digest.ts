// GET /browsers/{id}/telemetry/digest: one short account of a window (src/digest) for an agent or
// a person, as markdown or JSON, within a character budget. The window is read once, every
// category in seq order (gaps are counted across all of them), console stacks mapped as every
// reader maps them; nothing but the digest's small records is kept while reading.
import { Type } from '@sinclair/typebox'
import {
  DEFAULT_DIGEST_CHARS,
  DigestCollector,
  MAX_DIGEST_CHARS,
  MIN_DIGEST_CHARS,
  renderDigest,
} from '../../digest/index.js'
import type { EventReader } from '../../sse/telemetry-source.js'
import type { ReadMapping } from '../../store/read-mapping.js'
import type { ReadQuery } from '../../store/event-log.js'
import { ApiError, notFound } from '../errors.js'
import type { ApiRouter } from '../route-table.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'
import { DEFAULT_MAX_ACTION_RECORDS } from './actions.js'
import { forEachWindowPage } from '../window-pages.js'

export interface DigestRouteDeps {
  reader: EventReader
  /** Commits what was emitted before the request (an agent asks right after ending its step). */
  flush?: () => Promise<void>
  /** Console stacks as readers serve them (source maps). */
  mapping?: ReadMapping
  /** Records the actions of one digest may hold; past it the answer is a 400. */
  maxRecords?: number
  /** Events one digest reads at most; past it the answer is a 400 (about a busy hour). */
  maxEvents?: number
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export const DEFAULT_DIGEST_MAX_EVENTS = 1_000_000
const READ_PAGE = { limit: 2000, maxBytes: 4 * 1024 * 1024 }

export const DIGEST_QUERY = {
  since: EVENTS_QUERY.since,
  until: EVENTS_QUERY.until,
  step_id: {
    schema: Type.String({ minLength: 1, maxLength: 128 }),
    description: 'Only this agent step: its actions and what happened while it ran (404 when it is not in the window)',
  },
  format: {
    schema: Type.Union([Type.Literal('markdown'), Type.Literal('json')], { default: 'markdown' }),
    description: 'markdown (text/markdown) or json (the same items as data)',
  },
  max_chars: {
    schema: Type.Integer({ minimum: MIN_DIGEST_CHARS, maximum: MAX_DIGEST_CHARS, default: DEFAULT_DIGEST_CHARS }),
    description:
      'Character budget of the markdown; the least important lines are left out first, and each section says how many',
  },
}

export function registerDigestRoutes(router: ApiRouter, deps: DigestRouteDeps): void {
  const now = deps.now ?? (() => Date.now() * 1000)
  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/digest',
    operationId: 'readBrowserTelemetryDigest',
    summary: 'Read a short account of a window',
    description:
      'Per agent step its outcome and actions in words with their effects (failed requests, console errors with mapped frames), ' +
      'navigations with their Web Vitals, failed requests with a short redacted body, console errors, crashes, dialogs, downloads ' +
      'and dropped events; deterministic, within max_chars, never bodies in full, screenshots or secrets.',
    scope: 'read',
    skipApiCall: true,
    query: DIGEST_QUERY,
    responses: {
      200: {
        description:
          'The digest as markdown; with format=json, application/json: {window, step_id?, events, steps[{step_id, name, outcome?, duration_ms?, error_message?, start_ts, actions[]}], actions[], navigations[], failed_requests[], console_errors[], incidents[], dropped{events, gaps}, omitted?} keeping the same items (docs/mcp.md)',
        contentType: 'text/markdown',
        schema: Type.String(),
      },
    },
    handler: async ctx => {
      const q = ctx.state.query!
      const window = readQueryOf({ since: q.since, until: q.until, order: 'asc', limit: 1 }, now())
      const untilUs = window.untilUs ?? now()
      await deps.flush?.()
      const collector = await collect(deps, window)
      const stepId = typeof q.step_id === 'string' ? q.step_id : undefined
      const digest = collector.finish({ since_ts: window.sinceUs ?? 0, until_ts: untilUs }, stepId)
      if (digest === undefined) throw notFound(`no agent step ${JSON.stringify(stepId)} in the window`)
      const { markdown, digest: kept } = renderDigest(digest, q.max_chars as number)
      if (q.format === 'json') ctx.body = kept
      else {
        ctx.type = 'text/markdown; charset=utf-8'
        ctx.body = markdown
      }
    },
  })
}

async function collect(deps: DigestRouteDeps, window: ReadQuery): Promise<DigestCollector> {
  const maxRecords = deps.maxRecords ?? DEFAULT_MAX_ACTION_RECORDS
  const maxEvents = deps.maxEvents ?? DEFAULT_DIGEST_MAX_EVENTS
  const collector = new DigestCollector()
  await forEachWindowPage(deps.reader, window, READ_PAGE, async page => {
    const records = deps.mapping ? await deps.mapping.mapRecords(page) : page
    for (const r of records) collector.add(r)
    if (collector.size > maxRecords || collector.events > maxEvents)
      throw new ApiError(
        400,
        'bad_request',
        `the window holds more than ${collector.size > maxRecords ? `${maxRecords} events to derive actions from` : `${maxEvents} events`}; narrow since/until`,
        [{ code: 'window_too_large', message: 'since..until: narrow the window' }],
      )
  })
  return collector
}
