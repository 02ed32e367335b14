// The one command-line option parser: every command's flags are OptionSpec tables (picked from the
// one option table, src/config/options.ts), parsed with node:util parseArgs through parseOptions
// (src/config/resolve.ts, src/cli/args.ts) and printed with optionLines (src/cli/args.ts). Callers
// turn OptionsError into their own error (ConfigError for serve, a usage error for client commands).
import { parseArgs } from 'node:util'

export interface OptionSpec {
  type: 'string' | 'boolean'
  multiple?: boolean
  short?: string
  /** Placeholder in help, e.g. "DURATION". */
  arg?: string
  help: string
  /** Shown in help; applied by the caller (serve: flag, then env twin, then this). */
  default?: string
  /** Environment variable read when the flag is absent, shown in help. */
  env?: string
}

export type OptionValue = string | boolean | string[] | undefined
export interface ParsedOptions {
  values: Record<string, OptionValue>
  positionals: string[]
}

export class OptionsError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'OptionsError'
  }
}

/** Strict parse: unknown flags, missing values and (unless allowed) positionals are OptionsErrors. */
export function parseOptions(
  specs: Record<string, OptionSpec>,
  argv: string[],
  allowPositionals = false,
): ParsedOptions {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {}
  for (const [name, o] of Object.entries(specs)) {
    options[name] = { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) }
  }
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals, strict: true })
    return { values: values as Record<string, OptionValue>, positionals }
  } catch (err) {
    throw new OptionsError((err as Error).message.split('\n')[0]!)
  }
}

/** Help rows, aligned: `  -h, --flag ARG  help (default X) [ENV] (repeatable)`. */
export function optionLines(specs: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(specs).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`
    const extra = `${o.default !== undefined ? ` (default ${o.default})` : ''}${o.multiple ? ' (repeatable)' : ''}${o.env ? ` [${o.env}]` : ''}`
    return [flag, o.help + extra] as const
  })
  const width = Math.max(...rows.map(([f]) => f.length)) + 2
  return rows.map(([f, h]) => `  ${f.padEnd(width)}${h}`)
}
