// Shared building blocks of the event model: categories, source, context, headers, call stack.
// Everything here is a TypeBox schema, so the TS type and the JSON Schema come from one place.
import { Type, type Static, type TSchema } from '@sinclair/typebox'

export const CATEGORIES = [
  'console',
  'network',
  'page',
  'interaction',
  'control',
  'connection',
  'system',
  'screenshot',
  'captcha',
  'monitor',
] as const
export type Category = (typeof CATEGORIES)[number]
export const CategorySchema = Type.Union(CATEGORIES.map(c => Type.Literal(c)))

/** Categories that are switched individually (monitor follows the capture rule instead). */
export const CONFIGURABLE_CATEGORIES = CATEGORIES.filter(c => c !== 'monitor') as Exclude<Category, 'monitor'>[]
/** Any of these enabled makes the monitor category flow (the capture rule). */
export const CDP_CATEGORIES: readonly Category[] = ['console', 'network', 'page', 'interaction']

export const TARGET_TYPES = [
  'page',
  'iframe',
  'worker',
  'background_page',
  'service_worker',
  'shared_worker',
  'other',
] as const
export type TargetType = (typeof TARGET_TYPES)[number]
export const TargetTypeSchema = Type.Union(TARGET_TYPES.map(t => Type.Literal(t)))

export const SOURCE_KINDS = ['cdp', 'kernel_api', 'extension', 'local_process'] as const
export const SourceSchema = Type.Object(
  {
    kind: Type.Union(SOURCE_KINDS.map(k => Type.Literal(k))),
    event: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: false, $id: 'Source' },
)
export type Source = Static<typeof SourceSchema>

/** Header map as CDP gives it: name -> value (multi-valued headers are newline-joined by Chromium). */
export const HeadersSchema = Type.Record(Type.String(), Type.String())
export type Headers = Static<typeof HeadersSchema>

/** Where a source map places a frame: the original source, 1-based line and column, the function's name. */
export const OriginalPositionSchema = Type.Object(
  {
    source: Type.String(),
    line: Type.Integer({ minimum: 1 }),
    column: Type.Integer({ minimum: 1 }),
    name: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
)
export type OriginalPosition = Static<typeof OriginalPositionSchema>

/**
 * CDP Runtime.StackTrace, camelCase as the protocol sends it (0-based positions). `original` is
 * added when a source map covers the frame (src/symbols); the raw fields stay as Chromium sent them.
 * `scriptId` is always there, as the client requires: "" for a frame read from stack text whose
 * URL names no script the session knows.
 */
export const CallFrameSchema = Type.Object({
  functionName: Type.String(),
  scriptId: Type.String(),
  url: Type.String(),
  lineNumber: Type.Integer(),
  columnNumber: Type.Integer(),
  original: Type.Optional(OriginalPositionSchema),
})
export const StackTraceSchema = Type.Recursive(
  Self =>
    Type.Object({
      description: Type.Optional(Type.String()),
      callFrames: Type.Array(CallFrameSchema),
      parent: Type.Optional(Self),
    }),
  { $id: 'StackTrace' },
)
export type StackTrace = Static<typeof StackTraceSchema>

/** The agent steps' shared fields (agent_step_started / _finished) and the trace context of commands and steps. */
/** W3C trace context: version 00, a non-zero trace id and span id, flags. */
export const TRACEPARENT_PATTERN = '^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$'
export const STEP_OUTCOMES = ['ok', 'error', 'abandoned'] as const
export const STEP_ABANDON_REASONS = ['connection_closed', 'open_too_long', 'parent_finished', 'shutdown'] as const
const Hex = (n: number, description: string) => Type.String({ pattern: `^[0-9a-f]{${n}}$`, description })
/** The trace a command or step belongs to, when the agent gave one (traceparent) or a step made one. */
export const TraceParentProps = {
  trace_id: Type.Optional(Hex(32, 'W3C trace id')),
  parent_span_id: Type.Optional(Hex(16, 'The span this one is a child of (a step, or the agent span)')),
}
export const StepProps = {
  step_id: Type.String({ minLength: 1, maxLength: 128 }),
  name: Type.String({ minLength: 1, maxLength: 256 }),
  parent_step_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  connection_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  via: Type.Union([Type.Literal('http'), Type.Literal('cdp')], { description: 'How the agent started the step' }),
  attributes: Type.Optional(
    Type.Record(Type.String({ maxLength: 128 }), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
      maxProperties: 64,
    }),
  ),
  ...TraceParentProps,
  span_id: Type.Optional(Hex(16, "The step's own span id")),
}

/** What an Input.* cdp_command did, never what was typed (a fold of them: its sum and event types). */
export const InputFactsProps = {
  input_type: Type.Optional(
    Type.String({ maxLength: 32, description: 'Input.dispatch*Event: the event type (mousePressed, keyDown, ...)' }),
  ),
  input_chars: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'Input.insertText and key events with text: how many characters (never the text); a fold: their sum',
    }),
  ),
  input_key: Type.Optional(
    Type.String({
      maxLength: 32,
      description:
        'Key events: the key when it is a named key (Enter, Tab, ArrowDown), or the key of a shortcut (pressed with Control, Alt or Meta held, typing nothing: A, Space); never a typed character',
    }),
  ),
  input_types: Type.Optional(
    Type.Record(Type.String({ maxLength: 32 }), Type.Integer({ minimum: 1 }), {
      maxProperties: 32,
      description: 'A fold of Input.* commands: how many of each event type (keyDown, mouseMoved, ...)',
    }),
  ),
}

/** proxy_error.code: what a proxy failure of the browser's was (its Chromium net error normalised). */
export const PROXY_ERROR_CODES = [
  'proxy_connection_failed',
  'tunnel_connection_failed',
  'proxy_auth_required',
  'proxy_certificate_invalid',
  'proxy_other',
] as const
export type ProxyErrorCode = (typeof PROXY_ERROR_CODES)[number]

/** Why a script's source map could not be used (sourcemap_failed.reason). */
export const SOURCEMAP_FAILURES = [
  'not_found',
  'fetch_failed',
  'timeout',
  'too_large',
  'bad_json',
  'not_v3',
  'bad_mappings',
  'too_many_segments',
  'too_many_sources',
  'refused_url',
  'private_address',
  'debug_id_mismatch',
] as const
export type SourceMapFailure = (typeof SOURCEMAP_FAILURES)[number]

/** Context fields without nav_seq (page_navigation carries these but resets the epoch). */
export const NavigationContextProps = {
  url: Type.Optional(Type.String()),
  frame_id: Type.Optional(Type.String()),
  loader_id: Type.Optional(Type.String()),
  session_id: Type.Optional(Type.String()),
  target_id: Type.Optional(Type.String()),
  target_type: Type.Optional(TargetTypeSchema),
}
/** The shared context object: every field optional because absent means absent (never ""). */
export const ContextProps = {
  ...NavigationContextProps,
  nav_seq: Type.Optional(Type.Integer({ minimum: 0 })),
}
export const ContextSchema = Type.Object(ContextProps, { additionalProperties: false })
export type Context = Static<typeof ContextSchema>

/** Data object = shared context plus the given fields; unknown keys are rejected. */
export function withContext<P extends Record<string, TSchema>>(props: P) {
  return Type.Object({ ...ContextProps, ...props }, { additionalProperties: false })
}
export function plain<P extends Record<string, TSchema>>(props: P) {
  return Type.Object(props, { additionalProperties: false })
}
