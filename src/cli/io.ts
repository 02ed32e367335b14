// What a client command touches of the outside world, injectable so tests capture output and stop
// long-running commands (tail) with a signal instead of a process-wide SIGINT.
import type { Writable } from 'node:stream'

export interface OutStream {
  write(chunk: string | Uint8Array): boolean
  isTTY?: boolean
  once?: Writable['once']
}

export interface CliIO {
  stdout: OutStream
  stderr: OutStream
  env: NodeJS.ProcessEnv
  /** Aborting it ends a following command (tail) cleanly with exit code 0. */
  signal?: AbortSignal
}

let epipeHandled = false

export function processIO(): CliIO {
  if (!epipeHandled) {
    epipeHandled = true
    // `browser-telemetry read | head`: the reader went away; that is success, not a crash with a stack.
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0)
      throw err
    })
  }
  return { stdout: process.stdout, stderr: process.stderr, env: process.env }
}

/** A user-facing failure: printed as one line `browser-telemetry <cmd>: <message>`, exit code `code`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code = 1,
  ) {
    super(message)
    this.name = 'CliError'
  }
}

/** Usage errors exit 2 (like most Unix tools); the message says what to fix. */
export const usageError = (message: string) => new CliError(message, 2)

/** Writes honouring backpressure, so `read | head` and slow terminals do not buffer the whole window. */
export async function writeOut(out: OutStream, text: string | Uint8Array): Promise<void> {
  if (!out.write(text) && out.once) await new Promise<void>(r => out.once!('drain', () => r()))
}

/** Colour only for a terminal, unless NO_COLOR is set or FORCE_COLOR asks for it (https://no-color.org). */
export function useColor(out: OutStream, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true
  return out.isTTY === true
}
