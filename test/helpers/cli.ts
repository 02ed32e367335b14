// Runs one client command in-process with captured output.
import type { ClientCommand, CliIO } from '../../src/cli/index.js'

export async function runClient(
  command: ClientCommand,
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: CliIO = {
    stdout: {
      write: c => {
        stdout += typeof c === 'string' ? c : Buffer.from(c).toString('latin1')
        return true
      },
    },
    stderr: {
      write: c => {
        stderr += typeof c === 'string' ? c : Buffer.from(c).toString()
        return true
      },
    },
    env,
  }
  const code = await command.run(argv, io)
  return { code, stdout, stderr }
}
