// One way to read an option, for every command: its flag, else its BROWSER_TELEMETRY_<NAME> twin
// (empty = unset), else its default; and one parser per kind of value, each with one error text.
// An option is an OptionSpec (what --help and the docs show) plus the parser of its value.
import { parseDuration } from '../util/duration.js'
import { parseSize } from '../util/size.js'
import { OptionsError, parseOptions, type OptionSpec, type OptionValue } from '../util/options.js'

export { OptionsError }

/** A flag with its value's parser: `parse(text, flag)` throws OptionsError naming the flag. */
export interface Option<T = unknown> extends OptionSpec {
  parse(text: string, flag: string): T
  /** The part it configures (options.ts, COMPONENTS); the docs list the serve flags under it. */
  component?: string
}

export type OptionTable = Record<string, Option>

/** The environment twin of a flag: `--retention-age` -> BROWSER_TELEMETRY_RETENTION_AGE. */
export function envName(flag: string): string {
  return 'BROWSER_TELEMETRY_' + flag.toUpperCase().replace(/-/g, '_')
}

type Described = Omit<OptionSpec, 'type' | 'multiple'>

/** Free text. */
export function text(spec: Described): Option<string> {
  return { type: 'string', ...spec, parse: v => v }
}

/** Text that must match `re`; `rule` says what is allowed. */
export function matching(spec: Described, re: RegExp, rule: string): Option<string> {
  return {
    type: 'string',
    ...spec,
    parse: (v, flag) => {
      if (!re.test(v)) throw new OptionsError(`--${flag}: ${rule}, got ${JSON.stringify(v)}`)
      return v
    },
  }
}

/** Text whose parser is the caller's (its errors are prefixed with the flag). */
export function parsed<T>(spec: Described, parse: (v: string) => T): Option<T> {
  return {
    type: 'string',
    ...spec,
    parse: (v, flag) => {
      try {
        return parse(v)
      } catch (err) {
        if (err instanceof OptionsError) throw err
        throw new OptionsError(`--${flag}: ${(err as Error).message}`)
      }
    },
  }
}

/** On when given as a flag, or when its env twin is 1, true or yes. */
export function flag(spec: Described): Option<boolean> {
  return { type: 'boolean', ...spec, parse: v => v === '1' || v === 'true' || v === 'yes' }
}

/** The non-empty, trimmed parts of a text split at `separators`. */
function parts(v: string, separators: RegExp): string[] {
  return v
    .split(separators)
    .map(s => s.trim())
    .filter(Boolean)
}

/** Repeatable; its env twin holds the values separated by commas, colons or newlines. */
export function list(spec: Described): Option<string[]> {
  return { type: 'string', multiple: true, ...spec, parse: v => parts(v, /[,:\n]/) }
}

/** Comma-separated names (empty entries ignored). */
export function names(spec: Described): Option<string[]> {
  return { type: 'string', ...spec, parse: v => parts(v, /,/) }
}

/** A whole number >= min. */
export function int(spec: Described, min: number): Option<number> {
  return {
    type: 'string',
    ...spec,
    parse: (v, flag) => {
      if (!/^\d+$/.test(v.trim()) || Number(v) < min)
        throw new OptionsError(`--${flag}: expected an integer >= ${min}, got ${JSON.stringify(v)}`)
      return Number(v)
    },
  }
}

/** A duration like 250ms, 2s, 5m, in milliseconds. */
export function duration(spec: Described): Option<number> {
  return { type: 'string', ...spec, parse: parseDurationText }
}

export function parseDurationText(v: string, flag: string): number {
  const ms = parseDuration(v)
  if (ms === undefined)
    throw new OptionsError(`--${flag}: expected a duration like 250ms, 2s, 5m, got ${JSON.stringify(v)}`)
  return ms
}

/** A size like 65536, 64KiB, 1MiB, in bytes: at least `min`; with `off`, any spelling of zero is 0 (off). */
export function size(spec: Described, opts: { min?: number; off?: boolean } = {}): Option<number> {
  return {
    type: 'string',
    ...spec,
    parse: (v, flag) => {
      const n = parseSize(v)
      if (opts.off && n === 0) return 0
      if (n === undefined || n <= 0)
        throw new OptionsError(`--${flag}: expected a size like 65536, 64KiB, 1MiB, got ${JSON.stringify(v)}`)
      if (opts.min !== undefined && n < opts.min)
        throw new OptionsError(`--${flag}: at least ${opts.min} bytes, got ${JSON.stringify(v)}`)
      return n
    },
  }
}

export interface HostPort {
  host: string
  port: number
}

export function parseHostPort(v: string, flag: string): HostPort {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(v.trim())
  const port = m ? Number(m[3]) : NaN
  if (!m || port > 65535) throw new OptionsError(`--${flag}: expected host:port, got ${JSON.stringify(v)}`)
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port }
}

/** host:port (an empty host is 127.0.0.1). */
export function hostPort(spec: Described): Option<HostPort> {
  return { type: 'string', ...spec, parse: parseHostPort }
}

/**
 * The table's options named, in that order, each showing its env twin (an option with `env: ''`
 * has none), with a command's own wording where it differs.
 */
export function pick<T extends OptionTable, K extends keyof T & string>(
  table: T,
  flags: readonly K[],
  overrides: Partial<Record<K, Partial<Described>>> = {},
): { [P in K]: T[P] } {
  return Object.fromEntries(
    flags.map(f => [f, { ...table[f], env: table[f]!.env ?? envName(f), ...overrides[f] }]),
  ) as { [P in K]: T[P] }
}

/** A command's options read once: flag, else env twin, else default; parsed by the option's kind. */
export class ResolvedOptions<T extends OptionTable> {
  constructor(
    private readonly table: T,
    readonly values: Record<string, OptionValue>,
    readonly positionals: string[],
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** The text given for the flag or its env twin (not the default); lists take their last flag. */
  given(flag: keyof T & string): string | undefined {
    const v = this.values[flag]
    if (typeof v === 'string') return v
    if (Array.isArray(v) && v.length > 0) return v.at(-1)
    if (v === true) return 'true'
    const name = this.table[flag]!.env ?? envName(flag)
    const e = name === '' ? undefined : this.env[name]
    return e !== undefined && e !== '' ? e : undefined
  }

  /** The text in effect: given, else the default. */
  text(flag: keyof T & string): string | undefined {
    return this.given(flag) ?? this.table[flag]!.default
  }

  /** The parsed value in effect (undefined when neither given nor defaulted; a flag is then false). */
  get<K extends keyof T & string>(flag: K): ReturnType<T[K]['parse']> | undefined {
    const option = this.table[flag]!
    const v = this.values[flag]
    // Repeated flags win over the env twin as a whole list.
    if (option.multiple && Array.isArray(v) && v.length > 0) return v as ReturnType<T[K]['parse']>
    const text = this.text(flag)
    if (text === undefined) return (option.type === 'boolean' ? false : undefined) as ReturnType<T[K]['parse']>
    return option.parse(text, flag) as ReturnType<T[K]['parse']>
  }

  /** The value of an option that has a default (or is a flag or a list): never undefined. */
  value<K extends keyof T & string>(flag: K): ReturnType<T[K]['parse']> {
    const option = this.table[flag]!
    const v = this.get(flag)
    if (v === undefined) return (option.multiple ? [] : v) as ReturnType<T[K]['parse']>
    return v
  }
}

/** Runs f; an OptionsError it throws becomes the caller's own error (ConfigError, a usage error). */
export function mapOptionsError<T>(f: () => T, toError: (message: string) => Error): T {
  try {
    return f()
  } catch (err) {
    if (err instanceof OptionsError) throw toError(err.message)
    throw err
  }
}

/** What reads a command's options: the resolved options, or a caller's wrapper of them. */
export type OptionReader<T extends OptionTable> = Pick<ResolvedOptions<T>, 'get' | 'value'>

/** Parses argv against the table (strict) and resolves each option from its flag, env twin and default. */
export function resolveOptions<T extends OptionTable>(
  table: T,
  argv: string[],
  env: NodeJS.ProcessEnv,
  allowPositionals = false,
): ResolvedOptions<T> {
  const { values, positionals } = parseOptions(table, argv, allowPositionals)
  return new ResolvedOptions(table, values, positionals, env)
}
