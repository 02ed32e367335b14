// GET /browsers/{id}/telemetry/bundle: the debug bundle of a time window as one streamed zip
// (src/bundle). The window is parsed like the events API's; the zip is written straight to the
// socket as the client reads it.
import { Type } from '@sinclair/typebox'
import {
  buildBundle,
  bundleFileName,
  DEFAULT_BUNDLE_LIMITS,
  type BundleLimits,
  type BundleSource,
  type BundleStats,
} from '../../bundle/bundle.js'
import type { Logger } from '../../log.js'
import { silentLogger } from '../../log.js'
import type { ApiRouter } from '../route-table.js'
import { EVENTS_QUERY, readQueryOf } from '../telemetry-query.js'
import { ExportSlots, sendZipInSlot } from '../zip-response.js'
import { DEFAULT_SETTINGS } from '../../defaults.js'
import { ErrorBodySchema } from '../schemas.js'

export interface BundleRouteDeps {
  source: BundleSource
  limits?: BundleLimits
  logger?: Logger
  /** Unix microseconds (tests pin it). */
  now?: () => number
  /** Exports built at once, shared with trace.zip (default: this route's own, --export-max-concurrent's default). */
  slots?: ExportSlots
}

/** Bundles being written now (their live counters), and how the finished ones ended. */
export interface BundleRouteStats {
  active: Set<BundleStats>
  completed: number
  failed: number
}

export const BUNDLE_QUERY = { since: EVENTS_QUERY.since, until: EVENTS_QUERY.until }

export function registerBundleRoutes(router: ApiRouter, deps: BundleRouteDeps): BundleRouteStats {
  const stats: BundleRouteStats = { active: new Set(), completed: 0, failed: 0 }
  const logger = deps.logger ?? silentLogger
  const now = deps.now ?? (() => Date.now() * 1000)
  const slots = deps.slots ?? new ExportSlots(DEFAULT_SETTINGS.exportMaxConcurrent)
  router.add({
    method: 'GET',
    path: '/browsers/:id/telemetry/bundle',
    operationId: 'downloadBrowserTelemetryBundle',
    summary: 'Download a debug bundle (zip) of a time window',
    description:
      'One zip, streamed: manifest.json (browser id, daemon version, window, seq range, dropped-seq and recording gaps, ' +
      'categories, redaction policy), events.ndjson (the envelopes exactly as the events API serves them, one per line), ' +
      'network.har (HAR 1.2 with captured bodies and WebSocket messages), console.txt (one line per message), ' +
      'frames/index.json and frames/<frame_id>.jpg (the screen recording), screenshots/<seq>.<png|jpeg>. ' +
      'since/until are read as in readBrowserTelemetryEvents (default since: 5m); the upper end is the last event ' +
      'committed when the download began. Everything comes from the stored events, masked before they were stored. ' +
      'A failure after the download began ends the connection without the zip trailer, so the file is unusable rather than silently short.',
    scope: 'read',
    query: BUNDLE_QUERY,
    responses: {
      200: {
        description: 'The zip (no Content-Length: it is streamed)',
        contentType: 'application/zip',
        schema: Type.String({ format: 'binary' }),
        headers: {
          'Content-Disposition': {
            schema: Type.String(),
            description: 'attachment; filename="browser-telemetry-<browser id>-<UTC time>.zip"',
          },
        },
      },
      429: {
        description:
          'As many trace and bundle exports as --export-max-concurrent are being built (too_many_requests; Retry-After)',
        schema: ErrorBodySchema,
      },
    },
    handler: async ctx => {
      const nowUs = now()
      const q = ctx.state.query!
      const read = readQueryOf({ ...q, order: 'asc', limit: 1 }, nowUs)
      const start = () => {
        const b = buildBundle(
          deps.source,
          {
            sinceUs: read.sinceUs!,
            ...(read.untilUs !== undefined ? { untilUs: read.untilUs } : {}),
            requested: {
              ...(typeof q.since === 'string' ? { since: q.since } : {}),
              ...(typeof q.until === 'string' ? { until: q.until } : {}),
            },
          },
          deps.limits ?? DEFAULT_BUNDLE_LIMITS,
          () => new Date(nowUs / 1000),
        )
        stats.active.add(b.stats)
        build = b
        return b
      }
      let build: ReturnType<typeof buildBundle> | undefined
      void sendZipInSlot(
        ctx,
        slots,
        start,
        bundleFileName(deps.source.browserId, new Date(nowUs / 1000)),
        logger,
        'debug bundle',
      ).then(whole => {
        if (build) stats.active.delete(build.stats)
        if (whole) stats.completed++
        else stats.failed++
      })
    },
  })
  return stats
}
