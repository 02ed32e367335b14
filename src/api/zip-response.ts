// A streamed zip export (the debug bundle, the Playwright trace) as the answer to a request: the
// download headers, then the zip piped to the socket as the client reads it. pipeline() destroys
// the socket when the build fails (a broken download, never a short valid zip) and destroys the
// build's output when the client goes away (which stops the build).
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Logger } from '../log.js'
import type { ApiContext } from './route-table.js'
import { Slots } from '../util/slots.js'
import { ApiError } from './errors.js'

/**
 * The bound on exports built at once, shared by trace.zip and the bundle: each build reads the log,
 * encodes and compresses for as long as its reader reads, so a few slow readers would otherwise
 * hold as many builds as they open. Past it, 429 before any work starts.
 */
export class ExportSlots extends Slots {
  constructor(max: number) {
    // 429 too_many_requests with Retry-After: 5.
    super(
      max,
      n =>
        new ApiError(
          429,
          'too_many_requests',
          `at most ${n} trace and bundle exports are built at once (--export-max-concurrent); retry when one ends`,
          undefined,
          { 'Retry-After': '5' },
        ),
    )
  }
}

/** Takes a slot, starts the build and sends it; the slot is free again once the export ended or failed to start. */
export function sendZipInSlot(
  ctx: ApiContext,
  slots: ExportSlots,
  start: () => ZipBuild,
  fileName: string,
  logger: Logger,
  what: string,
): Promise<boolean> {
  const release = slots.take()
  let build: ZipBuild
  try {
    build = start()
  } catch (err) {
    release()
    throw err
  }
  return sendZip(ctx, build, fileName, logger, what).finally(release)
}

export interface ZipBuild {
  readonly output: Readable
  readonly done: Promise<unknown>
  readonly stats: { bytesOut: number }
}

/** Answers with the zip; resolves (never rejects) with whether it was sent whole, once it ended. */
export function sendZip(
  ctx: ApiContext,
  build: ZipBuild,
  fileName: string,
  logger: Logger,
  what: string,
): Promise<boolean> {
  ctx.status = 200
  ctx.set('Content-Type', 'application/zip')
  ctx.set('Content-Disposition', `attachment; filename="${fileName}"`)
  ctx.set('Cache-Control', 'no-store')
  ctx.set('X-Content-Type-Options', 'nosniff')
  ctx.respond = false
  const res = ctx.res
  const requestId = ctx.state.requestId
  return Promise.allSettled([pipeline(build.output, res), build.done]).then(([piped, built]) => {
    if (piped.status === 'fulfilled' && built.status === 'fulfilled') return true
    if (!res.destroyed) res.destroy()
    const err = built.status === 'rejected' ? built.reason : (piped as PromiseRejectedResult).reason
    logger.warn(
      { request_id: requestId, err: (err as Error)?.message, bytes: build.stats.bytesOut },
      `${what} not completed`,
    )
    return false
  })
}
