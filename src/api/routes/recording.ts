// Screen recording routes (read scope): frame metadata paged like the events API, one frame's JPEG,
// and the recording's state (on/off, store use, gaps). Frames live in the frame store
// (src/recording/frame-store.ts), never in the event log.
import { Type } from '@sinclair/typebox'
import type { FrameStore } from '../../recording/frame-store.js'
import type { RecordingSwitch } from '../../recording/switch.js'
import { invalidInput, notFound } from '../errors.js'
import type { ApiRouter } from '../route-table.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'

export interface RecordingRouteDeps {
  frames: FrameStore
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
