// POST /browsers/{id}/fs/upload_zip: multipart (zip_file + dest_path, any order) spooled to disk,
// then validated and extracted all-or-nothing under one of the upload roots (src/uploads/).
import { Type } from '@sinclair/typebox'
import type { ApiRouter } from '../route-table.js'
import { badRequest } from '../../uploads/errors.js'
import { extractZip } from '../../uploads/extract-zip.js'
import { withSpooledUpload } from '../../uploads/multipart-spool.js'
import { checkDestSyntax, resolveUploadDestination } from '../../uploads/upload-roots.js'
import type { ZipLimits } from '../../uploads/zip-entries.js'
import type { UploadSlots } from '../../uploads/upload-slots.js'

export interface UploadRouteDeps {
  /** Directories upload_zip may write under (absolute; prepareUploadRoots gives the defaults). */
  uploadRoots: readonly string[]
  /** Never written, even under a root (the data dir, token files); a root inside one stays writable. */
  protectedPaths?: readonly string[]
  /** Where uploads are spooled while they stream in (e.g. `<dataDir>/tmp`; sweep it at startup with sweepSpool). */
  spoolDir: string
  /** Largest accepted zip_file (413 above). */
  uploadMaxBytes: number
  zipLimits: ZipLimits
  /** Cap on uploads in progress, shared with the extension upload (429 above); none when absent. */
  slots?: UploadSlots
}

/** Runs extractions one at a time: they are disk-bound, and it keeps destination checks and moves from interleaving. */
function serialQueue() {
  let tail: Promise<unknown> = Promise.resolve()
  return <T>(job: () => Promise<T>): Promise<T> => {
    const run = tail.then(job, job)
    tail = run.catch(() => undefined)
    return run
  }
}

const ErrorDoc = (description: string) => ({
  description,
  schema: Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: true }),
})

export function registerUploadRoutes(router: ApiRouter, deps: UploadRouteDeps): void {
  const serial = serialQueue()
  router.add({
    method: 'POST',
    path: '/browsers/:id/fs/upload_zip',
    operationId: 'uploadZip',
    summary: 'Upload a zip archive and extract it at dest_path',
    description:
      'multipart/form-data with a file part `zip_file` and a text part `dest_path` (absolute, inside an upload root; 403 naming the roots otherwise), in any order. ' +
      'Hostile or corrupt archives are refused with 400 invalid_zip / unsafe_entry before anything is written; extraction is all-or-nothing. ' +
      'Existing files are replaced, directories merged, permission bits kept without setuid/setgid/sticky. Success is 201 with an empty body.',
    scope: 'write',
    requestBody: {
      contentType: 'multipart/form-data',
      required: true,
      schema: Type.Object({ zip_file: Type.String({ format: 'binary' }), dest_path: Type.String() }),
    },
    responses: {
      201: { description: 'Extracted (empty body)' },
      413: ErrorDoc('zip_file is larger than the upload limit (payload_too_large)'),
      429: ErrorDoc('too many uploads in progress (too_many_requests, with Retry-After)'),
      507: ErrorDoc(
        'the destination filesystem cannot hold the archive, or filled up while extracting; nothing was changed (insufficient_storage)',
      ),
    },
    handler: async ctx => {
      await withSpooledUpload(
        ctx.req,
        {
          fileField: 'zip_file',
          textFields: ['dest_path'],
          maxFileBytes: deps.uploadMaxBytes,
          dir: deps.spoolDir,
          onField: (name, value) => {
            if (name === 'dest_path') checkDestSyntax(value)
          },
        },
        deps.slots,
        async upload => {
          const destPath = upload.fields.get('dest_path')
          if (destPath === undefined)
            throw badRequest('dest_path', 'missing (a text part with an absolute path is required)')
          if (!upload.file) throw badRequest('zip_file', 'missing (a file part with the zip archive is required)')
          const archive = upload.file.path
          await serial(async () => {
            const dest = await resolveUploadDestination(destPath, deps.uploadRoots, deps.protectedPaths)
            await extractZip(archive, dest.path, deps.zipLimits, { markerDir: deps.spoolDir })
          })
        },
      )
      // Koa turns `body = null` into 204; setting the status afterwards keeps the explicit empty body.
      ctx.body = null
      ctx.status = 201
    },
  })
}
