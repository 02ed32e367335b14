// Screen recording routes (read scope): frame metadata paged like the events API, one frame's JPEG,
// the recording's state (on/off, store use, gaps), and the top-level agent steps of a window (the
// chapters `recording export` writes). Frames live in the frame store (src/recording/frame-store.ts),
// never in the event log; the steps are events, read from the log.
import { Type } from '@sinclair/typebox'
import { readStepSpans } from '../../bundle/steps.js'
import { MAX_CHAPTERS, MAX_TITLE_CHARS } from '../../recording/chapters.js'
import type { FrameStore } from '../../recording/frame-store.js'
import type { RecordingSwitch } from '../../recording/switch.js'
import type { EventLog } from '../../store/event-log.js'
import { invalidInput, notFound } from '../errors.js'
import type { ApiRouter } from '../route-table.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'

export interface RecordingRouteDeps {
  frames: FrameStore
  /** The event log the agent steps (the export's chapters) are read from. */
  log: EventLog
  recording: RecordingSwitch
  /** What the capture side reports (received, duplicates, ...); absent without a browser. */
  captureStats?: () => Record<string, number>
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export const DEFAULT_FRAME_LIMIT = 100
export const MAX_FRAME_LIMIT = 1000

/** The frames query: the events API's offset / since / until, with a larger page (frames are small items). */
export const FRAMES_QUERY = {
  offset: {
    ...EVENTS_QUERY.offset,
    description:
      'Opaque cursor: the X-Next-Offset of the previous response. When set, since is ignored; until still bounds.',
  },
  since: {
    ...EVENTS_QUERY.since,
    description: EVENTS_QUERY.since.description.replace('; not allowed with order=desc', ''),
  },
  until: EVENTS_QUERY.until,
  limit: {
    schema: Type.Integer({ minimum: 1, maximum: MAX_FRAME_LIMIT, default: DEFAULT_FRAME_LIMIT }),
    description: 'Frames per page',
  },
}

export const RecordingFrameSchema = Type.Object(
  {
    frame_id: Type.Integer({
      minimum: 1,
      description:
        'Increases with every frame kept; a missing id between two frames is a recording gap (dropped or removed by retention)',
    }),
    ts: Type.Integer({ description: 'When the frame arrived, Unix microseconds on the events clock' }),
    target_id: Type.String({ description: 'The page target the frame shows' }),
    after_seq: Type.Integer({ minimum: 0, description: 'seq of the last event committed before the frame' }),
    width: Type.Integer({ description: 'JPEG width in pixels' }),
    height: Type.Integer({ description: 'JPEG height in pixels' }),
    bytes: Type.Integer({ description: 'JPEG size in bytes' }),
    viewport_width: Type.Optional(Type.Integer({ description: 'Viewport width in CSS pixels (interaction x/y)' })),
    viewport_height: Type.Optional(Type.Integer({ description: 'Viewport height in CSS pixels' })),
  },
  { $id: 'RecordingFrame' },
)

export const RecordingChaptersSchema = Type.Object(
  {
    chapters: Type.Array(
      Type.Object({
        step_id: Type.String(),
        name: Type.String({ description: `The step's name, cut to ${MAX_TITLE_CHARS} characters` }),
        start_ts: Type.Integer({
          description:
            'agent_step_started ts, Unix microseconds; for a step started before the window, its finish minus its duration',
        }),
        end_ts: Type.Optional(
          Type.Integer({ description: 'agent_step_finished ts; absent while the step is open in the window' }),
        ),
      }),
      { description: `Oldest start first, at most ${MAX_CHAPTERS}` },
    ),
    omitted: Type.Integer({ minimum: 0, description: `Steps beyond the first ${MAX_CHAPTERS}, not listed` }),
  },
  { $id: 'RecordingChapters' },
)

const GapSchema = Type.Object({
  from_frame_id: Type.Integer(),
  to_frame_id: Type.Integer(),
  reason: Type.Union(
    ['backpressure', 'write_error', 'too_large', 'retention', 'unclean_stop'].map(r => Type.Literal(r)),
  ),
  ts: Type.Integer(),
})

export function registerRecordingRoutes(router: ApiRouter, deps: RecordingRouteDeps): void {
  const now = deps.now ?? (() => Date.now() * 1000)

  router.add({
    method: 'GET',
    path: '/browsers/:id/recording/frames',
    operationId: 'listBrowserRecordingFrames',
    summary: 'List screen recording frames',
    description:
      'Frame metadata, oldest first, paged like the events API: X-Next-Offset as offset while X-Has-More is true; since/until as there (since defaults to 5m).',
    scope: 'read',
    skipApiCall: true,
    query: FRAMES_QUERY,
    responses: {
      200: {
        description: 'A page of frames, oldest first',
        schema: Type.Array(RecordingFrameSchema),
        headers: {
          'X-Has-More': {
            schema: Type.Union([Type.Literal('true'), Type.Literal('false')]),
            description: 'Whether more results are available',
          },
          'X-Next-Offset': {
            schema: Type.Integer({ minimum: 0 }),
            description: 'Offset of the next page; 0 when there are no more results',
          },
        },
      },
    },
    handler: async ctx => {
      const q = readQueryOf({ ...ctx.state.query!, order: 'asc' }, now())
      const page = deps.frames.list({ cursor: q.cursor, sinceUs: q.sinceUs, untilUs: q.untilUs, limit: q.limit })
      ctx.set('X-Has-More', page.hasMore ? 'true' : 'false')
      ctx.set('X-Next-Offset', String(page.nextCursor))
      ctx.body = page.items
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/recording/frames/:frame_id',
    operationId: 'getBrowserRecordingFrame',
    summary: 'One screen recording frame (JPEG)',
    scope: 'read',
    skipApiCall: true,
    responses: {
      200: { description: 'The frame', contentType: 'image/jpeg', schema: Type.String({ format: 'binary' }) },
    },
    handler: async ctx => {
      const text = String(ctx.params.frame_id)
      if (!/^\d{1,15}$/.test(text))
        throw invalidInput('frame_id', `expected a frame id (an integer), got ${JSON.stringify(text)}`)
      const jpeg = await deps.frames.read(Number(text))
      if (!jpeg) throw notFound(`frame ${text} not found (never recorded, or removed by retention)`)
      ctx.type = 'image/jpeg'
      // Frames never change once written: a client may keep them.
      ctx.set('Cache-Control', 'private, max-age=31536000, immutable')
      ctx.body = jpeg
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/recording/chapters',
    operationId: 'listBrowserRecordingChapters',
    summary: 'The top-level agent steps of a window (the chapters of its exported video)',
    description:
      'Every agent step without a parent_step_id that overlaps the window (since defaults to 5m), from agent_step_started to agent_step_finished; `recording export` writes one chapter per step into its WebM.',
    scope: 'read',
    skipApiCall: true,
    query: { since: FRAMES_QUERY.since, until: FRAMES_QUERY.until },
    responses: { 200: { description: 'The steps, oldest start first', schema: RecordingChaptersSchema } },
    handler: async ctx => {
      const q = readQueryOf({ ...ctx.state.query!, order: 'asc', limit: 1 }, now())
      const { steps, omitted } = await readStepSpans(deps.log, {
        sinceUs: q.sinceUs!,
        ...(q.untilUs !== undefined ? { untilUs: q.untilUs } : {}),
      })
      ctx.body = { chapters: steps, omitted }
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/recording',
    operationId: 'getBrowserRecording',
    summary: 'Screen recording state',
    description:
      'Whether recording is on, what the frame store holds and its bound, frames dropped by reason, and the recent gaps in the frame ids.',
    scope: 'read',
    skipApiCall: true,
    responses: {
      200: {
        description: 'The recording state',
        schema: Type.Object(
          {
            enabled: Type.Boolean(),
            frames: Type.Integer(),
            bytes: Type.Integer(),
            max_bytes: Type.Integer(),
            pending_frames: Type.Integer(),
            pending_bytes: Type.Integer(),
            first_frame_id: Type.Integer(),
            last_frame_id: Type.Integer(),
            stored_total: Type.Integer(),
            dropped: Type.Record(Type.String(), Type.Integer()),
            removed_by_retention: Type.Integer(),
            gaps: Type.Array(GapSchema),
            capture: Type.Optional(Type.Record(Type.String(), Type.Number())),
          },
          { $id: 'RecordingState' },
        ),
      },
    },
    handler: async ctx => {
      ctx.body = {
        enabled: deps.recording.enabled,
        ...deps.frames.stats(),
        gaps: deps.frames.gaps(),
        ...(deps.captureStats ? { capture: deps.captureStats() } : {}),
      }
    },
  })
}
