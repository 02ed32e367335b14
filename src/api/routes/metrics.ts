// GET /metrics (Prometheus text format, scope read) and the middleware that counts HTTP requests.
import type { Middleware } from 'koa'
import { performance } from 'node:perf_hooks'
import { Type } from '@sinclair/typebox'
import type { Metrics } from '../../metrics/metrics.js'
import type { ApiState } from '../operation.js'
import type { ApiRouter } from '../route-table.js'

export interface MetricsRouteDeps {
  metrics: Pick<Metrics, 'render'>
}

export function registerMetricsRoute(router: ApiRouter, deps: MetricsRouteDeps): void {
  router.add({
    method: 'GET',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics of the daemon (text exposition format 0.0.4)',
    scope: 'read',
    skipApiCall: true, // a scraper polls; it must not feed the log
    responses: {
      200: {
        description: 'Prometheus text format',
        contentType: 'text/plain; version=0.0.4; charset=utf-8',
        schema: Type.String(),
      },
    },
    handler: async ctx => {
      const { contentType, body } = await deps.metrics.render()
      ctx.set('Cache-Control', 'no-store')
      ctx.type = contentType
      ctx.body = body
    },
  })
}

/**
 * Counts every request by operation id and final status. Mount it outside the error renderer (right
 * after the request-id middleware) so it sees the status the client got; unmatched paths count as
 * operation "unmatched".
 */
export function httpMetrics(metrics: Pick<Metrics, 'observeHttp'>): Middleware<ApiState> {
  return async (ctx, next) => {
    const start = performance.now()
    let status: number | undefined
    try {
      await next()
    } catch (err) {
      const s = (err as { status?: unknown }).status
      status = typeof s === 'number' ? s : 500
      throw err
    } finally {
      metrics.observeHttp(
        ctx.state.operationId ?? 'unmatched',
        status ?? ctx.status,
        (performance.now() - start) / 1000,
      )
    }
  }
}
