// The page's performance schemas: CDP's layout shifts and LCP (page_layout_shift, page_lcp), the Web
// Vitals and long animation frames (page_web_vital, page_long_animation_frame) and the published
// rating thresholds.
import { Type, type Static } from '@sinclair/typebox'
import { withContext } from './common.js'

export const WEB_VITAL_NAMES = ['LCP', 'CLS', 'INP', 'FCP', 'TTFB'] as const
export type WebVitalName = (typeof WEB_VITAL_NAMES)[number]
export const WEB_VITAL_RATINGS = ['good', 'needs-improvement', 'poor'] as const
export type WebVitalRating = (typeof WEB_VITAL_RATINGS)[number]

/** Published thresholds (web.dev): a value above the first is needs-improvement, above the second poor. */
export const WEB_VITAL_THRESHOLDS: Record<WebVitalName, readonly [number, number]> = {
  LCP: [2500, 4000],
  CLS: [0.1, 0.25],
  INP: [200, 500],
  FCP: [1800, 3000],
  TTFB: [800, 1800],
}

export function webVitalRating(name: WebVitalName, value: number): WebVitalRating {
  const [good, poor] = WEB_VITAL_THRESHOLDS[name]
  return value > poor ? 'poor' : value > good ? 'needs-improvement' : 'good'
}

const Ms = () => Type.Optional(Type.Number())
const Text = () => Type.Optional(Type.String())

/** One script of a long animation frame (PerformanceScriptTiming); `duration` etc. in ms. */
export const LongFrameScriptSchema = Type.Object(
  {
    source_url: Text(),
    source_function_name: Text(),
    source_char_position: Type.Optional(Type.Integer()),
    invoker: Text(),
    invoker_type: Text(),
    duration: Type.Number({ minimum: 0 }),
    forced_style_and_layout_duration: Ms(),
    pause_duration: Ms(),
  },
  { additionalProperties: false },
)
export type LongFrameScript = Static<typeof LongFrameScriptSchema>

/** Every metric's attribution fields in one object; each metric fills its own. */
export const WebVitalAttributionSchema = Type.Object(
  {
    // INP
    interaction_target: Text(),
    interaction_type: Text(),
    input_delay: Ms(),
    processing_duration: Ms(),
    presentation_delay: Ms(),
    longest_script: Type.Optional(LongFrameScriptSchema),
    longest_script_subpart: Text(),
    // LCP
    element: Text(),
    url: Text(),
    time_to_first_byte: Ms(),
    resource_load_delay: Ms(),
    resource_load_duration: Ms(),
    element_render_delay: Ms(),
    // CLS
    largest_shift_target: Text(),
    largest_shift_value: Ms(),
    largest_shift_time: Ms(),
    // FCP (and time_to_first_byte above)
    first_byte_to_fcp: Ms(),
    // TTFB
    waiting_duration: Ms(),
    cache_duration: Ms(),
    dns_duration: Ms(),
    connection_duration: Ms(),
    request_duration: Ms(),
  },
  { additionalProperties: false },
)
export type WebVitalAttribution = Static<typeof WebVitalAttributionSchema>

/** page_web_vital: times in milliseconds (CLS unitless); `attribution` holds its metric's fields. */
export const PageWebVitalData = withContext({
  name: Type.Union(WEB_VITAL_NAMES.map(v => Type.Literal(v))),
  value: Type.Number({ minimum: 0 }),
  rating: Type.Union(WEB_VITAL_RATINGS.map(v => Type.Literal(v))),
  delta: Type.Number({ description: 'Change since the last page_web_vital of this metric and id' }),
  id: Type.String({ maxLength: 128 }),
  navigation_type: Type.Optional(Type.String()),
  attribution: WebVitalAttributionSchema,
})

/** page_long_animation_frame (>= 50 ms): times in milliseconds since the Unix epoch. */
export const PageLongAnimationFrameData = withContext({
  start_time: Type.Number(),
  duration: Type.Number({ minimum: 0 }),
  blocking_duration: Type.Number({ minimum: 0 }),
  render_start: Type.Optional(Type.Number()),
  style_and_layout_start: Type.Optional(Type.Number()),
  first_ui_event_timestamp: Type.Optional(Type.Number()),
  scripts: Type.Array(LongFrameScriptSchema, { maxItems: 5 }),
})

/** page_layout_shift (CDP's PerformanceTimeline): times in milliseconds since the Unix epoch. */
export const PageLayoutShiftData = withContext({
  source_frame_id: Type.Optional(Type.String()),
  time: Type.Number(),
  duration: Type.Number(),
  layout_shift_details: Type.Object(
    { value: Type.Number(), had_recent_input: Type.Boolean() },
    { additionalProperties: false },
  ),
})

/** page_lcp (CDP's PerformanceTimeline): times in milliseconds since the Unix epoch. */
export const PageLcpData = withContext({
  source_frame_id: Type.Optional(Type.String()),
  time: Type.Number(),
  lcp_details: Type.Object(
    {
      render_time: Type.Number(),
      load_time: Type.Number(),
      size: Type.Number(),
      element_id: Type.Optional(Type.String()),
      url: Type.Optional(Type.String()),
      node_id: Type.Optional(Type.Integer()),
    },
    { additionalProperties: false },
  ),
})
