// The HTTP API: requests by operation and status, handler duration.
import { Counter, Histogram } from 'prom-client'
import type { Family } from './sources.js'

export function httpMetrics({ registers }: Pick<Family, 'registers'>) {
  const httpRequests = new Counter({
    name: 'browser_telemetry_http_requests_total',
    help: 'HTTP API requests, by operation id and status',
    labelNames: ['operation', 'status'] as const,
    registers,
  })
  const httpRequestDuration = new Histogram({
    name: 'browser_telemetry_http_request_duration_seconds',
    help: 'HTTP API handler duration (for streams: until the stream is set up)',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers,
  })

  return {
    httpRequests,
    httpRequestDuration,
    /** Records one finished HTTP request (the API's metrics middleware calls this). */
    observeHttp(operation: string, status: number, seconds: number) {
      httpRequests.inc({ operation, status: String(status) })
      httpRequestDuration.observe({ operation }, seconds)
    },
  }
}
