// Structured JSON logging (pino) with secrets redacted. One root logger; modules take a child.
import { pino, type Logger } from 'pino'

export type { Logger }

const REDACT = [
  'token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'headers.cookie',
  '*.headers.authorization', '*.headers.cookie', 'req.headers.authorization',
]

export function createLogger(level: string = process.env.BROWSER_TELEMETRY_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { service: 'browser-telemetry' }, redact: { paths: REDACT, censor: '[REDACTED]' } })
}

/** A logger that writes nothing: the default for library use and tests. */
export const silentLogger: Logger = pino({ level: 'silent' })
