// Public surface of the monitor: the daemon (src/daemon/, src/main.ts) and src/metrics import from
// here; collectors reach its types through src/collector-kit.ts.
export { Monitor, DEFAULT_RECONNECT } from './monitor.js'
export type { MonitorOptions, MonitorLaunchOptions, ReconnectOptions } from './monitor.js'
export type {
  MonitorState,
  BrowserExit,
  MonitorEventMap,
  MonitorEvents,
  MonitorEventSource,
  MonitorStatus,
  MonitorView,
} from './status.js'
export type { TargetInfo } from './target-types.js'
export { targetTypeOf } from './target-types.js'
export {
  capturePlan,
  checkCollectors,
  CAPTURE_CATEGORIES,
  PLAN_DOMAINS,
  TIMELINE_EVENT_TYPES,
  DEFAULT_BODY_MAX_BYTES,
  planAttaches,
  RECORDING,
} from './capture-plan.js'
export type { CaptureNeeds, CapturePlanOptions, PlannedCollector } from './capture-plan.js'
export { autoAttachParams, fixedCapture } from './capture.js'
export type { CaptureSource, CaptureSwitches } from './capture.js'
export { InitStepError, ConnectError } from './connection.js'
export { ConnectionClosedError } from './cdp-client.js'
export { ProtocolError, ProtocolErrorLog, classifyProtocolError, toProtocolError } from './protocol-error.js'
export type { ProtocolErrorKind } from './protocol-error.js'
export { backoffDelay, resolveBrowserWsUrl, fetchBrowserWsUrl } from './discover.js'
export { launchChromium, ChromiumNotFoundError, ChromiumExitedError, CHROMIUM_FLAGS } from './launch.js'
export type { LaunchedBrowser, LaunchOptions } from './launch.js'
export { chromiumUserFor, chromiumUserHome, resolveChromiumUser, ChromiumUserError, NOBODY } from './chromium-user.js'
export type { ChromiumUser } from './chromium-user.js'
export type * from './types.js'
