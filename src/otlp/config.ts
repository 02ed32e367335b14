// The --otlp-* settings: parsed once at startup (pure; src/config/config.ts calls it). The standard
// OTEL_EXPORTER_OTLP_* variables are read where they mean the same thing; our own flag and its
// BROWSER_TELEMETRY_ twin win over them.
import { readFile } from 'node:fs/promises'

export const OTLP_SIGNALS = ['logs', 'traces', 'metrics'] as const
export type OtlpSignal = (typeof OTLP_SIGNALS)[number]
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number]

export interface OtlpConfig {
  /** Base URL without a trailing slash; `/v1/<signal>` is appended. */
  endpoint: string
  protocol: OtlpProtocol
  headersFile?: string
  /** name=value pairs from OTEL_EXPORTER_OTLP_HEADERS (the headers file adds to them). */
  headers: Record<string, string>
  tlsCa?: string
  timeoutMs: number
  signals: OtlpSignal[]
  metricsIntervalMs: number
  /** OTEL_RESOURCE_ATTRIBUTES, parsed. */
  resourceAttributes: Record<string, string>
  /** OTEL_SERVICE_NAME, when set (default browser-telemetry). */
  serviceName?: string
}

/** Setting values as src/config/config.ts resolved them: `explicit` is a flag or its twin, undefined when neither is set. */
export interface OtlpSettingSource {
  explicit(flag: string): string | undefined
  default(flag: string): string
  duration(flag: string, text: string): number
  env: NodeJS.ProcessEnv
}

/** Throws an Error naming the flag or variable at fault; undefined when no endpoint is configured. */
export function parseOtlpConfig(src: OtlpSettingSource): OtlpConfig | undefined {
  const env = src.env
  const nonEmpty = (name: string) => (env[name] !== undefined && env[name] !== '' ? env[name] : undefined)
  const endpointText = src.explicit('otlp-endpoint') ?? nonEmpty('OTEL_EXPORTER_OTLP_ENDPOINT')
  if (endpointText === undefined) return undefined
  let url: URL
  try {
    url = new URL(endpointText)
  } catch {
    throw new Error(
      `--otlp-endpoint: expected a base URL like http://127.0.0.1:4318, got ${JSON.stringify(endpointText)}`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`--otlp-endpoint: only http:// and https:// are supported (OTLP/HTTP), got ${url.protocol}`)
  if (url.search || url.hash) throw new Error('--otlp-endpoint: a base URL has no query or fragment')
  const protocol =
    src.explicit('otlp-protocol') ?? nonEmpty('OTEL_EXPORTER_OTLP_PROTOCOL') ?? src.default('otlp-protocol')
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol))
    throw new Error(
      `--otlp-protocol: expected ${OTLP_PROTOCOLS.join(' or ')}, got ${JSON.stringify(protocol)}${protocol === 'grpc' ? " (gRPC is not supported; use the collector's OTLP/HTTP receiver, port 4318)" : ''}`,
    )
  let timeoutMs: number
  const timeoutFlag = src.explicit('otlp-timeout')
  const otelTimeout = nonEmpty('OTEL_EXPORTER_OTLP_TIMEOUT')
  if (timeoutFlag !== undefined) timeoutMs = src.duration('otlp-timeout', timeoutFlag)
  else if (otelTimeout !== undefined) {
    if (!/^\d+$/.test(otelTimeout.trim()))
      throw new Error(`OTEL_EXPORTER_OTLP_TIMEOUT: expected milliseconds, got ${JSON.stringify(otelTimeout)}`)
    timeoutMs = Number(otelTimeout)
  } else timeoutMs = src.duration('otlp-timeout', src.default('otlp-timeout'))
  if (timeoutMs <= 0) throw new Error('--otlp-timeout: must be above 0')
  let metricsIntervalMs: number
  const intervalFlag = src.explicit('otlp-metrics-interval')
  const otelInterval = nonEmpty('OTEL_METRIC_EXPORT_INTERVAL')
  if (intervalFlag !== undefined) metricsIntervalMs = src.duration('otlp-metrics-interval', intervalFlag)
  else if (otelInterval !== undefined) {
    if (!/^\d+$/.test(otelInterval.trim()))
      throw new Error(`OTEL_METRIC_EXPORT_INTERVAL: expected milliseconds, got ${JSON.stringify(otelInterval)}`)
    metricsIntervalMs = Number(otelInterval)
  } else metricsIntervalMs = src.duration('otlp-metrics-interval', src.default('otlp-metrics-interval'))
  if (metricsIntervalMs < 100) throw new Error('--otlp-metrics-interval: at least 100ms')
  const signals: OtlpSignal[] = []
  for (const raw of (src.explicit('otlp-signals') ?? src.default('otlp-signals')).split(',')) {
    const s = raw.trim()
    if (s === '') continue
    if (!(OTLP_SIGNALS as readonly string[]).includes(s))
      throw new Error(`--otlp-signals: unknown signal ${JSON.stringify(s)} (allowed: ${OTLP_SIGNALS.join(', ')})`)
    if (!signals.includes(s as OtlpSignal)) signals.push(s as OtlpSignal)
  }
  if (signals.length === 0) throw new Error('--otlp-signals: at least one of logs, traces, metrics')
  return {
    endpoint: endpointText.replace(/\/+$/, ''),
    protocol: protocol as OtlpProtocol,
    headersFile: src.explicit('otlp-headers-file'),
    headers: parseKeyValueList(nonEmpty('OTEL_EXPORTER_OTLP_HEADERS') ?? '', 'OTEL_EXPORTER_OTLP_HEADERS'),
    tlsCa: src.explicit('otlp-tls-ca') ?? nonEmpty('OTEL_EXPORTER_OTLP_CERTIFICATE'),
    timeoutMs,
    signals,
    metricsIntervalMs,
    resourceAttributes: parseKeyValueList(nonEmpty('OTEL_RESOURCE_ATTRIBUTES') ?? '', 'OTEL_RESOURCE_ATTRIBUTES'),
    serviceName: nonEmpty('OTEL_SERVICE_NAME'),
  }
}

/** The W3C Baggage-like list the OTEL_* variables use: `k1=v1,k2=v2`, values percent-decoded. */
export function parseKeyValueList(text: string, what: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const raw of text.split(',')) {
    const part = raw.trim()
    if (part === '') continue
    const eq = part.indexOf('=')
    if (eq <= 0) throw new Error(`${what}: expected key=value pairs separated by commas, got ${JSON.stringify(part)}`)
    let value = part.slice(eq + 1).trim()
    try {
      value = decodeURIComponent(value)
    } catch {
      throw new Error(`${what}: bad percent-encoding in ${JSON.stringify(part)}`)
    }
    out[part.slice(0, eq).trim()] = value
  }
  return out
}

/** Reads --otlp-headers-file: `Name: value` per line, `#` comments. Throws with the file and line at fault. */
export async function readHeadersFile(path: string): Promise<Record<string, string>> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new Error(`--otlp-headers-file ${path}: ${err.code ?? err.message}`)
  })
  const out: Record<string, string> = {}
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*:\s*(.*)$/.exec(line)
    if (!m) throw new Error(`--otlp-headers-file ${path}:${i + 1}: expected "Name: value"`)
    out[m[1]!.toLowerCase()] = m[2]!
  })
  return out
}
