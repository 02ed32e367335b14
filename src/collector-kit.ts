// Everything a collector may use of the daemon, in one place: the session it attaches to, the
// emit function and event types, the byte bounds, the logger, a few timing helpers and the source
// maps' capture-side door. Collectors (the top-level collectors/ folder) import src/ through this
// file only.
export type { Context, EventData, StackTrace } from './events/index.js'
export { validateData, webVitalRating, type WebVitalName } from './events/index.js'
export { maskValue } from './events/redact.js'
export { DEFAULT_MAX_ENVELOPE_BYTES, type Emit, type EventInput } from './pipeline/pipeline.js'
export { Bounds, cutUtf8 } from './pipeline/bounds.js'
export { INTERACTION_BUDGET } from './pipeline/shedding.js'
export {
  DEFAULT_BODY_MAX_BYTES,
  DOCUMENT_TYPES,
  type BrowserExit,
  type BrowserScope,
  type CaptureNeeds,
  type PlannedCollector,
  type Collector,
  type Detach,
  type MonitorState,
  type MonitorView,
  type TargetSession,
} from './monitor/types.js'
export { silentLogger, type Logger } from './log.js'
export { DEFAULT_SETTINGS } from './defaults.js'
export { systemClock, type Clock, type TimerHandle, type Timers } from './util/clock.js'
export { Disposer } from './util/disposer.js'
export { withTimeout } from './util/with-timeout.js'
export { headerValue } from './util/headers.js'
export { isMappable } from './symbols/frames.js'
export type { FetchOutcome, PageInfo, ResourceLoader, SourceMaps } from './symbols/source-maps.js'
export { withDefaults } from './util/defaults.js'
