// Argument handling shared by the client commands: node:util parseArgs plus the connection options
// (--url, --token, --browser-id and their BROWSER_TELEMETRY_* twins) and generated --help text.
import { parseArgs } from 'node:util'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { usageError } from './io.js'

export interface OptionSpec {
  type: 'string' | 'boolean'
  multiple?: boolean
  short?: string
  /** Placeholder in help, e.g. "DURATION". */
  arg?: string
  help: string
}

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
  'url': { type: 'string', arg: 'URL', help: `Daemon API base URL (env BROWSER_TELEMETRY_URL; default ${DEFAULT_URL})` },
  'token': { type: 'string', arg: 'TOKEN', help: 'Bearer token (env BROWSER_TELEMETRY_TOKEN; default: <data dir>/token when readable)' },
  'browser-id': { type: 'string', arg: 'ID', help: 'Browser session id (env BROWSER_TELEMETRY_BROWSER_ID; default: asked from the daemon)' },
  'help': { type: 'boolean', short: 'h', help: 'Show this help' },
}

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>
  positionals: string[]
  help: boolean
}

/** The command's own options plus the connection options it takes (always --help). */
function optionsOf(spec: CommandSpec): Record<string, OptionSpec> {
  return spec.connection === false ? { ...spec.options, help: CONNECTION_OPTIONS.help! } : { ...spec.options, ...CONNECTION_OPTIONS }
}

export function parseCommand(spec: CommandSpec, argv: string[]): Parsed {
  const all = optionsOf(spec)
  const options = Object.fromEntries(Object.entries(all).map(([k, o]) => [k, {
    type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}),
  }]))
  let parsed: { values: Parsed['values']; positionals: string[] }
  try {
    parsed = parseArgs({ args: argv, options: options as never, allowPositionals: true, strict: true }) as typeof parsed
  } catch (err) {
    throw usageError(`${(err as Error).message.split('\n')[0]} (see --help)`)
  }
  const help = parsed.values.help === true
  if (!help) {
    const n = parsed.positionals.length
    if (n < (spec.minPositionals ?? 0)) throw usageError(`expected ${spec.positionals ?? 'arguments'} (see --help)`)
    if (n > (spec.maxPositionals ?? 0)) throw usageError(`unexpected argument ${JSON.stringify(parsed.positionals[spec.maxPositionals ?? 0])} (see --help)`)
  }
  return { values: parsed.values, positionals: parsed.positionals, help }
}

export function helpText(spec: CommandSpec): string {
  const all = optionsOf(spec)
  const rows = Object.entries(all).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`
    return [flag, o.help + (o.multiple ? ' (repeatable)' : '')] as const
  })
  const width = Math.max(...rows.map(([f]) => f.length)) + 2
  return [
    `Usage: browser-telemetry ${spec.name} [options]${spec.positionals ? ` ${spec.positionals}` : ''}`,
    '',
    spec.summary,
    '',
    'Options:',
    ...rows.map(([f, h]) => `  ${f.padEnd(width)}${h}`),
    ...(spec.notes && spec.notes.length > 0 ? ['', ...spec.notes] : []),
    '',
  ].join('\n')
}

/** Values of a repeatable, comma-joinable option: `--category a,b --category c` -> [a, b, c]. */
export function listOption(v: string | boolean | string[] | undefined): string[] {
  if (v === undefined || typeof v === 'boolean') return []
  return (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean)
}

export function stringOption(v: string | boolean | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.at(-1) : typeof v === 'string' ? v : undefined
}

/** A positive integer option, or undefined; anything else is a usage error naming the flag. */
export function intOption(v: string | boolean | string[] | undefined, flag: string, min = 1): number | undefined {
  const s = stringOption(v)
  if (s === undefined) return undefined
  if (!/^\d+$/.test(s) || Number(s) < min) throw usageError(`--${flag}: expected an integer >= ${min}, got ${JSON.stringify(s)}`)
  return Number(s)
}

export interface Connection { url: string; token?: string; browserId?: string }

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
