// Argument handling shared by the client commands: the one option parser (src/util/options.ts) plus
// the connection options (--url, --token, --browser-id and their BROWSER_TELEMETRY_* twins) and
// generated --help text.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { optionLines, OptionsError, parseOptions, type OptionSpec, type OptionValue } from '../util/options.js'
import { usageError } from './io.js'

export type { OptionSpec }

export interface CommandSpec {
  /** e.g. "read" or "extension upload". */
  name: string
  summary: string
  /** Positional syntax for the usage line, e.g. "<zip> <dest>". */
  positionals?: string
  /** How many positionals are required / allowed. */
  minPositionals?: number
  maxPositionals?: number
  options: Record<string, OptionSpec>
  /** Lines after the options (examples, notes). */
  notes?: string[]
  /** False for commands that never talk to a browser route (default true). */
  browser?: boolean
  /** False for commands that do not talk to the daemon API (no --url/--token/--browser-id; e.g. fleet). */
  connection?: boolean
}

export const DEFAULT_URL = 'http://127.0.0.1:10222'

export const CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  url: { type: 'string', arg: 'URL', help: `Daemon API base URL (env BROWSER_TELEMETRY_URL; default ${DEFAULT_URL})` },
  token: {
    type: 'string',
    arg: 'TOKEN',
    help: 'Bearer token (env BROWSER_TELEMETRY_TOKEN; default: <data dir>/token when readable)',
  },
  'browser-id': {
    type: 'string',
    arg: 'ID',
    help: 'Browser session id (env BROWSER_TELEMETRY_BROWSER_ID; default: asked from the daemon)',
  },
  help: { type: 'boolean', short: 'h', help: 'Show this help' },
}

export interface Parsed {
  values: Record<string, OptionValue>
  positionals: string[]
  help: boolean
}

/** The command's own options plus the connection options it takes (always --help). */
function optionsOf(spec: CommandSpec): Record<string, OptionSpec> {
  return spec.connection === false
    ? { ...spec.options, help: CONNECTION_OPTIONS.help! }
    : { ...spec.options, ...CONNECTION_OPTIONS }
}

export function parseCommand(spec: CommandSpec, argv: string[]): Parsed {
  let parsed: { values: Parsed['values']; positionals: string[] }
  try {
    parsed = parseOptions(optionsOf(spec), argv, true)
  } catch (err) {
    if (err instanceof OptionsError) throw usageError(`${err.message} (see --help)`)
    throw err
  }
  const help = parsed.values.help === true
  if (!help) {
    const n = parsed.positionals.length
    if (n < (spec.minPositionals ?? 0)) throw usageError(`expected ${spec.positionals ?? 'arguments'} (see --help)`)
    if (n > (spec.maxPositionals ?? 0))
      throw usageError(
        `unexpected argument ${JSON.stringify(parsed.positionals[spec.maxPositionals ?? 0])} (see --help)`,
      )
  }
  return { values: parsed.values, positionals: parsed.positionals, help }
}

export function helpText(spec: CommandSpec): string {
  return [
    `Usage: browser-telemetry ${spec.name} [options]${spec.positionals ? ` ${spec.positionals}` : ''}`,
    '',
    spec.summary,
    '',
    'Options:',
    ...optionLines(optionsOf(spec)),
    ...(spec.notes && spec.notes.length > 0 ? ['', ...spec.notes] : []),
    '',
  ].join('\n')
}

/** Values of a repeatable, comma-joinable option: `--category a,b --category c` -> [a, b, c]. */
export function listOption(v: OptionValue): string[] {
  if (v === undefined || typeof v === 'boolean') return []
  return (Array.isArray(v) ? v : [v])
    .flatMap(s => s.split(','))
    .map(s => s.trim())
    .filter(Boolean)
}

export function stringOption(v: OptionValue): string | undefined {
  return Array.isArray(v) ? v.at(-1) : typeof v === 'string' ? v : undefined
}

/** A positive integer option, or undefined; anything else is a usage error naming the flag. */
export function intOption(v: OptionValue, flag: string, min = 1): number | undefined {
  const s = stringOption(v)
  if (s === undefined) return undefined
  if (!/^\d+$/.test(s) || Number(s) < min)
    throw usageError(`--${flag}: expected an integer >= ${min}, got ${JSON.stringify(s)}`)
  return Number(s)
}

export interface Connection {
  url: string
  token?: string
  browserId?: string
}

/** Flag, then env twin; the token finally falls back to the daemon's generated token file. */
export function connectionOf(values: Parsed['values'], env: NodeJS.ProcessEnv): Connection {
  const pick = (flag: string, name: string) => stringOption(values[flag]) ?? (env[name] !== '' ? env[name] : undefined)
  const url = (pick('url', 'BROWSER_TELEMETRY_URL') ?? DEFAULT_URL).replace(/\/+$/, '')
  if (!/^https?:\/\/[^/]/.test(url)) throw usageError(`--url: expected http://host:port, got ${JSON.stringify(url)}`)
  const token = pick('token', 'BROWSER_TELEMETRY_TOKEN') ?? generatedToken(env)
  const browserId = pick('browser-id', 'BROWSER_TELEMETRY_BROWSER_ID')
  return { url, token, browserId }
}

/** The token a local daemon generated (`serve` without --token keeps it in <data dir>/token). */
function generatedToken(env: NodeJS.ProcessEnv): string | undefined {
  const dir = env.BROWSER_TELEMETRY_DATA_DIR || './data'
  try {
    const t = readFileSync(join(dir, 'token'), 'utf8').trim()
    return t === '' ? undefined : t
  } catch {
    return undefined
  }
}
