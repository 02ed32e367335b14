// Uploaded source maps: PUT one (for a script URL, or by the Debug ID it carries), list them,
// delete one. Storage, checks and mapping are src/symbols'; this reads the body under the size cap.
import type { IncomingMessage } from 'node:http'
import { Type } from '@sinclair/typebox'
import { ServiceError } from '../../errors.js'
import type { SourceMaps } from '../../symbols/source-maps.js'
import { ErrorBodySchema } from '../schemas.js'
import { invalidInput, notFound } from '../errors.js'
import type { ApiRouter } from '../route-table.js'

export interface SourceMapRouteDeps {
  sourceMaps: SourceMaps
  /** Largest map body (--sourcemap-max-bytes; 413 above). */
  maxBytes: number
}

const UploadedMapSchema = Type.Object(
  {
    url: Type.Optional(Type.String({ description: 'The script URL the map is for' })),
    debug_id: Type.Optional(Type.String({ description: "The map's Debug ID (scripts carrying it are matched first)" })),
    bytes: Type.Integer({ minimum: 0 }),
    uploaded_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'UploadedSourceMap' },
)
const UrlParam = {
  schema: Type.String({ minLength: 1, maxLength: 8192 }),
  description: 'The script URL exactly as stack frames name it',
}
const DebugIdParam = { schema: Type.String({ minLength: 1, maxLength: 64 }), description: 'A Debug ID (UUID)' }
const ErrorDoc = (description: string) => ({ description, schema: ErrorBodySchema })

export function registerSourceMapRoutes(router: ApiRouter, deps: SourceMapRouteDeps): void {
  router.add({
    method: 'PUT',
    path: '/browsers/:id/sourcemaps',
    operationId: 'uploadBrowserSourceMap',
    summary: 'Upload a source map for a script',
    description:
      'The body is the map (JSON, version 3). It covers the script at `url`; a map carrying a `debugId` may be uploaded without `url` and covers every script whose `//# debugId=` names it (matched first). Replaces the upload for the same URL (or Debug ID). Stack frames read after the upload are mapped with it, stored events included.',
    scope: 'write',
    query: { url: UrlParam },
    requestBody: {
      contentType: 'application/json',
      required: true,
      schema: Type.Object({ version: Type.Literal(3), mappings: Type.String() }, { additionalProperties: true }),
    },
    responses: {
      201: { description: 'Stored', schema: UploadedMapSchema },
      413: ErrorDoc('The map is over --sourcemap-max-bytes, or over the segment or source bounds (payload_too_large)'),
      507: ErrorDoc('The source map store (--sourcemap-store-bytes) is full of uploads (insufficient_storage)'),
    },
    handler: async ctx => {
      const url = ctx.state.query!.url as string | undefined
      if (url !== undefined && !isAbsoluteUrl(url)) throw invalidInput('url', 'expected an absolute URL')
      const body = await readBody(ctx.req, deps.maxBytes)
      if (body.length === 0) throw invalidInput('body', 'the source map JSON is required')
      ctx.status = 201
      ctx.body = await deps.sourceMaps.upload(body, url)
    },
  })

  router.add({
    method: 'GET',
    path: '/browsers/:id/sourcemaps',
    operationId: 'listBrowserSourceMaps',
    summary: 'List the uploaded source maps',
    description:
      'Oldest first. Maps the daemon fetched itself are not listed (a debug bundle carries the ones it used).',
    scope: 'read',
    responses: { 200: { description: 'The uploaded maps', schema: Type.Array(UploadedMapSchema) } },
    handler: async ctx => {
      ctx.body = deps.sourceMaps.list()
    },
  })

  router.add({
    method: 'DELETE',
    path: '/browsers/:id/sourcemaps',
    operationId: 'deleteBrowserSourceMap',
    summary: 'Delete an uploaded source map',
    description: 'By the script URL it was uploaded for, or by its Debug ID (one of the two).',
    scope: 'write',
    query: { url: UrlParam, debug_id: DebugIdParam },
    responses: { 204: { description: 'Deleted' } },
    handler: async ctx => {
      const q = ctx.state.query!
      const url = q.url as string | undefined
      const debugId = q.debug_id as string | undefined
      if ((url === undefined) === (debugId === undefined))
        throw invalidInput('url', 'give either url or debug_id (exactly one)')
      const n = await deps.sourceMaps.remove({ url, debugId })
      if (n === 0)
        throw notFound(`no uploaded source map for ${url !== undefined ? `url ${url}` : `debug_id ${debugId}`}`)
      ctx.status = 204
    },
  })
}

function isAbsoluteUrl(s: string): boolean {
  try {
    return new URL(s).href !== ''
  } catch {
    return false
  }
}

/**
 * The request body, refused with 413 as soon as it passes `max` bytes (Content-Length first): the
 * rest is left to the drain middleware, so the client still reads the answer.
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN)
  if (declared > max) return Promise.reject(tooLarge(declared, max))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = (err?: Error) => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', done)
      req.off('close', onClose)
      if (err) {
        req.pause() // left for the drain: destroying it would reset the connection before the answer
        reject(err)
      } else resolve(Buffer.concat(chunks))
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > max) done(tooLarge(size, max))
      else chunks.push(chunk)
    }
    const onEnd = () => done()
    const onClose = () => {
      if (!req.complete) done(invalidInput('body', 'the request ended before its body did'))
    }
    req.on('data', onData)
    req.once('end', onEnd)
    req.once('error', done)
    req.once('close', onClose)
  })
}

function tooLarge(bytes: number, max: number): ServiceError {
  return new ServiceError(
    413,
    'payload_too_large',
    `the map is at least ${bytes} bytes, over the cap of ${max} (--sourcemap-max-bytes)`,
  )
}
