// An OTLP/HTTP receiver for tests, bound to 127.0.0.1: decodes /v1/logs, /v1/traces and /v1/metrics
// requests (http/protobuf and http/json) with the official OpenTelemetry protobuf definitions as
// the npm package @opentelemetry/otlp-transformer 0.214.0 generated them (its last release that ships
// them for every signal; a dev dependency under the alias otlp-proto-root), and
// answers 400 to anything it cannot decode. Answers can be scripted per signal: a status with
// Retry-After, or a partial success.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

const root = require('otlp-proto-root/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: Record<string, { v1: Record<string, ProtoType> }> } }
}
interface ProtoType {
  decode(buf: Uint8Array): object
  fromObject(o: object): object
  toObject(m: object, opts: object): Record<string, unknown>
  verify(o: object): string | null
  encode(m: object): { finish(): Uint8Array }
}
export type Signal = 'logs' | 'traces' | 'metrics'
const TYPES: Record<Signal, { req: ProtoType; res: ProtoType }> = {
  logs: {
    req: root.opentelemetry.proto.collector.logs!.v1.ExportLogsServiceRequest!,
    res: root.opentelemetry.proto.collector.logs!.v1.ExportLogsServiceResponse!,
  },
  traces: {
    req: root.opentelemetry.proto.collector.trace!.v1.ExportTraceServiceRequest!,
    res: root.opentelemetry.proto.collector.trace!.v1.ExportTraceServiceResponse!,
  },
  metrics: {
    req: root.opentelemetry.proto.collector.metrics!.v1.ExportMetricsServiceRequest!,
    res: root.opentelemetry.proto.collector.metrics!.v1.ExportMetricsServiceResponse!,
  },
}

/** A scripted answer (used once, in order). */
export interface Answer {
  status?: number
  retryAfter?: string
  /** A 200 with partial_success: this many items rejected. */
  rejected?: number
  message?: string
}

export interface Received {
  signal: Signal
  contentType: string
  /** The request decoded to a plain object (ids as lower-case hex, 64-bit numbers as strings). */
  body: Record<string, unknown>
  status: number
  at: number
}

export interface FlatLog {
  time: bigint
  eventName: string
  body: unknown
  attributes: Record<string, unknown>
  severityNumber?: number
  traceId?: string
  spanId?: string
  resource: Record<string, unknown>
}

export interface FlatSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  start: bigint
  end: bigint
  attributes: Record<string, unknown>
  events: { name: string; time: bigint; attributes: Record<string, unknown> }[]
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[]
  status?: { code?: number; message?: string }
}

/** An AnyValue as a plain JS value. */
export function anyValue(v: Record<string, unknown> | undefined): unknown {
  if (!v) return null
  if ('stringValue' in v) return v.stringValue
  if ('boolValue' in v) return v.boolValue
  if ('intValue' in v) return Number(v.intValue)
  if ('doubleValue' in v) return v.doubleValue
  if ('bytesValue' in v) return v.bytesValue
  if ('arrayValue' in v)
    return ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(x => anyValue(x))
  if ('kvlistValue' in v) return kv((v.kvlistValue as { values?: KeyValue[] }).values)
  return null
}
type KeyValue = { key: string; value?: Record<string, unknown> }
export function kv(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list ?? []) out[key] = anyValue(value)
  return out
}

const hexOf = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? Buffer.from(v, 'base64').toString('hex') : undefined

export class OtlpReceiver {
  readonly received: Received[] = []
  private readonly scripts: Record<Signal, Answer[]> = { logs: [], traces: [], metrics: [] }
  private server: Server | undefined
  private listeners = new Set<() => void>()
  port = 0

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Listens (on `port` when given: a receiver that comes up where the exporter already points). */
  async listen(port = 0): Promise<void> {
    const server = createServer((req, res) => {
      void this.handle(req, res)
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    this.server = server
    this.port = (server.address() as AddressInfo).port
  }

  async close(): Promise<void> {
    const s = this.server
    this.server = undefined
    if (!s) return
    s.closeAllConnections()
    await new Promise<void>(r => s.close(() => r()))
  }

  script(signal: Signal, ...answers: Answer[]): void {
    this.scripts[signal].push(...answers)
  }

  /** Resolves once `ok()` holds, checked after every request; rejects with `what` after timeoutMs. */
  until(ok: () => boolean, what: string, timeoutMs = 45_000): Promise<void> {
    return new Promise((resolve, reject) => {
      if (ok()) return resolve()
      const timer = setTimeout(() => {
        this.listeners.delete(check)
        reject(new Error(`OTLP receiver: ${what} not reached in ${timeoutMs} ms (${this.received.length} requests)`))
      }, timeoutMs)
      const check = () => {
        if (!ok()) return
        clearTimeout(timer)
        this.listeners.delete(check)
        resolve()
      }
      this.listeners.add(check)
    })
  }

  /** Every log record of requests answered 2xx, in arrival order. */
  logs(filter: (r: Received) => boolean = r => r.status < 300): FlatLog[] {
    const out: FlatLog[] = []
    for (const r of this.received) {
      if (r.signal !== 'logs' || !filter(r)) continue
      for (const rl of (r.body.resourceLogs ?? []) as Record<string, unknown>[]) {
        const resource = kv((rl.resource as { attributes?: KeyValue[] } | undefined)?.attributes)
        for (const sl of (rl.scopeLogs ?? []) as Record<string, unknown>[])
          for (const lr of (sl.logRecords ?? []) as Record<string, unknown>[])
            out.push({
              time: BigInt(String(lr.timeUnixNano ?? '0')),
              eventName: String(lr.eventName ?? ''),
              body: anyValue(lr.body as Record<string, unknown>),
              attributes: kv(lr.attributes as KeyValue[]),
              severityNumber: lr.severityNumber as number | undefined,
              traceId: hexOf(lr.traceId),
              spanId: hexOf(lr.spanId),
              resource,
            })
      }
    }
    return out
  }

  spans(filter: (r: Received) => boolean = r => r.status < 300): FlatSpan[] {
    const out: FlatSpan[] = []
    for (const r of this.received) {
      if (r.signal !== 'traces' || !filter(r)) continue
      for (const rs of (r.body.resourceSpans ?? []) as Record<string, unknown>[])
        for (const ss of (rs.scopeSpans ?? []) as Record<string, unknown>[])
          for (const s of (ss.spans ?? []) as Record<string, unknown>[])
            out.push({
              traceId: hexOf(s.traceId)!,
              spanId: hexOf(s.spanId)!,
              parentSpanId: hexOf(s.parentSpanId),
              name: String(s.name),
              kind: Number(s.kind ?? 0),
              start: BigInt(String(s.startTimeUnixNano ?? '0')),
              end: BigInt(String(s.endTimeUnixNano ?? '0')),
              attributes: kv(s.attributes as KeyValue[]),
              events: ((s.events ?? []) as Record<string, unknown>[]).map(e => ({
                name: String(e.name),
                time: BigInt(String(e.timeUnixNano ?? '0')),
                attributes: kv(e.attributes as KeyValue[]),
              })),
              links: ((s.links ?? []) as Record<string, unknown>[]).map(l => ({
                traceId: hexOf(l.traceId)!,
                spanId: hexOf(l.spanId)!,
                attributes: kv(l.attributes as KeyValue[]),
              })),
              status: s.status as FlatSpan['status'],
            })
    }
    return out
  }

  /** Metric names and their data points' values of the last 2xx metrics request. */
  lastMetrics(): Map<string, { attributes: Record<string, unknown>; value: unknown }[]> {
    const out = new Map<string, { attributes: Record<string, unknown>; value: unknown }[]>()
    const r = [...this.received].reverse().find(x => x.signal === 'metrics' && x.status < 300)
    for (const rm of (r?.body.resourceMetrics ?? []) as Record<string, unknown>[])
      for (const sm of (rm.scopeMetrics ?? []) as Record<string, unknown>[])
        for (const m of (sm.metrics ?? []) as Record<string, unknown>[]) {
          const data = (m.sum ?? m.gauge ?? m.histogram) as { dataPoints?: Record<string, unknown>[] } | undefined
          out.set(
            String(m.name),
            (data?.dataPoints ?? []).map(p => ({
              attributes: kv(p.attributes as KeyValue[]),
              value:
                p.asDouble ??
                (p.asInt !== undefined ? Number(p.asInt) : p.count !== undefined ? Number(p.count) : undefined),
            })),
          )
        }
    return out
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const raw = Buffer.concat(chunks)
    const signal = /^\/v1\/(logs|traces|metrics)$/.exec(req.url ?? '')?.[1] as Signal | undefined
    const contentType = String(req.headers['content-type'] ?? '')
    const json = contentType.startsWith('application/json')
    const reply = (status: number, body: Buffer | string, type: string, extra: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': type, ...extra })
      res.end(body)
    }
    if (req.method !== 'POST' || !signal) return reply(404, 'not found', 'text/plain')
    if (!json && contentType !== 'application/x-protobuf') return reply(415, 'unsupported content type', 'text/plain')
    const type = TYPES[signal]
    let message: object
    try {
      if (json) {
        const parsed = JSON.parse(raw.toString('utf8')) as object
        // OTLP/JSON writes trace and span ids as hex; the protobuf JSON mapping expects base64.
        const fixed = JSON.parse(JSON.stringify(parsed), (k, v: unknown) =>
          (k === 'traceId' || k === 'spanId' || k === 'parentSpanId') && typeof v === 'string'
            ? /^[0-9a-f]*$/.test(v)
              ? Buffer.from(v, 'hex').toString('base64')
              : (() => {
                  throw new Error(`${k} is not hex: ${v}`)
                })()
            : v,
        ) as object
        // fromObject applies the protobuf JSON mapping (64-bit integers as strings) and throws on a
        // wrong shape; verify() would refuse the strings the mapping allows.
        message = type.req.fromObject(fixed)
      } else {
        message = type.req.decode(raw)
      }
    } catch (err) {
      return reply(
        400,
        JSON.stringify({ code: 3, message: `bad request: ${(err as Error).message}` }),
        'application/json',
      )
    }
    const body = type.req.toObject(message, { longs: String, bytes: String, defaults: false, arrays: true })
    const answer = this.scripts[signal].shift() ?? {}
    const status = answer.status ?? 200
    this.received.push({ signal, contentType, body, status, at: Date.now() })
    const extra: Record<string, string> = answer.retryAfter !== undefined ? { 'retry-after': answer.retryAfter } : {}
    if (status >= 300) {
      reply(
        status,
        JSON.stringify({ code: status === 400 ? 3 : 14, message: answer.message ?? `scripted ${status}` }),
        'application/json',
        extra,
      )
    } else {
      const partial =
        answer.rejected !== undefined
          ? {
              partialSuccess: {
                [signal === 'logs'
                  ? 'rejectedLogRecords'
                  : signal === 'traces'
                    ? 'rejectedSpans'
                    : 'rejectedDataPoints']: answer.rejected,
                errorMessage: answer.message ?? '',
              },
            }
          : {}
      if (json) reply(status, JSON.stringify(partial), 'application/json', extra)
      else
        reply(
          status,
          Buffer.from(type.res.encode(type.res.fromObject(partial)).finish()),
          'application/x-protobuf',
          extra,
        )
    }
    for (const l of [...this.listeners]) l()
  }
}

export async function startReceiver(port = 0): Promise<OtlpReceiver> {
  const r = new OtlpReceiver()
  await r.listen(port)
  return r
}
