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

/** CDP Runtime.StackTrace, camelCase as the protocol sends it. */
export const CallFrameSchema = Type.Object({
  functionName: Type.String(),
  scriptId: Type.Optional(Type.String()),
  url: Type.String(),
  lineNumber: Type.Integer(),
  columnNumber: Type.Integer(),
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
