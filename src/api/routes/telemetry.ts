// Telemetry routes: paged read, live SSE stream, capture configuration.
import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { CONFIGURABLE_CATEGORIES, EnvelopeSchema, type EventData } from '../../events/index.js'
import type { ConfigurableCategory, Pipeline } from '../../pipeline/pipeline.js'
import type { EventLog } from '../../store/event-log.js'
import type { ReadMapping } from '../../store/read-mapping.js'
import { ApiError, invalidInput } from '../errors.js'
import { jsonBody } from '../json-body.js'
import type { ApiMiddleware, ApiRouter } from '../route-table.js'
import { ErrorBodySchema, TelemetryConfigSchema, type TelemetryConfig } from '../schemas.js'
import type { QueryValues } from '../query-params.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'
import type { StreamStart, TelemetryStreams } from '../../sse/telemetry-streams.js'
import type { EventReader } from '../../sse/telemetry-source.js'
import type { StreamOpener } from '../../sse/stream-client.js'
import type { RecordingSwitch } from '../../recording/switch.js'
import type { Toggle } from '../../util/toggle.js'

export interface TelemetryRouteDeps {
  log: EventLog
  /** Records as readers see them (stack frames mapped through the source maps known now). */
  mapping?: ReadMapping
  pipeline: Pipeline
  streams: TelemetryStreams
  /** What PUT layers its body onto (the daemon's --categories). */
  defaultCategories: readonly ConfigurableCategory[]
  /** The screen recording's switch (capture config `recording`); absent: not offered (400 when named). */
  recording?: RecordingSwitch
  /** What PUT sets the recording to when its body does not name it (the daemon's --recording). */
  defaultRecording?: boolean
  /** Printable keys stored without their value (capture config `mask_typed_keys`); absent: not offered (400 when named). */
  maskTypedKeys?: Toggle
  /** What PUT sets it to when its body does not name it (the daemon's --mask-typed-keys). */
  defaultMaskTypedKeys?: boolean
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

export interface TelemetryReadRouteDeps {
  /** The events of the browser named in the path (already checked by the route table). */
  readerOf: (browserId: string) => EventReader
  /** Records as they are served: the same list, or copies with some events re-serialised (source maps). */
  mapping?: ReadMapping
  streams: StreamOpener
  /** Unix microseconds (tests pin it). */
  now?: () => number
}

/** Extra reads when a filtered page comes back empty but more exists (retention racing a read). */
const MAX_EMPTY_PAGE_RETRIES = 16

export function registerTelemetryRoutes(router: ApiRouter, deps: TelemetryRouteDeps): void {
  registerTelemetryReadRoutes(router, {
    readerOf: () => deps.log,
    mapping: deps.mapping,
    streams: deps.streams,
    now: deps.now,
  })
  registerTelemetryConfigRoutes(router, deps)
}

/** The paged read and the SSE stream: the same rules wherever the events come from. */
export function registerTelemetryReadRoutes(router: ApiRouter, deps: TelemetryReadRouteDeps): void {
  const now = deps.now ?? (() => Date.now() * 1000)

  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/events',
    operationId: 'readBrowserTelemetryEvents',
    summary: 'Read a page of telemetry events',
    description:
      'Pages forward with X-Next-Offset as offset while X-Has-More is true. A page is never empty while more matching events exist.',
    scope: 'read',
    skipApiCall: true,
    query: EVENTS_QUERY,
    responses: {
      200: {
        description: 'A page of envelopes, oldest first (asc) or newest first (desc)',
        schema: Type.Array(EnvelopeSchema),
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
      const q = readQueryOf(ctx.state.query!, now())
      const reader = deps.readerOf(ctx.params.id!)
      let page = await reader.read(q)
      // The real client stops on an empty page: never answer one while more matches exist.
      for (let i = 0; page.records.length === 0 && page.hasMore && i < MAX_EMPTY_PAGE_RETRIES; i++) {
        page = await reader.read({ ...q, cursor: page.nextCursor })
      }
      const hasMore = page.hasMore && page.records.length > 0
      ctx.set('X-Has-More', hasMore ? 'true' : 'false')
      ctx.set('X-Next-Offset', String(hasMore ? page.nextCursor : 0))
      ctx.type = 'application/json'
      // The stored JSON is served as is (no parse, no re-serialisation), but for console events
      // whose stack a source map now covers.
      const records = deps.mapping ? await deps.mapping.mapRecords(page.records) : page.records
      let body = '['
      for (let i = 0; i < records.length; i++) body += (i === 0 ? '' : ',') + records[i]!.json
      ctx.body = body + ']'
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/stream',
    operationId: 'streamBrowserTelemetryEvents',
    summary: 'Stream telemetry events (SSE)',
    description:
      'Frames are `id: <seq>` + `data: <envelope JSON>`, no event field; `: keepalive` comments while idle. ' +
      'Last-Event-ID resumes after that seq (and wins over replay); replay=all starts at the oldest retained event; ' +
      'any other replay value, or none, sends only new events. A client that cannot keep up is disconnected and resumes with Last-Event-ID.',
    scope: 'read',
    skipApiCall: true,
    // As the client documents it: `all` replays, any other value means from now (not a 400).
    query: {
      replay: {
        schema: Type.String(),
        description: 'all: start from the oldest retained event; any other value: only new events',
      },
    },
    headers: { 'Last-Event-ID': { schema: Type.String({ pattern: '^\\d+$' }), description: 'Resume after this seq' } },
    responses: {
      200: { description: 'An SSE stream of envelopes', contentType: 'text/event-stream', schema: EnvelopeSchema },
      429: { description: 'Too many open streams (--max-stream-clients); retry later', schema: ErrorBodySchema },
    },
    handler: async ctx => {
      const start = streamStart(ctx.get('last-event-id'), ctx.state.query!.replay)
      if (deps.streams.refuseIfFull()) {
        throw new ApiError(
          429,
          'too_many_streams',
          `at most ${deps.streams.opts.maxClients} telemetry streams may be open at once; retry later`,
          undefined,
          { 'Retry-After': '5' },
        )
      }
      const begin = await deps.streams.prepare(ctx.params.id!, start)
      ctx.status = 200
      ctx.respond = false // the stream writes the raw response from here on
      void begin(ctx.res)
    },
  })
}

/** Capture configuration (the daemon only: it changes what this VM captures). */
function registerTelemetryConfigRoutes(router: ApiRouter, deps: TelemetryRouteDeps): void {
  const configDoc = {
    responses: { 200: { description: 'The capture configuration now in effect', schema: TelemetryConfigSchema } },
  }
  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry',
    operationId: 'getBrowserTelemetryConfig',
    summary: 'Read the capture configuration',
    description:
      'Every configurable category with its enabled flag, the screen recording and whether typed keys are masked. monitor is not listed: it flows whenever console, network, page or interaction is enabled.',
    scope: 'read',
    ...configDoc,
    handler: async ctx => {
      ctx.body = currentConfig(deps.pipeline, deps.recording, deps.maskTypedKeys)
    },
  })
  const body = { contentType: 'application/json', schema: TelemetryConfigSchema, required: true }
  router.add({
    method: 'PUT',
    path: '/browsers/:id/telemetry',
    operationId: 'replaceBrowserTelemetryConfig',
    summary: 'Replace the capture configuration',
    description:
      'The body is layered onto the daemon default set (--categories, --recording, --mask-typed-keys); settings not named take their default. Takes effect for the next emitted event.',
    scope: 'write',
    requestBody: body,
    middleware: [configBody],
    ...configDoc,
    handler: async ctx => {
      const config = parseConfigBody(ctx.request.body, deps.recording !== undefined, deps.maskTypedKeys !== undefined)
      await changeConfig(ctx, deps, applyConfig(deps.defaultCategories, config), {
        recording: config.recording?.enabled ?? deps.defaultRecording ?? false,
        maskTypedKeys: config.mask_typed_keys?.enabled ?? deps.defaultMaskTypedKeys ?? false,
      })
      ctx.body = currentConfig(deps.pipeline, deps.recording, deps.maskTypedKeys)
    },
  })
  router.add({
    method: 'PATCH',
    path: '/browsers/:id/telemetry',
    operationId: 'updateBrowserTelemetryConfig',
    summary: 'Change some categories of the capture configuration',
    description: 'The body is merged onto the current configuration. Takes effect for the next emitted event.',
    scope: 'write',
    requestBody: body,
    middleware: [configBody],
    ...configDoc,
    handler: async ctx => {
      const current = CONFIGURABLE_CATEGORIES.filter(c => deps.pipeline.isEnabled(c))
      const config = parseConfigBody(ctx.request.body, deps.recording !== undefined, deps.maskTypedKeys !== undefined)
      await changeConfig(ctx, deps, applyConfig(current, config), {
        recording: config.recording?.enabled,
        maskTypedKeys: config.mask_typed_keys?.enabled,
      })
      ctx.body = currentConfig(deps.pipeline, deps.recording, deps.maskTypedKeys)
    },
  })
}

/**
 * Audit, then switch: capture_config_changed (who, old, new; the recording too when the daemon can
 * record) is emitted while the old configuration is still in effect and must be committed before
 * the switch, so turning control off is recorded. When control is already off there is nothing to
 * record it in (the operator chose that); the change still applies.
 */
async function changeConfig(
  ctx: Parameters<ApiMiddleware>[0],
  deps: TelemetryRouteDeps,
  next: ConfigurableCategory[],
  settings: { recording: boolean | undefined; maskTypedKeys: boolean | undefined },
): Promise<void> {
  const { pipeline, recording, maskTypedKeys } = deps
  const nextRecording = settings.recording
  const nextMask = settings.maskTypedKeys
  const old = CONFIGURABLE_CATEGORIES.filter(c => pipeline.isEnabled(c))
  const changed = old.length !== next.length || old.some(c => !next.includes(c))
  const recordingChanged = recording !== undefined && nextRecording !== undefined && nextRecording !== recording.enabled
  const maskChanged = maskTypedKeys !== undefined && nextMask !== undefined && nextMask !== maskTypedKeys.enabled
  if (changed || recordingChanged || maskChanged) {
    const data: EventData<'capture_config_changed'> = {
      request_id: ctx.state.requestId,
      operation_id: ctx.state.operationId ?? 'unknown',
      token_name: ctx.state.tokenName ?? 'unknown',
      token_scopes: [...(ctx.state.scopes ?? [])].sort(),
      old_categories: old,
      new_categories: CONFIGURABLE_CATEGORIES.filter(c => next.includes(c)),
    }
    if (recording) {
      data.old_recording = recording.enabled
      data.new_recording = nextRecording ?? recording.enabled
    }
    if (maskTypedKeys) {
      data.old_mask_typed_keys = maskTypedKeys.enabled
      data.new_mask_typed_keys = nextMask ?? maskTypedKeys.enabled
    }
    const r = pipeline.emit({ type: 'capture_config_changed', source: { kind: 'kernel_api' }, data })
    if (r.dropped === undefined && !(await r.committed)) {
      throw new ApiError(
        503,
        'unavailable',
        'the audit record of this change could not be stored; the configuration is unchanged',
      )
    }
  }
  pipeline.setCategories(next)
  if (recordingChanged) recording.set(nextRecording)
  if (maskChanged) maskTypedKeys.set(nextMask)
}

/** Last-Event-ID wins over replay; replay=all starts at the oldest retained event; anything else: new events only. */
export function streamStart(lastEventId: string, replay: QueryValues[string]): StreamStart {
  if (lastEventId !== '') {
    if (!/^\d{1,16}$/.test(lastEventId.trim()) || !Number.isSafeInteger(Number(lastEventId))) {
      throw invalidInput(
        'Last-Event-ID',
        `expected the seq of the last event received, got ${JSON.stringify(lastEventId)}`,
      )
    }
    return { kind: 'after', seq: Number(lastEventId) }
  }
  return replay === 'all' ? { kind: 'oldest' } : { kind: 'new' }
}

/** Capture configuration bodies: small JSON, never empty (an empty PUT must not reset the configuration). */
const configBody = jsonBody({ limit: '64kb', requireBody: true })

const configCheck = TypeCompiler.Compile(TelemetryConfigSchema)

export function parseConfigBody(body: unknown, recordingOffered = true, maskOffered = true): TelemetryConfig {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidInput(
      'body',
      'expected a JSON object like {"browser": {"console": {"enabled": true}}} with Content-Type: application/json',
    )
  }
  const browser = (body as { browser?: unknown }).browser
  if (browser && typeof browser === 'object' && Object.prototype.hasOwnProperty.call(browser, 'monitor')) {
    throw invalidInput(
      'browser.monitor',
      'monitor is not configurable: it flows whenever console, network, page or interaction is enabled',
    )
  }
  if (!recordingOffered && Object.prototype.hasOwnProperty.call(body, 'recording'))
    throw invalidInput('recording', 'this daemon has no screen recording (it runs without a frame store)')
  if (!maskOffered && Object.prototype.hasOwnProperty.call(body, 'mask_typed_keys'))
    throw invalidInput('mask_typed_keys', 'this server captures no keys (it is not a capturing daemon)')
  if (!configCheck.Check(body)) {
    const first = [...configCheck.Errors(body)][0]!
    const path = first.path.replace(/^\//, '').replace(/\//g, '.') || 'body'
    throw new ApiError(400, 'bad_request', `invalid body: ${path}: ${first.message}`, [
      { code: 'invalid_input', message: `${path}: ${first.message}` },
    ])
  }
  return body as TelemetryConfig
}

export function applyConfig(base: readonly ConfigurableCategory[], config: TelemetryConfig): ConfigurableCategory[] {
  const out = new Set(base)
  for (const [c, v] of Object.entries(config.browser ?? {}) as [
    ConfigurableCategory,
    { enabled?: boolean } | undefined,
  ][]) {
    if (v?.enabled === true) out.add(c)
    else if (v?.enabled === false) out.delete(c)
  }
  return CONFIGURABLE_CATEGORIES.filter(c => out.has(c))
}

export function currentConfig(
  pipeline: Pipeline,
  recording?: RecordingSwitch,
  maskTypedKeys?: Toggle,
): TelemetryConfig {
  const config: TelemetryConfig = {
    browser: Object.fromEntries(CONFIGURABLE_CATEGORIES.map(c => [c, { enabled: pipeline.isEnabled(c) }])),
  }
  if (recording) config.recording = { enabled: recording.enabled }
  if (maskTypedKeys) config.mask_typed_keys = { enabled: maskTypedKeys.enabled }
  return config
}
