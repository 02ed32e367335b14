// The route groups the daemon serves beside the core (health, OpenAPI and telemetry, which the app
// registers itself), each with what it needs. A new group is a file in this folder and a row here.
import type { ApiRouter } from '../route-table.js'
import { registerActionRoutes, type ActionRouteDeps } from './actions.js'
import { registerDigestRoutes, type DigestRouteDeps } from './digest.js'
import { registerBundleRoutes, type BundleRouteDeps } from './bundle.js'
import { registerExtensionRoutes, type ExtensionRouteDeps } from './extensions.js'
import { registerIngestRoutes, type IngestRouteDeps } from './ingest.js'
import { registerMetricsRoute, type MetricsRouteDeps } from './metrics.js'
import { registerPerfTraceRoutes, type PerfTraceRouteDeps } from './perf-traces.js'
import { registerRecordingRoutes, type RecordingRouteDeps } from './recording.js'
import { registerSourceMapRoutes, type SourceMapRouteDeps } from './sourcemaps.js'
import { registerStepRoutes, type StepRouteDeps } from './steps.js'
import { registerTraceRoutes, type TraceRouteDeps } from './trace.js'
import { registerUploadRoutes, type UploadRouteDeps } from './uploads.js'
import { registerViewerRoutes } from './viewer.js'

export interface DaemonRouteDeps {
  uploads: UploadRouteDeps
  extensions: ExtensionRouteDeps
  ingest: IngestRouteDeps
  metrics: MetricsRouteDeps
  recording: RecordingRouteDeps
  bundle: BundleRouteDeps
  actions: ActionRouteDeps
  digest: DigestRouteDeps
  steps: StepRouteDeps
  sourceMaps: SourceMapRouteDeps
  trace: TraceRouteDeps
  perfTraces: PerfTraceRouteDeps
}

export type RouteGroup = (router: ApiRouter) => void

export function daemonRoutes(d: DaemonRouteDeps): RouteGroup[] {
  return [
    r => registerUploadRoutes(r, d.uploads),
    r => registerExtensionRoutes(r, d.extensions),
    r => registerIngestRoutes(r, d.ingest),
    r => registerMetricsRoute(r, d.metrics),
    r => registerViewerRoutes(r),
    r => registerRecordingRoutes(r, d.recording),
    r => registerBundleRoutes(r, d.bundle),
    r => registerActionRoutes(r, d.actions),
    r => registerDigestRoutes(r, d.digest),
    r => registerStepRoutes(r, d.steps),
    r => registerSourceMapRoutes(r, d.sourceMaps),
    r => registerTraceRoutes(r, d.trace),
    r => registerPerfTraceRoutes(r, d.perfTraces),
  ]
}
