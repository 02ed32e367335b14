// The viewer's pure model: loaded envelopes -> panel rows, navigations, gaps, click markers,
// filters and the deep-link state. No DOM, no fetch: unit-tested in Node (test/viewer-model.test.ts).
// The parts live in model/, one idea a file; this index names what the page and the tests use.
export { dataOf, type Envelope, type TelemetryEvent } from './model/data.js'
export { PANELS, PANEL_TITLES, LANE_CATEGORIES, panelOf, type Panel } from './model/panels.js'
export { findGaps, gapLabel, type Gap } from './model/gaps.js'
export {
  joinNetwork,
  joinSockets,
  netSummary,
  type NetRow,
  type NetSummary,
  type SocketRow,
} from './model/network-rows.js'
export { SLOW_COMMAND_MS, commandSummary, type CommandSummary } from './model/commands.js'
export {
  MARKERS,
  MARKER_LABEL,
  LONG_FRAMES_DRAWN,
  VITAL_NAMES,
  buildNavigations,
  vitalText,
  inNavigation,
  navKey,
  navKeyOf,
  type Incident,
  type LongFrame,
  type MarkerName,
  type Navigation,
  type Vital,
  type VitalName,
} from './model/navigations.js'
export { buildFrames, pngSize, type ClickMark, type Frame } from './model/frames.js'
export {
  agentRows,
  deriveAgent,
  effectBadges,
  spanOf,
  type ActionRow,
  type AgentData,
  type AgentFilter,
  type AgentRow,
  type CommandRow,
  type SetupRow,
  type StepRow,
} from './model/agent.js'
export { DEFAULT_VIEW, decodeView, encodeView, type ViewState } from './model/view-state.js'
export {
  derive,
  inSpan,
  panelRows,
  rowIndexAtSeq,
  searchText,
  typeOptions,
  waterfall,
  withGaps,
  type Derived,
  type EventRow,
  type Filter,
  type FrameRow,
  type GapRow,
  type NavRow,
  type Row,
} from './model/rows.js'
export { fmtBytes, fmtRequestUrl, fmtTime, hasRedaction, isRedacted } from './model/format.js'
export { hasOriginalFrames, stackLines, type StackLine } from './model/stack.js'
