// Argument handling shared by the client commands: the one option parser (src/util/options.ts) plus
// the connection options (--url, --token, --browser-id and their BROWSER_TELEMETRY_* twins) and
// generated --help text.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { optionLines, OptionsError, parseOptions, type OptionSpec, type OptionValue } from '../util/options.js'
import { CONNECTION_OPTIONS, OPTIONS } from '../config/options.js'
import { mapOptionsError, ResolvedOptions, type OptionTable } from '../config/resolve.js'
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
  /**
   * The daemon's address under another flag, for a command whose own --url means something else
   * (`sourcemap`: the script's URL). Its env twin stays BROWSER_TELEMETRY_URL.
   */
  apiUrlFlag?: string
}

export { CONNECTION_OPTIONS }

export interface Parsed {
  values: Record<string, OptionValue>
  positionals: string[]
  help: boolean
}

/** The command's own options plus the connection options it takes (always --help). */
function optionsOf(spec: CommandSpec): Record<string, OptionSpec> {
  if (spec.connection === false) return { ...spec.options, help: CONNECTION_OPTIONS.help }
  if (spec.apiUrlFlag === undefined) return { ...spec.options, ...CONNECTION_OPTIONS }
  const { url, ...rest } = CONNECTION_OPTIONS
  return { ...spec.options, [spec.apiUrlFlag]: url, ...rest }
}

/** The parsed values with the daemon's address under `url`, where connectionOf reads it. */
export function connectionValues(spec: CommandSpec, values: Parsed['values']): Parsed['values'] {
  return spec.apiUrlFlag === undefined ? values : { ...values, url: values[spec.apiUrlFlag] }
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

/** A command's parsed values read through the option table: flag, else env twin, else default. */
export function resolved<T extends OptionTable>(table: T, values: Parsed['values'], env: NodeJS.ProcessEnv) {
  const o = new ResolvedOptions(table, values, [], env)
  return {
    get: <K extends keyof T & string>(flag: K) => asUsageError(() => o.get(flag)),
    value: <K extends keyof T & string>(flag: K) => asUsageError(() => o.value(flag)),
  }
}

function asUsageError<T>(f: () => T): T {
  return mapOptionsError(f, usageError)
}

/** Flag, then env twin; the token finally falls back to the daemon's generated token file. */
export function connectionOf(values: Parsed['values'], env: NodeJS.ProcessEnv): Connection {
  const o = resolved(CONNECTION_OPTIONS, values, env)
  return { url: o.value('url'), token: o.get('token') ?? generatedToken(env), browserId: o.get('browser-id') }
}

/** The token a local daemon generated (`serve` without --token keeps it in <data dir>/token). */
function generatedToken(env: NodeJS.ProcessEnv): string | undefined {
  const dir = env.BROWSER_TELEMETRY_DATA_DIR || OPTIONS['data-dir'].default!
  try {
    const t = readFileSync(join(dir, 'token'), 'utf8').trim()
    return t === '' ? undefined : t
  } catch {
    return undefined
  }
}
