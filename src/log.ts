// Structured JSON logging (pino) with secrets redacted. One root logger; modules take a child.
import { pino, type Logger } from 'pino'
import { Redactor } from './events/redact.js'

export type { Logger }

/** The levels --log-level takes, most verbose first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const

// Fixed paths first (cheap, exact); the formatter then masks header maps, URL fields and token-ish
// keys at any depth with the same Redactor the pipeline uses.
const REDACT = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'cookie',
  '*.cookie',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'headers["proxy-authorization"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["set-cookie"]',
  '*.headers["proxy-authorization"]',
  'req.headers.authorization',
  'req.headers.cookie',
]

export function createLogger(
  level: string = process.env.BROWSER_TELEMETRY_LOG_LEVEL ?? 'info',
  redactor = new Redactor(),
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    {
      level,
      base: { service: 'browser-telemetry' },
      redact: { paths: REDACT, censor: '[redacted]' },
      formatters: { log: obj => redactor.logObject(obj) },
    },
    destination,
  )
}

/** A logger that writes nothing: the default for library use and tests. */
export const silentLogger: Logger = pino({ level: 'silent' })
