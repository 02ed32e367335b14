// A Playwright trace of a window (the trace viewer's zip), streamed.
export {
  buildTrace,
  DEFAULT_TRACE_LIMITS,
  traceFileName,
  type TraceBuild,
  type TraceLimits,
  type TraceSource,
  type TraceSummary,
  type TraceWindow,
} from './trace.js'
export { TRACE_FORMAT_VERSION, pageIdOf } from './format.js'
