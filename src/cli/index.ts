// The client commands of `browser-telemetry` (everything but `serve` and `fleet serve`), as a table
// src/cli.ts mounts.
import type { ClientCommand } from './command.js'
import { bundleCommand } from './bundle.js'
import { viewCommand } from './view.js'
import { extensionCommand } from './extension.js'
import { fleetCommand } from './fleet.js'
import { digestCommand } from './digest.js'
import { harCommand } from './har.js'
import { openCommand } from './open.js'
import { perfTraceCommand } from './perf-trace.js'
import { readCommand } from './read.js'
import { recordingCommand } from './recording.js'
import { sourcemapCommand } from './sourcemap.js'
import { tailCommand } from './tail.js'
import { traceCommand } from './trace.js'
import { uploadZipCommand } from './upload-zip.js'
import { waitReadyCommand } from './wait-ready.js'

export type { ClientCommand } from './command.js'
export type { CliIO } from './io.js'

export const clientCommands: Record<string, ClientCommand> = {
  tail: tailCommand,
  read: readCommand,
  digest: digestCommand,
  har: harCommand,
  bundle: bundleCommand,
  trace: traceCommand,
  recording: recordingCommand,
  'upload-zip': uploadZipCommand,
  extension: extensionCommand,
  sourcemap: sourcemapCommand,
  'perf-trace': perfTraceCommand,
  open: openCommand,
  view: viewCommand,
  fleet: fleetCommand,
  'wait-ready': waitReadyCommand,
}
