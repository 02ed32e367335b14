// A streamed zip export (the debug bundle, the Playwright trace) as the answer to a request: the
// download headers, then the zip piped to the socket as the client reads it. pipeline() destroys
// the socket when the build fails (a broken download, never a short valid zip) and destroys the
// build's output when the client goes away (which stops the build).
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Logger } from '../log.js'
import type { ApiContext } from './route-table.js'

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
